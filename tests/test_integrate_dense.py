"""The dense output as the adjoint reads it (``adapters/integrate/_dense.py``): SciPy's
``OdeSolution`` to the bit, in any order of times, at the steps' ends and beyond the span,
for every method and for the LAPACK classes the solves use."""

import numpy as np
import pytest
import scipy.integrate
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbridge.adapters.integrate import _dense
from jaxbridge.adapters.integrate._dense import Interpolant
from jaxbridge.adapters.integrate._lapack import solver_class

METHODS = ["RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA"]


def lotka_volterra(t, y):
    return np.array([1.5 * y[0] - y[0] * y[1], y[0] * y[1] - 3.0 * y[1]])


def solution(method, lapack):
    kind = solver_class(method) if lapack else method
    sol = scipy.integrate.solve_ivp(
        lotka_volterra, (0.0, 4.0), [1.0, 0.5], method=kind, dense_output=True, rtol=1e-6
    )
    assert sol.success
    return sol.sol


def times(sol, rng):
    """Random times, every step's ends and their neighbours, and times beyond the span."""
    ends = sol.ts
    near = np.concatenate([np.nextafter(ends, -np.inf), ends, np.nextafter(ends, np.inf)])
    return np.concatenate([rng.uniform(-0.5, 4.5, 200), near])


@pytest.mark.skipif(not _dense.FOLLOWED, reason="a SciPy whose classes _dense does not read")
@pytest.mark.parametrize("lapack", [False, True])
@pytest.mark.parametrize("method", METHODS)
def test_scipys_values_to_the_bit_in_every_order(method, lapack):
    sol, rng = solution(method, lapack), np.random.default_rng(0)
    assert sol.n_segments > 10  # many steps: the search has somewhere to go
    ts = times(sol, rng)
    for order in (np.sort(ts), np.sort(ts)[::-1], rng.permutation(ts)):
        interpolant = Interpolant(sol, 0.0, 1.0)
        for t in order:
            assert np.array_equal(interpolant(float(t)), sol(t)), (method, t)


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(["RK45", "Radau", "BDF"]),
    st.floats(-3.0, 3.0),
    st.lists(st.floats(0.0, 4.0), min_size=1, max_size=30),
)
def test_a_shifted_or_reversed_time_is_the_solvers_own(method, start, offsets):
    """The solver ran in ``|t - start|``: ``t`` on either side of ``start`` maps onto it."""
    sol = solution(method, True)
    for sign in (1.0, -1.0):
        interpolant = Interpolant(sol, start, sign)
        for s in offsets:
            t = start + sign * s
            assert np.array_equal(interpolant(t), sol(sign * (t - start)))


def test_another_scipy_is_asked_for_every_value(monkeypatch):
    """Under a SciPy version the classes were not checked against, nothing of theirs is
    read: the solution's own call gives each value."""
    sol = solution("RK45", True)
    monkeypatch.setattr(_dense, "FOLLOWED", False)

    def unread(step, s):
        raise AssertionError("a step's internals were read")

    monkeypatch.setattr(_dense, "_evaluate", unread)
    interpolant = Interpolant(sol, 1.0, -1.0)
    for t in (1.0, 0.3, -2.5):
        assert np.array_equal(interpolant(t), sol(1.0 - t))
