"""``scipy.interpolate`` as adapters: interpolants called with their data and the query
points together, differentiable in the data values and the query points (and, for the
scattered ones, the sites).

- ``InterpSpline(k, bc_type)`` and the ready ``make_interp_spline``, ``CubicSpline(bc_type)``:
  ``(x, y, xq)``, linear in ``y``; every order in ``y`` and ``xq``.
- ``PchipInterpolator()``, ``Akima1DInterpolator(method)``: ``(x, y, xq)``; every order in
  ``y`` (their slope formulas differentiated) and ``xq``.
- ``RegularGridInterpolator(method)``: ``(points, values, xi)`` on a rectilinear grid,
  linear in ``values``; every order in ``values`` and ``xi`` (not "pchip").
- ``RBFInterpolator(kernel, epsilon, smoothing, degree)``: ``(y, d, x)``, linear in ``d``;
  every order in ``y``, ``d`` and ``x``.
- ``LinearNDInterpolator()``: ``(points, values, xi)`` on the Delaunay triangulation;
  every order in all three. ``CloughTocher2DInterpolator()``: linear in ``values``.

The 1-D sites ``x`` and the grid ``points`` are held fixed: differentiating in them is a
``TypeError``, as in the Clough-Tocher interpolant's ``points`` and ``xi``.
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
