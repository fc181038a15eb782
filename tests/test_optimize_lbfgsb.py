"""L-BFGS-B driven without ``scipy.optimize.minimize``'s wrapper: the same result as SciPy's
own call, to the bit, on every path of its loop; SciPy's own call where that is the only
exact one."""

import numpy as np
import pytest
import scipy
import scipy.optimize
from _optimize_problems import Rosenbrock
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbridge.adapters.optimize._lbfgsb import minimize_lbfgsb
from jaxbridge.adapters.optimize._scipy_loops import followed

needs_driver = pytest.mark.skipif(
    not followed(), reason=f"SciPy {scipy.__version__}: not a version the driver follows"
)


def quartic(scales, centre):
    """``Σ s_i (x_i - c_i)² + (x_0 x_1 - 1)² / 4 + Σ x_i⁴ / 10``, as SciPy's ``fun`` with
    ``jac=True``; NaN where ``x_0 > 50`` (the line search meets it from far starts)."""

    def fun(x):
        assert x.dtype == np.float64 and x.ndim == 1
        couple = x[0] * x[1] - 1
        value = np.sum(scales * (x - centre) ** 2) + couple**2 / 4 + np.sum(x**4) / 10
        grad = 2 * scales * (x - centre) + 0.4 * x**3
        grad[0] += couple * x[1] / 2
        grad[1] += couple * x[0] / 2
        if x[0] > 50:
            return float("nan"), np.full_like(x, np.nan)
        return float(value), grad

    return fun


def rosenbrock(x):
    r = x[1:] - x[:-1] ** 2
    value = np.sum((1 - x[:-1]) ** 2 + 100 * r**2)
    grad = np.zeros_like(x)
    grad[:-1] += -2 * (1 - x[:-1]) - 400 * r * x[:-1]
    grad[1:] += 200 * r
    return float(value), grad


def scipys(fun, x0, bounds=None, tol=None, options=None):
    return scipy.optimize.minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=None if bounds is None else scipy.optimize.Bounds(*bounds),
        tol=tol,
        options=options or {},
    )


def assert_same(ours, theirs):
    assert ours is not None
    np.testing.assert_array_equal(ours.x, theirs.x)
    np.testing.assert_array_equal(ours.jac, theirs.jac)
    assert ours.fun == theirs.fun or (np.isnan(ours.fun) and np.isnan(theirs.fun))
    for key in ("nfev", "njev", "nit", "status", "success", "message"):
        assert ours[key] == theirs[key], key


def counted(fun):
    calls = []

    def wrapped(x):
        calls.append(x.copy())
        return fun(x)

    return wrapped, calls


def evaluated_alike(fun, ours, theirs):
    """``ours(f)`` and ``theirs(f)``, ``f`` recording the points where ``fun`` is evaluated:
    their results, once both evaluated the same points in the same order (nothing that
    SciPy would not evaluate)."""
    ours_fun, ours_calls = counted(fun)
    theirs_fun, theirs_calls = counted(fun)
    results = ours(ours_fun), theirs(theirs_fun)
    assert len(ours_calls) == len(theirs_calls)
    for a, b in zip(ours_calls, theirs_calls):
        np.testing.assert_array_equal(a, b)
    return results


@needs_driver
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 6),
    seed=st.integers(0, 2**32 - 1),
    bounded=st.sampled_from(["none", "box", "one-sided", "one fixed"]),
    options=st.sampled_from(
        [
            {},
            {"gtol": 1e-10, "ftol": 1e-15},
            {"maxiter": 3},
            {"maxfun": 6},
            {"maxls": 1},
            {"maxcor": 3, "gtol": 1e-12},
        ]
    ),  # fmt: skip
    tol=st.sampled_from([None, 1e-7]),
)
def test_the_same_as_scipys_minimize(n, seed, bounded, options, tol):
    rng = np.random.default_rng(seed)
    fun = quartic(rng.uniform(0.01, 3.0, n), rng.uniform(-2, 2, n))
    x0 = rng.uniform(-3, 3, n) * 10 ** rng.integers(0, 2)
    bounds = None
    if bounded != "none":
        lower, upper = rng.uniform(-2.5, -0.5, n), rng.uniform(0.5, 2.5, n)
        if bounded == "one-sided":
            lower[::2], upper[1::2] = -np.inf, np.inf
        if bounded == "one fixed":
            lower[0] = upper[0] = 0.3
        bounds = (lower, upper)
    ours, theirs = evaluated_alike(
        fun,
        lambda f: minimize_lbfgsb(f, x0, bounds, tol, dict(options)),
        lambda f: scipys(f, x0, bounds, tol, dict(options)),
    )
    assert_same(ours, theirs)


@needs_driver
def test_every_ending_is_scipys():
    """Converged (status 0), stopped by maxiter or maxfun (1), a line search that finds
    only NaN (2): each result the same as SciPy's."""
    start = np.array([1.0, 2.0])

    def nan_but_at_start(x):
        if np.array_equal(x, start):
            return float(x @ x), 2 * x
        return float("nan"), np.full(2, np.nan)

    fun = quartic(np.array([1.0, 0.5]), np.array([1.0, -1.0]))
    cases = [
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), {}),
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), {"maxiter": 5}),
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), {"maxfun": 4}),
        (fun, np.array([40.0, 1.0]), {"maxls": 2}),
        (nan_but_at_start, start, {}),
    ]
    statuses = set()
    for f, x0, options in cases:
        ours = minimize_lbfgsb(f, x0, None, None, dict(options))
        theirs = scipys(f, x0, options=dict(options))
        assert_same(ours, theirs)
        statuses.add(theirs.status)
    assert statuses == {0, 1, 2}


@pytest.mark.parametrize(
    "bounds, options",
    [
        ((np.array([0.5, 0.5]), np.array([0.5, 0.5])), {}),  # every variable fixed
        (None, {"iprint": 1}),  # an option SciPy deprecates, with its warning
        (None, {"maxls": 0}),  # SciPy's error
        (None, {"eps": 1e-6}),  # only for finite differences: not known here
    ],
)
def test_scipys_own_call_where_only_it_is_exact(bounds, options):
    assert minimize_lbfgsb(rosenbrock, np.array([0.1, 0.2]), bounds, None, options) is None


def test_minimize_gives_scipys_answer_to_the_bit():
    """Through the adapter (its default tight tolerances): x as SciPy's own call finds it,
    before the adapter's Newton refinement, which the driver does not touch."""
    from jaxbridge.adapters.optimize._functions import HostFunction
    from jaxbridge.adapters.optimize._minimizing import defaults, run_minimize

    f = HostFunction(Rosenbrock(), np.array([1.0, 100.0]))
    x0 = np.array([-1.2, 1.0])
    ours = run_minimize(f, x0, "L-BFGS-B", None, ())
    theirs = scipy.optimize.minimize(
        f.value_and_gradient, x0, jac=True, method="L-BFGS-B",
        options=defaults("L-BFGS-B", None),
    )  # fmt: skip
    assert_same(ours, theirs)
    assert ours.success and np.abs(ours.x - 1).max() < 1e-6
