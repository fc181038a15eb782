"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.interpolate``: six
points on sorted sites held fixed (as integers), queries away from the knots; rules of
bridged calls, every order."""

from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters.interpolate import (
    Akima1DInterpolator,
    CubicSpline,
    PchipInterpolator,
    make_interp_spline,
)

CASES = [
    Case(make_interp_spline, sizes={"n": 6}, held=("x",)),
    Case(CubicSpline(), sizes={"n": 6}, held=("x",)),
    Case(PchipInterpolator(), sizes={"n": 6}, held=("x",), skipped=NOT_LINEAR),
    Case(Akima1DInterpolator(), sizes={"n": 6}, held=("x",), skipped=NOT_LINEAR),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES)
