"""``CloughTocher2DInterpolator``: the C¹ piecewise cubic on the Delaunay triangulation in the
plane, linear in the values; its rules are SciPy's element written in JAX (the Bezier cubic
of each query's triangle) around bridged calls for the triangle's map and coefficients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import scipy.interpolate

from .._shared._fixed import HoldsFixed
from .._shared._rules import compiled
from ._clough_tocher_element import BarycentricMap, ControlCoefficients, barycentric, bezier
from ._queries import first_point, isolating_nan_queries
from ._scattered import Scattered, broadcast_batch, piece_queries, scattered_sites
from ._sizes import reading

NO_POINTS_DERIVATIVE = (
    "SciPy gives no derivative of the Clough-Tocher interpolant in the points (its vertex "
    "gradients come from a global iterative fit)"
)


@isolating_nan_queries(1, first_point)
class CloughTocher2DInterpolator(HoldsFixed, Scattered):
    """SciPy's C¹ piecewise cubic interpolant on the Delaunay triangulation of ``points`` in
    the plane: ``CloughTocher2DInterpolator(fill_value, rescale, tol, maxiter)(points,
    values, xi)`` is ``scipy.interpolate.CloughTocher2DInterpolator(points, values,
    fill_value, tol, maxiter, rescale)(xi)``.

    ``points`` (p, 2) with p >= 3, ``values`` (p,), ``xi`` (m, 2) → (m,); leading axes are
    batch axes. ``fill_value`` (NaN) outside the convex hull, as SciPy. Values are SciPy's.

    Derivatives: the rules are SciPy's element written in JAX: in the triangle holding each
    query, a cubic Bezier polynomial in its barycentric coordinates (split about the
    centroid into three), whose 19 control coefficients come from the vertex values and
    SciPy's vertex gradients (a bridged call, linear in ``values``; its transpose, another,
    is linear in the cotangent). So: in ``xi``, the exact derivatives of SciPy's interpolant
    (whatever ``tol``), every order wherever it is smooth (away from the triangles' edges and
    their split, where the second derivatives jump; on one, those of the piece SciPy finds);
    0 outside the hull. In ``values``, linear (``jax.linear_transpose`` too), mixed with
    ``xi`` to every order. The vertex gradients are SciPy's iterative fit, linear in the
    values up to ``tol`` (SciPy's 1e-6 by default; 1e-13 makes the interpolant linear to
    rounding). In ``points``: a ``TypeError`` (the vertex gradients come from a global
    iterative fit, which SciPy does not differentiate). ``on_failure`` as for
    ``LinearNDInterpolator``.
    """

    tol: float = 1e-6
    maxiter: int = 400

    domains = {"points": scattered_sites, "xi": piece_queries}
    held = {"points": NO_POINTS_DERIVATIVE}

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float)) or self.tol <= 0:
            raise ValueError("CloughTocher2DInterpolator: parameter 'tol' must be a number > 0.")
        if isinstance(self.maxiter, bool) or not isinstance(self.maxiter, int) or self.maxiter < 1:
            raise ValueError("CloughTocher2DInterpolator: parameter 'maxiter' must be an int >= 1.")

    def interpolant(self, points, values):
        return scipy.interpolate.CloughTocher2DInterpolator(
            points,
            values,
            fill_value=self.fill_value,
            tol=self.tol,
            maxiter=self.maxiter,
            rescale=self.rescale,
        )

    def sizes(self, points, xi):
        if points[-1] != 2:
            return f"argument 'points' must be (p, 2); got {points[-1]} coordinates"
        return super().sizes(points, xi)

    @compiled
    def pushforward(self, res, tangents):
        points, values, xi = res[:3]
        names = tuple(n for n, t in zip(_MOVABLE, tangents[1:]) if t is not None)
        if not names:
            return None
        f, primals = _moving(self, names, points, values, xi)
        moving = [t for t in tangents[1:] if t is not None]
        # a tangent may carry batch axes its primal lacks
        arrays = broadcast_batch(primals + moving, [_CORE_RANK[n] for n in names] * 2)
        tangent = jax.jvp(f, tuple(arrays[: len(names)]), tuple(arrays[len(names) :]))[1]
        return reading(res[3], tangent)

    @compiled
    def pullback(self, res, g, *, wanted=None):
        points, values, xi = res[:3]
        names = tuple(n for n in _MOVABLE if wanted is None or n in wanted)
        if not names:
            return None, None, None
        f, primals = _moving(self, names, points, values, xi)
        cotangents = dict(zip(names, jax.vjp(f, *primals)[1](g)))
        return reading(res[3], (None, cotangents.get("values"), cotangents.get("xi")))


_MOVABLE = ("values", "xi")
_CORE_RANK = {"values": 1, "xi": 2}


def _interpolant(adapter: CloughTocher2DInterpolator, points, values, xi):
    """The interpolant at ``xi`` as JAX computes it: the Bezier cubic of each query's
    triangle, whose map and coefficients hold still under a move of ``xi`` (piecewise
    constant) and whose coefficients are linear in ``values``."""
    fixed_points, fixed_xi = jax.lax.stop_gradient(points), jax.lax.stop_gradient(xi)
    maps = BarycentricMap(adapter)(fixed_points, fixed_xi)
    coefficients = ControlCoefficients(adapter)(fixed_points, values, fixed_xi)
    inside = jnp.any(maps != 0, axis=(-2, -1))  # a triangle's map is never 0 (NaN: refused)
    return jnp.where(inside, bezier(barycentric(maps, xi), coefficients), adapter.fill_value)


def _moving(adapter, names, points, values, xi):
    """``_interpolant`` as a function of the arguments ``names`` alone."""
    fixed = {"values": values, "xi": xi}

    def interpolant(*moving):
        return _interpolant(adapter, points, **{**fixed, **dict(zip(names, moving))})

    return interpolant, [fixed[n] for n in names]
