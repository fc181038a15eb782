"""The property suite (``tests/_properties.py``) over the seeds' adapters: host rules, but
linear in their argument, so that every rule is forward itself and every order works."""

from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters import Doubling, Linear, ReLU, Sigmoid

CASES = [
    Case(Doubling()),
    Case(Linear(), skipped=NOT_LINEAR),
    Case(ReLU(), skipped=NOT_LINEAR),
    Case(Sigmoid(), skipped=NOT_LINEAR),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"Doubling"}
)
