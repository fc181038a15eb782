"""``CubicSpline``: SciPy's C² cubic spline, linear in the data; its cotangent is that of the
same cubic B-spline; its tangent in the sites that of its Hermite form."""

from __future__ import annotations

import scipy.interpolate

from ._hermite import hermite_form_moved
from ._linear import LinearSpline, bspline_transpose
from ._spline_slopes import spline_slopes

BC_TYPES = ("not-a-knot", "natural", "clamped", "periodic")


class CubicSpline(LinearSpline):
    """SciPy's cubic spline through ``(x, y)`` evaluated at ``xq``:
    ``CubicSpline(bc_type)(x, y, xq)`` is ``scipy.interpolate.CubicSpline(x, y,
    bc_type=bc_type)(xq, nu, extrapolate)``.

    ``x`` (n,) strictly increasing (n >= 2), ``y`` (n,), ``xq`` (m,) → (m,); leading axes are
    batch axes. ``bc_type`` is one of SciPy's names: "not-a-knot" (default), "natural",
    "clamped", "periodic" (``y[0] == y[-1]``). Values are SciPy's.

    Derivatives: in ``xq``, the spline's next derivative (every order, both modes); in
    ``y``, the spline of the tangent, and for the cotangent the transposed interpolation
    system of the same spline as a cubic B-spline (``make_interp_spline(x, y, 3, bc_type)``,
    the same function: O(n + m)); with fewer than 4 points or "periodic", from the splines of
    the unit vectors (O(n m)). Every order in ``y``, ``jax.linear_transpose`` too; in ``x``,
    exactly, as ``InterpSpline``'s cubic (its Hermite form with SciPy's slope system solved
    again in JAX; periodic extrapolation moves the queries' period too): every order, both
    modes, mixed too. Parameters ``nu``, ``extrapolate`` (None: SciPy's default, periodic for
    "periodic") and ``on_failure`` as for ``InterpSpline``.
    """

    bc_type: str = "not-a-knot"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bc_type not in BC_TYPES:
            raise ValueError(
                f"CubicSpline: parameter 'bc_type' must be one of {BC_TYPES}; got "
                f"{self.bc_type!r} (derivative values other than 0 would make the spline "
                "affine, not linear, in y)."
            )

    def interpolant(self, x, y):
        return scipy.interpolate.CubicSpline(x, y, bc_type=self.bc_type)

    def slopes(self, x, y):
        """The spline's slopes at the sites, in JAX."""
        return spline_slopes(x, y, self.bc_type)

    def moved(self, x, data, xq, dx):
        return hermite_form_moved(self, self.slopes, x, data[0], xq, dx)

    def pieces_in_jax(self, n):
        return n >= 4 and not self.periodic()

    def transpose(self, x, g, xq):
        if x.shape[-1] >= 4 and not self.periodic():
            bc = None if self.bc_type == "not-a-knot" else self.bc_type
            found = bspline_transpose(x, g, xq, 3, bc, self.nu, self.extrapolates())
            if found is not None:
                return (found,)
        return (self.transpose_by_columns(x, g, xq),)
