"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.stats``: every
method of every family (6 x 6). Every order in x, first order in the shapes: their second
derivative is NaN (not implemented), which the hessian check, drawing tangents in every
floating argument, would meet, so the shapes are held fixed here (integers), and the hessian
check runs in x alone; tests/test_stats.py checks the shapes free (check_adapter's
first-order checks on every method, and the derivatives against mpmath).

Cost: each case compiles its rules to second order: with the quick profile on a busy 2-core
machine, 5 to 40 s per case and dtype (measured: the 36 in float64 took 15 min, 22 s on
average; float32 25 s each). Every method runs in float64, where the hessian check runs;
float32 (no hessian check: its rules are the same code, cast) runs for one method per
family, the six that cover every kind once: 42 cases, about 17 min, not 72 (30 min).
``t.ppf``, the quantile in the degrees of freedom, is the quick subset's (16 s there)."""

from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters import stats

KINDS = tuple(stats.t.adapters)  # cdf, sf, logcdf, logsf, ppf, isf: the same for every family
FAMILIES = {"t": 1, "gamma": 1, "chi2": 1, "invgamma": 1, "beta": 2, "f": 2}
# one method per family, every kind once: the ones that also run in float32
FLOAT32 = {"t.ppf", "gamma.isf", "chi2.logcdf", "invgamma.sf", "beta.logsf", "f.cdf"}

CASES = [
    Case(
        getattr(stats, name).adapters[kind],
        skipped=NOT_LINEAR,
        held=("a", "b")[:shapes],
        float32=f"{name}.{kind}" in FLOAT32,
    )
    for name, shapes in FAMILIES.items()
    for kind in KINDS
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"t.ppf"}
)
