"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.special``: rules of
bridged calls, every order in x. Integer orders (domain "integer") are held fixed. The shapes
of the incomplete gamma and beta functions and of their inverses are free, with every
first-order check; their second derivatives in the shapes are NaN (not implemented), which
the hessian check, drawing tangents in every floating argument, would meet, so those cases
leave it out: their second derivatives in x and p, every order, and the mixed ones in a shape
and x or p, are checked against mpmath and central differences in test_special_incomplete.py
and test_special_quantiles.py."""

from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters import special

FIRST_ORDER_SHAPES = frozenset({"hessian"})  # see the module docstring

CASES = [
    Case(special.jv, skipped=NOT_LINEAR),
    Case(special.yv, skipped=NOT_LINEAR),
    Case(special.iv, skipped=NOT_LINEAR),
    Case(special.ive, skipped=NOT_LINEAR),
    Case(special.kv, skipped=NOT_LINEAR),
    Case(special.kve, skipped=NOT_LINEAR),
    Case(special.KvDerivative(1, 1, scaled=True), skipped=NOT_LINEAR),
    Case(special.gammaincinv, skipped=NOT_LINEAR, left_out=FIRST_ORDER_SHAPES),
    Case(special.betaincinv, skipped=NOT_LINEAR, left_out=FIRST_ORDER_SHAPES),
    Case(special.lambertw, skipped=NOT_LINEAR),
    Case(special.gammainc, skipped=NOT_LINEAR, left_out=FIRST_ORDER_SHAPES),
    Case(special.gammaincc, skipped=NOT_LINEAR, left_out=FIRST_ORDER_SHAPES),
    Case(special.betainc, skipped=NOT_LINEAR, left_out=FIRST_ORDER_SHAPES),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES, quick={"Jv"})
