"""``scipy.interpolate`` as adapters: interpolants called with their data and the query
points together, differentiable in the data values and the query points (and, for the
scattered ones, the sites).

- ``InterpSpline(k, bc_type)`` and the ready ``make_interp_spline``, ``CubicSpline(bc_type)``:
  ``(x, y, xq)``, linear in ``y``; every order in ``x`` (degrees 1 and 3), ``y`` and ``xq``.
- ``PchipInterpolator()``, ``Akima1DInterpolator(method)``: ``(x, y, xq)``; every order in
  ``x``, ``y`` (their slope formulas differentiated) and ``xq``.
- ``RegularGridInterpolator(method)``: ``(points, values, xi)`` on a rectilinear grid,
  linear in ``values``; every order in ``values`` and ``xi`` (not "pchip").
- ``RBFInterpolator(kernel, epsilon, smoothing, degree)``: ``(y, d, x)``, linear in ``d``;
  every order in ``y``, ``d`` and ``x``.
- ``LinearNDInterpolator()``: ``(points, values, xi)`` on the Delaunay triangulation;
  every order in all three. ``CloughTocher2DInterpolator()``: every order in ``xi`` and
  ``values`` (linear).

A query of one point (a scalar ``xq``, a ``xi`` or ``x`` of shape ``(d,)``) gives a scalar,
as SciPy's interpolants do: ``jax.vmap(jax.grad(lambda t: spline(x, y, t)))(ts)`` works.

The 1-D sites ``x`` are differentiated through the construction (the pieces' stretch and
shift, and the slopes' system or formula in JAX), exactly; a spline of another degree, the
grid ``points``, and the Clough-Tocher interpolant's ``points`` are held fixed:
differentiating in them is a ``TypeError``.
"""

from .akima import Akima1DInterpolator as Akima1DInterpolator
from .clough_tocher import CloughTocher2DInterpolator as CloughTocher2DInterpolator
from .cubic_spline import CubicSpline as CubicSpline
from .linear_nd import LinearNDInterpolator as LinearNDInterpolator
from .pchip import PchipInterpolator as PchipInterpolator
from .rbf import RBFInterpolator as RBFInterpolator
from .regular_grid import RegularGridInterpolator as RegularGridInterpolator
from .spline import InterpSpline as InterpSpline
from .spline import make_interp_spline as make_interp_spline

__all__ = [
    "Akima1DInterpolator",
    "CloughTocher2DInterpolator",
    "CubicSpline",
    "InterpSpline",
    "LinearNDInterpolator",
    "PchipInterpolator",
    "RBFInterpolator",
    "RegularGridInterpolator",
    "make_interp_spline",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.interpolate"
_catalogue_adapters = (
    "`make_interp_spline`, `CubicSpline`, `PchipInterpolator`, `Akima1DInterpolator`, "
    "`RegularGridInterpolator`, `RBFInterpolator`, `LinearNDInterpolator`, "
    "`CloughTocher2DInterpolator`"
)
_catalogue_derivatives = "every order in the queries and the data"
