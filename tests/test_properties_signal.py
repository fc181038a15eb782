"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.signal``: rules
of bridged calls, every order."""

from _properties import Case, property_tests

from jaxbridge.adapters.signal import LinearFilter, SosFilter

CASES = [Case(LinearFilter()), Case(SosFilter())]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"SosFilter"}
)
