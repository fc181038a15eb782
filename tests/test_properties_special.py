"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.special``: rules of
bridged calls, every order in x. Integer orders (domain "integer") are held fixed, and so are
the shapes of the incomplete gamma and beta functions and their inverses, whose second
derivatives are NaN: tests/test_special_incomplete.py and test_special_quantiles.py check
them free."""

from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters import special

CASES = [
    Case(special.jv, skipped=NOT_LINEAR),
    Case(special.yv, skipped=NOT_LINEAR),
    Case(special.iv, skipped=NOT_LINEAR),
    Case(special.ive, skipped=NOT_LINEAR),
    Case(special.kv, skipped=NOT_LINEAR),
    Case(special.kve, skipped=NOT_LINEAR),
    Case(special.KvDerivative(1, 1, scaled=True), skipped=NOT_LINEAR),
    Case(special.gammaincinv, skipped=NOT_LINEAR, held=("a",)),
    Case(special.betaincinv, skipped=NOT_LINEAR, held=("a", "b")),
    Case(special.lambertw, skipped=NOT_LINEAR),
    Case(special.gammainc, skipped=NOT_LINEAR, held=("a",)),
    Case(special.gammaincc, skipped=NOT_LINEAR, held=("a",)),
    Case(special.betainc, skipped=NOT_LINEAR, held=("a", "b")),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES, quick={"Jv"})
