"""BFGS run without ``scipy.optimize.minimize``'s wrapper: the same result as SciPy's own
call, to the bit, with the same evaluations in the same order, on every path of its loop;
SciPy's own call where that is the only exact one."""

import numpy as np
import pytest
import scipy
import scipy.optimize
from _optimize_problems import Rosenbrock
from hypothesis import given, settings
from hypothesis import strategies as st
from test_optimize_lbfgsb import evaluated_alike, quartic, rosenbrock

from jaxbridge.adapters.optimize._bfgs import minimize_bfgs
from jaxbridge.adapters.optimize._scipy_loops import followed

needs_driver = pytest.mark.skipif(
    not followed(), reason=f"SciPy {scipy.__version__}: not a version the driver follows"
)


def scipys(fun, x0, tol=None, options=None):
    return scipy.optimize.minimize(fun, x0, jac=True, method="BFGS", tol=tol, options=options or {})


def assert_same(ours, theirs):
    assert ours is not None
    for key in ("x", "jac", "hess_inv"):
        np.testing.assert_array_equal(ours[key], theirs[key])
    assert ours.fun == theirs.fun or (np.isnan(ours.fun) and np.isnan(theirs.fun))
    for key in ("nfev", "njev", "nit", "status", "success", "message"):
        assert ours[key] == theirs[key], key


@needs_driver
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    options=st.sampled_from(
        [
            {},
            {"gtol": 1e-9},
            {"maxiter": 3},
            {"xrtol": 1e-3},
            {"c1": 0.3, "c2": 0.5},
            {"norm": 2, "gtol": 1e-7},
        ]
    ),  # fmt: skip
    tol=st.sampled_from([None, 1e-7]),
)
def test_the_same_as_scipys_minimize(n, seed, options, tol):
    rng = np.random.default_rng(seed)
    if n == 1:  # (quartic couples the first two variables)
        fun = rosenbrock if seed % 2 else (lambda x: (float(np.sum(x**4 + x)), 4 * x**3 + 1))
    else:
        fun = quartic(rng.uniform(0.01, 3.0, n), rng.uniform(-2, 2, n))
    x0 = rng.uniform(-3, 3, n) * 10 ** rng.integers(0, 2)
    ours, theirs = evaluated_alike(
        fun,
        lambda f: minimize_bfgs(f, x0, tol, dict(options)),
        lambda f: scipys(f, x0, tol, dict(options)),
    )
    assert_same(ours, theirs)


@needs_driver
def test_every_ending_is_scipys():
    """Converged (status 0), stopped by maxiter (1), a line search that finds no better
    point (2), NaN met (3): each result the same as SciPy's."""
    start = np.array([1.0, 2.0])

    def nan_but_at_start(x):
        if np.array_equal(x, start):
            return float(x @ x), 2 * x
        return float("nan"), np.full(2, np.nan)

    def nan_gradient(x):  # the loop does not start: NaN is not above gtol
        return float(x @ x), np.full(2, np.nan)

    cases = [
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), {}),
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), {"maxiter": 5}),
        (nan_but_at_start, start, {}),
        (nan_gradient, start, {}),
    ]
    statuses = set()
    for f, x0, options in cases:
        with np.errstate(invalid="ignore"):
            ours = minimize_bfgs(f, x0, None, dict(options))
            theirs = scipys(f, x0, options=dict(options))
        assert_same(ours, theirs)
        statuses.add(theirs.status)
    assert statuses == {0, 1, 2, 3}


@pytest.mark.parametrize(
    "options",
    [
        {"disp": True},  # an option not handled here
        {"c1": 0.9, "c2": 0.5},  # SciPy's error: c1 < c2 is required
        {"eps": 1e-6},  # only for finite differences
    ],
)
def test_scipys_own_call_where_only_it_is_exact(options):
    assert minimize_bfgs(rosenbrock, np.array([0.1, 0.2]), None, options) is None


def test_minimize_gives_scipys_answer_to_the_bit():
    """Through the adapter's call to SciPy (its default tight tolerances): x as SciPy's own
    call finds it, before the adapter's Newton refinement, which the driver does not touch."""
    from jaxbridge.adapters.optimize._functions import HostFunction
    from jaxbridge.adapters.optimize._minimizing import defaults, run_minimize

    f = HostFunction(Rosenbrock(), np.array([1.0, 100.0]))
    x0 = np.array([-1.2, 1.0])
    ours = run_minimize(f, x0, "BFGS", None, ())
    theirs = scipy.optimize.minimize(
        f.value_and_gradient, x0, jac=True, method="BFGS", options=defaults("BFGS", None)
    )
    assert_same(ours, theirs)
    assert ours.success and np.abs(ours.x - 1).max() < 1e-6
