"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.stats``: every
order in x, first order in the shapes (their second derivative is NaN), so the shapes are
held fixed here; tests/test_stats.py checks them free."""

from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters import stats

CASES = [
    Case(getattr(stats, name).adapters[kind], skipped=NOT_LINEAR, held=("a", "b")[:shapes])
    for name, kind, shapes in [
        ("t", "ppf", 1),
        ("gamma", "isf", 1),
        ("chi2", "logcdf", 1),
        ("invgamma", "sf", 1),
        ("beta", "logsf", 2),
        ("f", "cdf", 2),
    ]
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES)
