"""SciPy's BDF and Radau with direct LAPACK LU calls (``adapters/integrate/_lapack.py``): the
same solve as SciPy's own, to the bit, with SciPy's checks."""

import warnings

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.sparse
from _integrate_cases import Robertson

from jaxbridge.adapters._shared._failure import IntegrationFailure
from jaxbridge.adapters.integrate._lapack import _factor, _solve, direct, solved, solver_class

THETA = np.log([0.04, 3.0e7, 1.0e4])
RHS = Robertson()


def robertson(t, y, theta):
    return RHS.forward(t, y, theta)


def robertson_jacobian(t, y, theta):
    return RHS.jacobian(t, y, theta)


def sparse_jacobian(t, y, theta):
    return scipy.sparse.csc_matrix(robertson_jacobian(t, y, theta))


@pytest.mark.parametrize("method", ["BDF", "Radau"])
@pytest.mark.parametrize("jac", [robertson_jacobian, sparse_jacobian, None])
def test_the_solve_is_scipys_to_the_bit(method, jac):
    ts = np.linspace(0.0, 40.0, 9)
    solves = [
        scipy.integrate.solve_ivp(
            robertson,
            (0.0, 40.0),
            [1.0, 0.0, 0.0],
            method=m,
            t_eval=ts,
            args=(THETA,),
            jac=jac,
            rtol=1e-6,
            atol=1e-10,
            dense_output=True,
        )
        for m in (method, solver_class(method))
    ]
    scipys, ours = solves
    assert ours.status == 0 and scipys.nfev > 100
    assert np.array_equal(ours.y, scipys.y)
    assert np.array_equal(ours.sol(ts[::2] + 0.3), scipys.sol(ts[::2] + 0.3))
    assert (ours.nfev, ours.njev, ours.nlu) == (scipys.nfev, scipys.njev, scipys.nlu)


def test_the_solver_uses_the_direct_calls_for_dense_jacobians_only():
    def solver(jac):
        fun = lambda t, y: robertson(t, y, THETA)  # noqa: E731
        return solver_class("BDF")(fun, 0.0, np.array([1.0, 0.0, 0.0]), 1.0, jac=jac)

    assert solver(lambda t, y: robertson_jacobian(t, y, THETA)).solve_lu is _solve
    assert solver(lambda t, y: sparse_jacobian(t, y, THETA)).solve_lu is not _solve


def test_other_methods_and_classes_are_left_as_they_are():
    assert solver_class("RK45") == "RK45" and solver_class("LSODA") == "LSODA"
    assert direct(scipy.integrate.RK45) is scipy.integrate.RK45
    assert issubclass(direct(scipy.integrate.Radau), scipy.integrate.Radau)
    assert direct(scipy.integrate.BDF) is direct(scipy.integrate.BDF)  # made once


def test_under_a_scipy_not_compared_the_solvers_keep_their_own_calls(monkeypatch):
    from jaxbridge.adapters.integrate import _lapack

    monkeypatch.setattr(_lapack, "STEPS_FOLLOWED", False)
    made = direct.__wrapped__  # (the cached classes were made under the SciPy installed)
    assert made(scipy.integrate.BDF) is scipy.integrate.BDF
    assert made(scipy.integrate.Radau) is scipy.integrate.Radau


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_factor_and_solve_are_lu_factor_and_lu_solve(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(5, 5)).astype(dtype), rng.normal(size=5).astype(dtype)
    if dtype is np.complex128:  # (Radau's second system)
        a += 1j * rng.normal(size=(5, 5))
    factors = _factor(a.copy(order="F"))
    expected = scipy.linalg.lu_factor(a.copy(order="F"), overwrite_a=True)
    assert all(np.array_equal(x, y) for x, y in zip(factors, expected))
    assert np.array_equal(_solve(factors, b.copy()), scipy.linalg.lu_solve(expected, b.copy()))


def test_scipys_checks_are_kept():
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        _factor(np.array([[1.0, np.nan], [0.0, 1.0]]))
    factors = _factor(np.eye(2))
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        _solve(factors, np.array([1.0, np.inf]))
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        _factor(np.array([[1.0, 1.0], [1.0, 1.0]]))
    assert [str(w.message) for w in warned] == [
        "Diagonal number 2 is exactly zero. Singular matrix."
    ]


def test_a_singular_system_of_the_derivatives_is_a_failure_naming_them():
    for matrix in (np.ones((2, 2)), scipy.sparse.csc_array(np.ones((2, 2))), np.eye(2) * np.nan):
        with pytest.raises(IntegrationFailure, match="the adjoint through the BDF steps met a"):
            solved(matrix, np.ones(2), "the adjoint through the BDF steps")
    np.testing.assert_array_equal(solved(2 * np.eye(2), np.ones(2), "it"), [0.5, 0.5])
