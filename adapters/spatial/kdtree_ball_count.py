"""``KDTreeBallCount``: SciPy's ``KDTree.query_ball_point(..., return_length=True)``, the
number of data points within ``r`` of each query point."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

import jaxbridge as jb


class KDTreeBallCount(jb.Adapter):
    """How many of ``data``'s rows lie within ``r`` of each query point, with SciPy's k-d
    tree on the host: ``counts = KDTreeBallCount()(data, x, r)``, as
    ``scipy.spatial.KDTree(data).query_ball_point(x, r, return_length=True)``.

    ``data`` is (n, d), ``x`` (q, d) and ``r`` (q,) (or a number, for every query point);
    ``counts`` is (q,), int32. Leading axes are batch axes (one tree per batch element's
    ``data``; ``vmap`` over query sets is one host call).

    Parameters:
        p: the Minkowski norm, at least 1 (``inf``: the largest coordinate difference).
        eps: SciPy's approximation: points farther than ``r / (1 + eps)`` may be left out,
            none farther than ``r (1 + eps)`` is counted.

    The counts are integers, locally constant in ``data``, ``x`` and ``r``: their
    derivatives are zero in every mode (where a point lies exactly at distance ``r`` the
    count jumps, and has no derivative). The distances themselves are ``KDTreeQuery``'s.
    """

    p: float = 2.0
    eps: float = 0.0

    signature = "(n,d),(q,d),(q)->(q)"
    domains = {"r": "positive"}

    def __call__(self, data: Any, x: Any, r: Any) -> Any:
        r = jnp.asarray(r)
        if r.ndim == 0:  # (a number: every query point's)
            r = jnp.broadcast_to(r, jnp.shape(x)[-2:-1])
        return super().__call__(data, x, r)

    def __post_init__(self) -> None:
        for name, value, least in (("p", self.p, 1), ("eps", self.eps, 0)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= least:
                raise ValueError(
                    f"KDTreeBallCount: parameter {name!r} must be a number of at least "
                    f"{least}; got {value!r}."
                )

    def output_specs(self, data, x, r):
        return jax.ShapeDtypeStruct(x.shape[:-1], np.int32)

    def check(self, data, x, r):
        for name, value in (("data", data), ("x", x)):
            if not np.isfinite(value).all():
                raise ValueError(f"argument {name!r} has non-finite entries (NaN or inf).")
        if np.isnan(r).any() or (r < 0).any():
            raise ValueError("argument 'r' must hold nonnegative radii (inf: every point).")
        if data.shape[-1] == 0:  # (SciPy's KDTree fails with an IndexError)
            raise ValueError("arguments 'data' and 'x' have points of no coordinates (d = 0).")

    def forward(self, data, x, r):
        tree = scipy.spatial.KDTree(data)
        counts = tree.query_ball_point(x, r, p=self.p, eps=self.eps, return_length=True)
        return np.asarray(counts, np.int32).reshape(x.shape[:-1])

    def pushforward(self, res, tangents):
        return None  # (integers: the counts do not move)

    def pullback(self, res, g):
        return None, None, None
