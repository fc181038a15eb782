"""``CloughTocher2DInterpolator``: the C¹ piecewise cubic on the Delaunay triangulation in the
plane, linear in the values; its cotangent is the interpolants of the unit vectors."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import numpy as np
import scipy.interpolate

import jaxbridge as jb

from ..special._fixed import held_fixed
from ._scattered import Scattered

NO_PLACE_DERIVATIVE = (
    "SciPy gives no derivative of the Clough-Tocher interpolant, in the queries or in the "
    "points (its vertex gradients come from a global iterative fit)"
)


class CloughTocher2DInterpolator(Scattered):
    """SciPy's C¹ piecewise cubic interpolant on the Delaunay triangulation of ``points`` in
    the plane: ``CloughTocher2DInterpolator(fill_value, rescale, tol, maxiter)(points,
    values, xi)`` is ``scipy.interpolate.CloughTocher2DInterpolator(points, values,
    fill_value, tol, maxiter, rescale)(xi)``.

    ``points`` (p, 2) with p >= 3, ``values`` (p,), ``xi`` (m, 2) → (m,); leading axes are
    batch axes. ``fill_value`` (NaN) outside the convex hull, as SciPy. Values are SciPy's.

    Derivatives: in ``values``, linear: the tangent is the interpolant of the tangent, the
    cotangent ``Aᵀ g`` from SciPy's interpolant of the p unit vectors at ``xi`` (O(p m));
    every order, ``jax.linear_transpose`` too. The vertex gradients are SciPy's iterative
    fit, linear in the values up to ``tol`` (SciPy's 1e-6 by default; 1e-13 makes the
    interpolant linear to rounding). In ``xi`` and ``points``: a ``TypeError`` (SciPy gives
    no derivative of this interpolant). ``on_failure`` as for ``LinearNDInterpolator``.
    """

    tol: float = 1e-6
    maxiter: int = 400

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) or self.tol <= 0:
            raise ValueError("CloughTocher2DInterpolator: parameter 'tol' must be a number > 0.")
        if isinstance(self.maxiter, bool) or not isinstance(self.maxiter, int) or self.maxiter < 1:
            raise ValueError("CloughTocher2DInterpolator: parameter 'maxiter' must be an int >= 1.")

    def __call__(self, points: Any, values: Any, xi: Any) -> Any:
        owner = "CloughTocher2DInterpolator"
        points = held_fixed(owner, "points", NO_PLACE_DERIVATIVE, points)
        xi = held_fixed(owner, "xi", NO_PLACE_DERIVATIVE, xi)
        return super().__call__(points, values, xi)

    def interpolant(self, points, values):
        return scipy.interpolate.CloughTocher2DInterpolator(
            points,
            values,
            fill_value=self.fill_value,
            tol=self.tol,
            maxiter=self.maxiter,
            rescale=self.rescale,
        )

    def check(self, points, values, xi):
        if points.shape[-1] != 2:
            return f"argument 'points' must be (p, 2); got {points.shape[-1]} coordinates"
        return super().check(points, values, xi)

    def pushforward(self, res, tangents):
        points, _, xi = res[:3]
        dvalues = tangents[1]
        return None if dvalues is None else self(points, dvalues, xi)

    def pullback(self, res, g):
        points, _, xi = res[:3]
        return None, _Transposed(self)(points, g, xi), None


class _Transposed(jb.Adapter):
    """``values̄ = Aᵀ g`` for ``of``'s interpolant at ``xi``: linear in ``g``, its pullback
    the interpolant again."""

    of: CloughTocher2DInterpolator

    signature = "(p,n),(m),(m,n)->(p)"
    linear_in = ("g",)

    def output_specs(self, points, g, xi):
        return jax.ShapeDtypeStruct(points.shape[-2:-1], jb.result_dtype(points, g, xi))

    def forward(self, points, g, xi):
        dtype = jb.result_dtype(points, g, xi)
        p64 = np.asarray(points, np.float64)
        p = p64.shape[0]
        if self.of.check(p64, np.zeros(p), xi) is not None:  # (on_failure="nan")
            return np.full(p, np.nan, dtype)
        # the unit vectors' interpolants with NaN outside the hull, where the result is
        # fill_value, a constant
        unit = dataclasses.replace(self.of, fill_value=math.nan).interpolant(p64, np.eye(p))
        columns = np.asarray(unit(np.asarray(xi, np.float64)))
        keep = np.isfinite(columns).all(axis=-1)
        return (columns[keep].T @ np.asarray(g, np.float64)[keep]).astype(dtype)

    def pushforward(self, res, tangents):
        points, _, xi = res[:3]
        dg = tangents[1]
        return None if dg is None else self(points, dg, xi)

    def pullback(self, res, ct):
        points, _, xi = res[:3]
        return None, self.of(points, ct, xi), None
