"""``LeastSquares`` on a linear model (``∂β/∂y = pinv(X)``) and a nonlinear growth curve
(against the implicit function theorem worked out by hand), and its failures."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
from _optimize_problems import DESIGN, SECOND_ORDER, Growth, LinearModel

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
        check_adapter(fit, np.array([2.0, 0.8]), np.asarray(ys[0]), rtol={"hessian": SECOND_ORDER})


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


# ------------------------------------------------------------------- many parameters

_TIMES = np.linspace(0.0, 3.0, 400)
_P = 200  # each datum is compared at two times, t and t + 1.5


class _TwiceMeasured(jb.Adapter):
    """``a e^{-k tᵢ} + c - θ_{i mod p}``: x = (a, k, c), 400 residuals, 200 parameters.
    Vectorized, no hooks; ``full`` counts the backward calls that build a whole Jacobian
    (one unit cotangent per residual), ``batches`` records the batch of x in them."""

    signature = "(n),(p)->(m)"
    vectorized = True

    def __init__(self):
        object.__setattr__(self, "full", [0])
        object.__setattr__(self, "batches", set())

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct((len(_TIMES),), x.dtype)

    def forward(self, x, theta):
        e = np.exp(-x[..., 1:2] * _TIMES)
        return x[..., :1] * e + x[..., 2:] - np.concatenate([theta, theta], -1)

    def backward(self, res, g):
        x, _, _ = res
        if g.ndim == 2 and len(g) == len(_TIMES):
            self.full[0] += 1
            self.batches.add(x.shape[:-1])
        ge = g * np.exp(-x[..., 1:2] * _TIMES)
        gx = np.stack([ge.sum(-1), -x[..., 0] * (ge @ _TIMES), g.sum(-1)], -1)
        return gx, -(g[..., :_P] + g[..., _P:])


def _twice_measured_data():
    noise = 0.05 * np.random.default_rng(3).standard_normal(_P)
    return 1.5 * np.exp(-0.7 * _TIMES[:_P]) + 0.3 + noise


def _twice_measured_sensitivity(x):
    """``∂x/∂θ = -H⁻¹ Jᵀ R_θ`` with ``H = JᵀJ + Σ rᵢ ∇²rᵢ``, worked out by hand."""
    a, k, c = x
    e = np.exp(-k * _TIMES)
    r = a * e + c - np.concatenate([_twice_measured_data()] * 2)
    jac = np.stack([e, -a * _TIMES * e, np.ones_like(e)], -1)
    mixed = -r @ (_TIMES * e)  # Σ rᵢ ∂²rᵢ/∂a∂k
    curvature = np.array([[0, mixed, 0], [mixed, r @ (a * _TIMES**2 * e), 0], [0, 0, 0]])
    by_theta = -(jac[:_P] + jac[_P:]).T  # Jᵀ R_θ
    return -np.linalg.solve(jac.T @ jac + curvature, by_theta)


def test_many_parameters_gradient_by_hand():
    """400 residuals in 200 parameters: the sensitivities equal the implicit function
    theorem worked out by hand, in both modes; the curvature term matters."""
    residual = _TwiceMeasured()
    fit = LeastSquares(residual)
    with jax.enable_x64(True):
        x0, theta = jnp.array([1.0, 1.0, 0.0]), jnp.asarray(_twice_measured_data())
        x = np.asarray(jax.jit(fit)(x0, theta))
        expected = _twice_measured_sensitivity(x)
        np.testing.assert_allclose(jax.jit(jax.jacrev(fit, 1))(x0, theta), expected, rtol=1e-10)
        np.testing.assert_allclose(jax.jit(jax.jacfwd(fit, 1))(x0, theta), expected, rtol=1e-10)


def test_value_builds_whole_jacobians_only_for_scipy_and_the_solution():
    """Without hooks a whole Jacobian is one backward call per residual: SciPy's iterations
    need one each and the checks one at the refined solution; at SciPy's answer its own last
    one serves again (remembered, not recomputed). Second derivatives come from one backward call (cotangent ``r``) per difference point,
    never from whole Jacobians there."""
    residual = _TwiceMeasured()
    data = _twice_measured_data()
    x0 = np.array([1.0, 1.0, 0.0])

    def jacobian(x):
        return residual.backward((x[None], data[None], None), np.eye(len(_TIMES)))[0]

    direct = scipy.optimize.least_squares(
        lambda x: residual.forward(x, data), x0, jac=jacobian, ftol=1e-12, xtol=1e-12, gtol=1e-12
    )
    residual.full[0] = 0
    residual.batches.clear()
    with jax.enable_x64(True):
        x = LeastSquares(residual)(jnp.asarray(x0), jnp.asarray(data))
    # the same run of SciPy: its answer (stopped by its step size) then refined
    np.testing.assert_allclose(x, direct.x, rtol=1e-5)
    assert residual.full[0] == direct.njev + 1
    # x comes once, broadcast against the cotangents: e^{-k t} is computed once per call
    assert residual.batches == {(1,)}


class _HookedGrowth(Growth):
    """``Growth`` with a ``jacobian`` hook and a backward that must not be called."""

    def jacobian(self, x, y):
        t = np.linspace(0, 1, len(y))
        e = np.exp(x[1] * t)
        return np.stack([e, x[0] * t * e], axis=1), -np.eye(len(y))

    def backward(self, res, g):
        raise AssertionError("the jacobian hook serves every derivative")


def test_a_jacobian_hook_serves_the_curvature_too():
    fit = LeastSquares(_HookedGrowth())
    with jax.enable_x64(True):
        y = jnp.asarray(2.0 * np.exp(0.8 * np.linspace(0, 1, 4)) + [1.0, -1.0, -1.0, 1.0])
        x = fit(jnp.array([1.0, 1.0]), y)
        jac = jax.jacrev(fit, 1)(jnp.array([1.0, 1.0]), y)
        np.testing.assert_allclose(jac, _growth_sensitivity(np.asarray(x), np.asarray(y)), 1e-10)
