"""What ``Cdist`` and ``Pdist`` share: the metric, its checks, and its formula in JAX for
the rules."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb
from jaxbridge.internal import parse_signature

from .._shared._rules import nan_where
from ._metrics import METRICS, inverse_covariance, variances

D = TypeVar("D", bound=type)

Metric = Literal[
    "euclidean",
    "sqeuclidean",
    "cityblock",
    "chebyshev",
    "minkowski",
    "cosine",
    "correlation",
    "braycurtis",
    "canberra",
    "seuclidean",
    "mahalanobis",
]

PARAMETERS = {"seuclidean": "V", "mahalanobis": "VI"}
"""The metrics that take a parameter array other than the weights ``w``, and its name."""


class Distances(jb.Adapter):
    """What ``Cdist`` and ``Pdist`` share: the metric, its checks and its rules."""

    metric: Metric = "euclidean"
    p: float = 2.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.metric not in METRICS:
            raise ValueError(
                f"{owner}: parameter 'metric' must be one of {', '.join(METRICS)}; got "
                f"{self.metric!r}."
            )
        if self.metric == "minkowski" and not (
            isinstance(self.p, (int, float)) and not isinstance(self.p, bool) and self.p > 0
        ):
            raise ValueError(
                f"{owner}: parameter 'p' must be a number greater than 0, as SciPy's; got "
                f"{self.p!r}."
            )

    def scipy_distances(
        self, routine: Any, *points: np.ndarray, out: Any = None, **parameter: Any
    ) -> np.ndarray:
        """SciPy's ``routine`` (``cdist``, ``pdist``) of ``points`` with this metric and
        its ``parameter`` (``w``, ``V`` or ``VI``, where given), in the result's dtype
        (``result_dtype`` of the points and the parameter); into ``forward``'s ``out``
        (XLA's buffer) where it is float64, as SciPy's ``out=`` takes."""
        options: dict[str, Any] = {"p": float(self.p)} if self.metric == "minkowski" else {}
        if out is not None and out[0].dtype == np.float64:
            options["out"] = out[0]
        distances = routine(*points, self.metric, **options, **parameter)
        return distances.astype(jb.result_dtype(*points, *parameter.values()), copy=False)

    def parameter_name(self, w: Any, V: Any, VI: Any) -> str | None:  # noqa: N803 (SciPy's)
        """The one of ``w``, ``V`` and ``VI`` given (``None`` if none is), refused where this
        metric does not take it."""
        given = [name for name, value in (("w", w), ("V", V), ("VI", VI)) if value is not None]
        takes = PARAMETERS.get(self.metric, "w")
        for name in given:
            if name != takes:
                raise ValueError(
                    f"{type(self).__name__}: argument {name!r} is not one the metric "
                    f"{self.metric!r} takes (it takes {takes!r})."
                )
        return given[0] if given else None

    def _refuse_zero_rows(self, name: str, x: np.ndarray, w: np.ndarray | None = None) -> None:
        if self.metric in ("cosine", "correlation"):
            weights = np.ones(x.shape[-1]) if w is None else w
            if self.metric == "correlation":
                x = x - (x @ weights / weights.sum())[..., None]
            if (np.abs(x * (weights > 0)).max(-1, initial=0) == 0).any():
                what = "constant" if self.metric == "correlation" else "zero"
                raise ValueError(
                    f"argument {name!r} has a {what} row{'' if w is None else ' where w > 0'}, "
                    f"whose {self.metric} distance to anything is undefined."
                )

    def _refuse_default_parameter(self, points: np.ndarray, names: str) -> None:
        """Refuse points whose SciPy's default ``V`` or ``VI`` does not exist."""
        count, n = points.shape[-2:]
        if self.metric == "mahalanobis" and count <= n:
            raise ValueError(
                f"arguments {names} have {count} points in {n} dimensions; mahalanobis's "
                f"default VI (their inverse covariance) needs at least {n + 1}: pass VI."
            )
        if self.metric == "seuclidean" and (np.ptp(points, axis=-2) == 0).any():
            raise ValueError(
                f"arguments {names} have a coordinate with zero variance, where seuclidean's "
                "default V divides by 0: pass V."
            )

    def _distances(
        self,
        xa: jax.Array,
        xb: jax.Array,
        parameter: jax.Array | None,
        points: jax.Array | None,
    ) -> jax.Array:
        """The metric's formula; without ``parameter``, ``seuclidean``'s and
        ``mahalanobis``'s default is SciPy's, computed from ``points`` (so that the
        derivatives see it move with them)."""
        if parameter is None and points is not None and self.metric == "seuclidean":
            parameter = variances(points)
        elif parameter is None and points is not None and self.metric == "mahalanobis":
            parameter = inverse_covariance(points)
        metric, p = METRICS[self.metric], float(self.p)
        result = jax.eval_shape(lambda a, b, c: metric(a, b, p, c), xa, xb, parameter)
        if 0 in result.shape:  # no pair: nothing moves (a zero row's NaN slope times none)
            return jnp.zeros(result.shape, result.dtype)
        return metric(xa, xb, p, parameter)


def check_parameter(name: str, value: np.ndarray) -> None:
    """Refuse a metric's parameter array SciPy would refuse or turn into inf: ``w``
    nonnegative, ``V`` positive, each finite."""
    if not np.isfinite(value).all():
        raise ValueError(f"argument {name!r} has non-finite entries (NaN or inf).")
    if name == "w" and (value < 0).any():
        raise ValueError("argument 'w' must hold nonnegative weights.")
    if name == "V" and (value <= 0).any():
        raise ValueError("argument 'V' must hold positive variances.")


def aligned(primals, tangents):
    """Primals and tangents of the same shapes, for ``jax.jvp``: a primal that the batch
    broadcasts (a size-1 batch axis) broadcast to its tangent's shape, zeros for a tangent
    that is ``None``."""
    primals = [x if t is None else jnp.broadcast_to(x, t.shape) for x, t in zip(primals, tangents)]
    tangents = [jnp.zeros_like(x) if t is None else t for x, t in zip(primals, tangents)]
    return tuple(primals), tuple(tangents)


def floating(x: jax.Array) -> bool:
    """Whether ``x`` has a cotangent (integer points have none)."""
    return bool(jnp.issubdtype(x.dtype, jnp.floating))


def isolating_nan_rows(sets: int) -> Callable[[D], D]:
    """Class decorator for ``Cdist`` (``sets`` 2: residuals ``(XA, XB, [parameter],
    distances)``, distances (..., m, k)) and ``Pdist`` (1: ``(X, [parameter], distances)``,
    condensed): a row holding NaN (SciPy's distances from it are NaN) keeps out of the
    other pairs' derivatives, and its pairs get NaN derivatives, the same in both modes.

    The rules run with the row replaced by a finite one (not zero nor constant, which
    ``cosine`` and ``correlation`` divide by) and its pairs' distances and cotangents 0:
    before, its NaN partials times a zero cotangent made every other pair's derivative in
    the other set NaN in reverse mode. Then a pair with a NaN row has NaN derivatives in
    both its rows and in the parameter (reverse mode: where its cotangent is not 0;
    forward mode: where a tangent of those moves). Where the parameter is SciPy's default,
    computed from every point (``seuclidean``, ``mahalanobis``), one NaN row makes every
    distance NaN, and the rules are left as they are."""

    def decorate(cls: D) -> D:
        pullback, pushforward = cls.pullback, cls.pushforward  # type: ignore[attr-defined]

        def applies(self, res) -> bool:
            default = not hasattr(self, "parameter") and self.metric in (
                "seuclidean",
                "mahalanobis",
            )
            return not default and all(floating(x) for x in res[:sets])

        def pairs(rows: list) -> jax.Array:
            """Per pair, whether ``rows`` (per set, (..., m)) hold it."""
            if sets == 2:
                return rows[0][..., :, None] | rows[1][..., None, :]
            first, second = np.triu_indices(rows[0].shape[-1], 1)
            return rows[0][..., first] | rows[0][..., second]

        def moved(res):
            nan = [jnp.isnan(x).any(-1) for x in res[:sets]]
            safe = [
                jnp.where(n[..., None], jnp.arange(1, x.shape[-1] + 1, dtype=x.dtype), x)
                for n, x in zip(nan, res[:sets])
            ]
            pair = pairs(nan)
            return nan, pair, (*safe, *res[sets:-1], jnp.where(pair, 0, res[-1]))

        @functools.wraps(pullback)
        def isolated_pullback(self, res, g):
            if not applies(self, res):
                return pullback(self, res, g)
            _, pair, res = moved(res)
            cotangents = list(pullback(self, res, jnp.where(pair, 0, g)))
            hit = pair & (g != 0)
            if sets == 2:
                rows = [hit.any(-1), hit.any(-2)]
            else:
                first, second = np.triu_indices(res[0].shape[-2], 1)
                count = jnp.zeros((*hit.shape[:-1], res[0].shape[-2]), g.dtype)
                count = count.at[..., first].add(hit).at[..., second].add(hit)
                rows = [count > 0]
            batch = hit.ndim - (2 if sets == 2 else 1)
            cores = [len(core) for core in parse_signature(type(self).signature).inputs]
            for k, ct in enumerate(cotangents):
                if ct is None:
                    continue
                if k < sets:  # a set's rows
                    cotangents[k] = nan_where(rows[k], batch, ct, cores[k])
                else:  # the parameter: every pair's
                    anywhere = jnp.any(hit, axis=tuple(range(batch, hit.ndim)))
                    cotangents[k] = nan_where(anywhere, batch, ct, cores[k])
            return tuple(cotangents)

        @functools.wraps(pushforward)
        def isolated_pushforward(self, res, tangents):
            if not applies(self, res):
                return pushforward(self, res, tangents)
            nan, pair, res = moved(res)
            moving = [
                jnp.zeros(n.shape, bool) if t is None else (t != 0).any(-1)
                for n, t in zip(nan, tangents[:sets])
            ]
            moves = pairs(moving)
            for t in tangents[sets:]:  # the parameter moves every pair
                if t is not None:
                    moves = moves | (t != 0).any()
            tangents = tuple(
                t if k >= sets or t is None else jnp.where(nan[k][..., None], 0, t)
                for k, t in enumerate(tangents)
            )
            tangent = pushforward(self, res, tangents)
            return jnp.where(pair, jnp.where(moves, jnp.nan, 0.0), tangent)

        cls.pullback, cls.pushforward = isolated_pullback, isolated_pushforward  # type: ignore
        return cls

    return decorate
