"""``scipy.linalg``'s call forms: ``solve``, ``solve_sylvester`` and
``solve_continuous_lyapunov`` against SciPy's own calls, their gradients against central
differences of SciPy's, and SciPy's arguments that ``solve`` does not take refused by name."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.linalg

from jaxbridge.adapters.linalg import solve, solve_continuous_lyapunov, solve_sylvester

pytestmark = pytest.mark.usefixtures("x64")

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
SPD = A @ A.T + np.eye(4)
B = RNG.standard_normal((3, 3)) + 3 * np.eye(3)


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize(
    "b, kw",
    [
        (RNG.standard_normal(4), {}),
        (RNG.standard_normal((4, 3)), {}),
        (RNG.standard_normal((4, 3)), {"transposed": True}),
        (RNG.standard_normal(4), {"assume_a": "gen", "check_finite": False}),
    ],
    ids=["vector", "matrix", "transposed", "keywords"],
)
def test_solve_is_scipys_solve(b, kw):
    np.testing.assert_allclose(solve(A, b, **kw), scipy.linalg.solve(A, b, **kw), rtol=1e-13)
    np.testing.assert_allclose(
        jax.jit(lambda a, b: solve(a, b, **kw))(A, b), scipy.linalg.solve(A, b, **kw), rtol=1e-13
    )


def test_solve_pos_is_scipys_on_a_symmetric_matrix():
    b = RNG.standard_normal((4, 2))
    np.testing.assert_allclose(
        solve(SPD, b, assume_a="pos"), scipy.linalg.solve(SPD, b, assume_a="pos"), rtol=1e-12
    )


def _central(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("transposed", [False, True])
def test_solves_gradients_are_scipys_differences(transposed):
    b = RNG.standard_normal((4, 2))
    w = RNG.standard_normal((4, 2))

    def loss(solver):
        return lambda a, b: (w * solver(a, b, transposed=transposed)).sum()

    ga, gb = jax.grad(loss(solve), (0, 1))(A, b)
    np.testing.assert_allclose(
        ga, _central(lambda a: loss(scipy.linalg.solve)(a, b), A), rtol=1e-7, atol=1e-9
    )
    np.testing.assert_allclose(
        gb, _central(lambda b_: loss(scipy.linalg.solve)(A, b_), b), rtol=1e-7, atol=1e-9
    )


def test_sylvester_and_lyapunov_are_scipys():
    q = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(
        solve_sylvester(A, B, q), scipy.linalg.solve_sylvester(A, B, q), rtol=1e-12
    )
    q2 = RNG.standard_normal((4, 4))
    np.testing.assert_allclose(
        solve_continuous_lyapunov(A, q2), scipy.linalg.solve_continuous_lyapunov(A, q2), rtol=1e-12
    )
    g = jax.grad(lambda a: solve_continuous_lyapunov(a, q2)[0, 1])(A)
    want = _central(lambda a: scipy.linalg.solve_continuous_lyapunov(a, q2)[0, 1], A)
    np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("kind", ["sym", "her", "diagonal", "banded", "upper triangular"])
def test_structures_linear_solve_does_not_factorize_are_refused_by_name(kind):
    with pytest.raises(ValueError, match=f"solve: assume_a='{kind}' is not supported"):
        solve(A, np.ones(4), assume_a=kind)
