"""``LeastSquares`` on a linear model (``∂β/∂y = pinv(X)``) and a nonlinear growth curve
(against the implicit function theorem worked out by hand), and its failures."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _optimize_problems import DESIGN, Growth, LinearModel

import jaxbridge as jb
from jaxbridge.adapters.optimize import LeastSquares, OptimizeError
from jaxbridge.testing import check_adapter

Y = np.array([1.0, 2.5, 2.9, 4.2])


@pytest.mark.parametrize("method", ["trf", "dogbox", "lm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_least_squares(method, dtype):
    fit = LeastSquares(LinearModel(), method=method)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    with jax.enable_x64(dtype == np.float64):
        x0, y = jnp.zeros(2, dtype), jnp.asarray(Y, dtype)
        beta = jax.jit(fit)(x0, y)
        assert beta.dtype == dtype
        np.testing.assert_allclose(beta, np.linalg.lstsq(DESIGN, Y)[0], rtol=tol)
        jac = jax.jit(jax.jacrev(fit, (0, 1)))(x0, y)
        assert np.all(np.asarray(jac[0]) == 0)
        np.testing.assert_allclose(jac[1], np.linalg.pinv(DESIGN), atol=tol)
        np.testing.assert_allclose(jax.jacfwd(fit, 1)(x0, y), np.linalg.pinv(DESIGN), atol=tol)


def _growth_sensitivity(x, y, curvature=True):
    """``∂(a, k)/∂y = H⁻¹ Jᵀ`` with ``H = JᵀJ + Σ rᵢ ∇²rᵢ``, derived by hand (without the
    second term: the Gauss-Newton approximation, ``pinv(J)``)."""
    a, k = x
    t = np.linspace(0, 1, len(y))
    e = np.exp(k * t)
    r = a * e - y
    jac = np.stack([e, a * t * e], axis=1)
    second = np.array([[0, r @ (t * e)], [r @ (t * e), r @ (a * t**2 * e)]])
    return np.linalg.solve(jac.T @ jac + curvature * second, jac.T)


def test_nonlinear_least_squares_sensitivity():
    fit = LeastSquares(Growth())
    with jax.enable_x64(True):
        y = jnp.asarray(2.0 * np.exp(0.8 * np.linspace(0, 1, 4)) + [1.0, -1.0, -1.0, 1.0])
        x = fit(jnp.array([1.0, 1.0]), y)
        jac = jax.jacrev(fit, 1)(jnp.array([1.0, 1.0]), y)
        expected = _growth_sensitivity(np.asarray(x), np.asarray(y))
        np.testing.assert_allclose(jac, expected, rtol=1e-10)
        np.testing.assert_allclose(jax.jacfwd(fit, 1)(jnp.array([1.0, 1.0]), y), expected, 1e-10)
        # the fit leaves residuals, so the curvature term matters: Gauss-Newton is 25% off
        gauss_newton = _growth_sensitivity(np.asarray(x), np.asarray(y), curvature=False)
        assert np.max(np.abs(gauss_newton - expected)) > 0.2 * np.max(np.abs(expected))


@pytest.mark.slow
def test_vmap_and_check_adapter():
    fit = LeastSquares(Growth())
    with jax.enable_x64(True):
        base = 2.0 * np.exp(0.8 * np.linspace(0, 1, 4))
        ys = jnp.asarray(base + np.random.default_rng(0).uniform(-0.1, 0.1, (3, 4)))
        x0s = jnp.ones((3, 2))
        got = jax.jit(jax.vmap(fit))(x0s, ys)
        np.testing.assert_allclose(got, [fit(x0, y) for x0, y in zip(x0s, ys)], atol=1e-15)
        check_adapter(fit, np.array([2.0, 0.8]), np.asarray(ys[0]))


class Collinear(jb.Adapter):
    """``(x₀ + x₁) t - y``: only the sum is determined."""

    signature = "(n),(p)->(p)"

    def forward(self, x, y):
        return (x[0] + x[1]) * np.arange(len(y)) - y

    def backward(self, res, g):
        _, y, _ = res
        s = g @ np.arange(len(y))
        return np.array([s, s]), -g


def test_underdetermined_fit_raises_or_gives_nan():
    with jax.enable_x64(True):
        with pytest.raises(OptimizeError, match="not isolated|singular|not a strict"):
            LeastSquares(Collinear())(jnp.zeros(2), jnp.asarray(Y))
        x = LeastSquares(Collinear(), on_failure="nan")(jnp.zeros(2), jnp.asarray(Y))
        assert np.isnan(x).all()


def test_unsupported_options_are_refused():
    with pytest.raises(ValueError, match="option 'loss' is not supported"):
        LeastSquares(LinearModel(), options=(("loss", "soft_l1"),))
