"""``scipy.interpolate`` as adapters: interpolants called with their data and the query
points together, differentiable in the data values and the query points.

- ``InterpSpline(k, bc_type)`` and the ready ``make_interp_spline``, ``CubicSpline(bc_type)``:
  ``(x, y, xq)``, linear in ``y``; every order in ``y`` and ``xq``.
- ``PchipInterpolator()``, ``Akima1DInterpolator(method)``: ``(x, y, xq)``; every order in
  ``y`` (their slope formulas differentiated) and ``xq``.

The sites ``x`` are held fixed: differentiating in them is a ``TypeError``.
"""

from .akima import Akima1DInterpolator as Akima1DInterpolator
from .cubic_spline import CubicSpline as CubicSpline
from .pchip import PchipInterpolator as PchipInterpolator
from .spline import InterpSpline as InterpSpline
from .spline import make_interp_spline as make_interp_spline

__all__ = [
    "Akima1DInterpolator",
    "CubicSpline",
    "InterpSpline",
    "PchipInterpolator",
    "make_interp_spline",
]
