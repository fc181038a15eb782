"""Queries: of one point, as SciPy takes them (``per_point``: a scalar for a 1-D
interpolant, one point of ``d`` coordinates for the others, the result a scalar too; what
``jax.vmap`` of a function of one query point hands the interpolant), and NaN queries kept
out of the other queries' derivatives (``isolating_nan_queries``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxbridge.internal import parse_signature

from .._shared._rules import nan_where

C = TypeVar("C", bound=type)


def per_point(call: Callable[[Any], Any], query: Any, point_rank: int) -> Any:
    """``call(query)``; for a ``query`` of one point (rank ``point_rank``: 0 for 1-D
    interpolants, 1 for the others), a batch of one point whose axis the result drops."""
    if np.ndim(query) != point_rank:
        return call(query)
    return call(jnp.expand_dims(jnp.asarray(query), 0))[..., 0]


def isolating_nan_queries(rank: int, safe: Callable[[Any, tuple], Any]) -> Callable[[C], C]:
    """Class decorator for an interpolant whose residuals start ``(sites, values, queries,
    out)`` and whose rules return one (co)tangent per argument in that order: a NaN query
    (``rank`` 0: a number; 1: a point, NaN in any coordinate) gets NaN derivatives, and
    no other query's derivatives see it. SciPy's value there is NaN whatever the data.

    The rules then run with that query moved to ``safe(adapter, res)`` (a point inside the
    data, broadcastable against the queries), its value taken as 0 and its (co)tangent as
    0: before, its NaN partials times a zero cotangent were NaN in every other query's
    derivative in the sites (and in a neighbouring query's, for PCHIP and the grid), and
    reverse mode dropped it as outside the data (0) where forward mode gave NaN. Then the
    NaN query's own derivatives are NaN: its tangent for any tangent given, and in reverse
    mode, where its cotangent is not 0, its query's cotangent and every site's and
    value's (of its batch element)."""

    def decorate(cls: C) -> C:
        pullback, pushforward = cls.pullback, cls.pushforward  # type: ignore[attr-defined]

        def moved(adapter, res):
            queries = res[2]
            nan = jnp.isnan(queries)
            nan = nan.any(-1) if rank else nan
            where = nan[..., None] if rank else nan
            # a constant: a path from the sites to the queries made the second derivatives
            # in the sites differentiate the rules in the queries too (periodic splines
            # then evaluated a cotangent as data, which SciPy refused)
            inside = jax.lax.stop_gradient(safe(adapter, res)).astype(queries.dtype)
            queries = jnp.where(where, inside, queries)
            out = jnp.where(nan, 0, res[3])
            return nan, (*res[:2], queries, out, *res[4:])

        @functools.wraps(pullback)
        def isolated_pullback(self, res, g, **told):
            if not jnp.issubdtype(res[2].dtype, jnp.floating):
                return pullback(self, res, g, **told)
            nan, res = moved(self, res)
            cotangents = list(pullback(self, res, jnp.where(nan, 0, g), **told))
            hit = nan & (g != 0)  # (batch, m)
            cores = [len(core) for core in parse_signature(type(self).signature).inputs]
            batch = hit.ndim - 1
            for i, ct in enumerate(cotangents):
                if ct is not None:  # the sites and values of its batch element, its query
                    mask = hit if i == 2 else hit.any(-1)
                    cotangents[i] = nan_where(mask, batch, ct, cores[i])
            return tuple(cotangents)

        @functools.wraps(pushforward)
        def isolated_pushforward(self, res, tangents):
            if not jnp.issubdtype(res[2].dtype, jnp.floating):
                return pushforward(self, res, tangents)
            nan, res = moved(self, res)
            batch = nan.ndim - 1
            moving = jnp.zeros(nan.shape, bool)  # a NaN query's inputs that move
            for t in tangents[:2]:
                if t is not None:
                    core = tuple(range(batch, t.ndim))
                    moving = moving | (t != 0).any(axis=core)[..., None]
            dq = tangents[2]
            if dq is not None:
                moving = moving | ((dq != 0).any(-1) if rank else dq != 0)
                dq = jnp.where(nan[..., None] if rank else nan, 0, dq)
            tangent = pushforward(self, res, (*tangents[:2], dq))
            if tangent is None:
                return None
            return jnp.where(nan, jnp.where(moving, jnp.nan, 0.0), tangent)

        cls.pullback, cls.pushforward = isolated_pullback, isolated_pushforward  # type: ignore
        return cls

    return decorate


def first_site(adapter: Any, res: tuple) -> Any:
    """A 1-D interpolant's first site, where a NaN query's rules run."""
    return res[0][..., :1]


def first_point(adapter: Any, res: tuple) -> Any:
    """A scattered interpolant's first data point (a vertex of the data's hull)."""
    return res[0][..., :1, :]
