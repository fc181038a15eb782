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


def test_banded_is_refused_by_name():
    with pytest.raises(ValueError, match="solve: assume_a='banded' is not supported"):
        solve(A, np.ones(4), assume_a="banded")


STRUCTURES = [
    "gen", "general", "pos", "positive definite", "sym", "symmetric", "her", "hermitian",
    "diagonal", "tridiagonal", "upper triangular", "lower triangular",
]  # fmt: skip


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("kind", STRUCTURES)
def test_every_structure_reads_what_scipy_reads_and_its_gradient_is_scipys(kind, lower, transposed):
    """SciPy reads one triangle for 'pos', 'sym' and 'her' (``lower``), the band for the
    others: 'pos' on np.tril(S) with lower=True was read as (a + aᵀ)/2 (21% off), and the
    long names of SciPy 1.17 were refused."""
    s = A @ A.T + 4 * np.eye(4)  # positive definite; then only one triangle given
    a = (
        (np.tril(s) if lower else np.triu(s))
        if kind in ("pos", "positive definite")
        else A + 0.5 * A.T
    )
    b = RNG.standard_normal(4)
    kw = dict(assume_a=kind, lower=lower, transposed=transposed)
    want = scipy.linalg.solve(a, b, **kw)
    np.testing.assert_allclose(solve(a, b, **kw), want, rtol=1e-12, atol=1e-14)
    w = RNG.standard_normal(4)
    ga = jax.grad(lambda a: w @ solve(a, b, **kw))(a)
    np.testing.assert_allclose(
        ga, _central(lambda a: w @ scipy.linalg.solve(a, b, **kw), a), rtol=1e-6, atol=1e-9
    )
