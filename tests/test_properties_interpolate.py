"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.interpolate``: six
points on sorted sites (differentiated too), queries away from the knots; a 3 x 2 grid
(axes held fixed, extrapolating, queries away from grid lines), and a 4 x 4 one for "pchip"; scattered sites whose corner
simplex holds the queries; rules of bridged calls, every order."""

from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters.interpolate import (
    Akima1DInterpolator,
    CloughTocher2DInterpolator,
    CubicSpline,
    LinearNDInterpolator,
    PchipInterpolator,
    RBFInterpolator,
    RegularGridInterpolator,
    make_interp_spline,
)
from jaxbridge.adapters.interpolate.regular_grid import PchipGrid

_GRID = {"g": 5, "s": 6, "d": 2}  # axes of 3 and 2 points, concatenated; values flattened
_SCATTERED = {"p": 5, "n": 2}

CASES = [
    Case(make_interp_spline, sizes={"n": 6}),
    Case(CubicSpline(), sizes={"n": 6}),
    Case(PchipInterpolator(), sizes={"n": 6}, skipped=NOT_LINEAR),
    Case(Akima1DInterpolator(), sizes={"n": 6}, skipped=NOT_LINEAR),
    Case(
        RegularGridInterpolator(bounds_error=False, fill_value=None, shape=(3, 2)),
        sizes=_GRID,
        held=("points",),
    ),
    # "pchip": a fold of 1-D PCHIPs, not linear in the values (float64 alone: 4 minutes in
    # float32; tests/test_interpolate_grid.py checks its derivatives)
    Case(
        PchipGrid(bounds_error=False, fill_value=None, shape=(4, 4)),
        sizes={"g": 8, "s": 16, "d": 2},
        held=("points",),
        skipped=NOT_LINEAR,
        float32=False,
    ),
    # (float64 alone: minutes each in float32; tests/test_interpolate_scattered.py checks it)
    Case(RBFInterpolator(), sizes=_SCATTERED, float32=False),
    Case(LinearNDInterpolator(), sizes=_SCATTERED, float32=False),
    # (Clough-Tocher: not differentiable in points, held fixed as integers)
    Case(CloughTocher2DInterpolator(tol=1e-15, maxiter=2000), sizes=_SCATTERED, held=("points",)),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES)
