"""``Quad``: closed forms over finite and infinite limits with their Leibniz-rule gradients,
forward mode, jit/vmap/jacrev, ``check_adapter``, and the failures."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _integrate_cases import BadGradient, Exponential, GaussianCosine, Reciprocal

import jaxbridge as jb
from jaxbridge.adapters.integrate import Quad

INF = np.inf


def test_exponential_decay_to_infinity():
    """``∫_0^∞ exp(-λ x) dx = 1/λ``, here as ``exp(θ x)`` with ``θ = -λ``: ``∂/∂θ = 1/λ²``
    (``-∂/∂λ``), ``∂/∂a = -f(0) = -1``, and 0 at the infinite limit."""
    with jax.enable_x64(True):
        quad = Quad(Exponential(), epsabs=1e-12, epsrel=1e-12)
        theta = jnp.array([-2.5])  # Exponential is exp(θ x): θ = -2.5 decays
        value, grads = jax.value_and_grad(quad, (0, 1, 2))(theta, 0.0, INF)
        grads = tuple(map(np.asarray, grads))
    np.testing.assert_allclose(value, 1 / 2.5, rtol=1e-12)
    np.testing.assert_allclose(grads[0], [1 / 2.5**2], rtol=1e-10)
    np.testing.assert_allclose(grads[1], -1.0, rtol=1e-14)
    assert grads[2] == 0.0


@pytest.mark.parametrize("limits", [(-INF, INF), (0.0, INF), (-INF, 0.0)])
def test_gaussian_cosine_over_infinite_limits(limits):
    """``∫_{-∞}^{∞} exp(-x²) cos(s x) dx = √π exp(-s²/4)`` (half of it on each half-line),
    with ``s = Σθ``: every ``θ_j`` has the gradient ``-(s/2) √π exp(-s²/4)`` (halved)."""
    with jax.enable_x64(True):
        quad = Quad(GaussianCosine(), epsabs=1e-13, epsrel=1e-12)
        theta = jnp.array([0.7, 0.5])
        value, grads = jax.jit(jax.value_and_grad(quad, (0, 1, 2)))(theta, *limits)
        grads = tuple(map(np.asarray, grads))
    s = 1.2
    share = 1.0 if limits == (-INF, INF) else 0.5
    np.testing.assert_allclose(value, share * np.sqrt(np.pi) * np.exp(-(s**2) / 4), rtol=1e-12)
    expected = -share * s / 2 * np.sqrt(np.pi) * np.exp(-(s**2) / 4)
    np.testing.assert_allclose(grads[0], [expected, expected], rtol=1e-10)
    # a finite limit at 0: ∓f(0) = ∓1
    assert grads[1] == (-1.0 if limits[0] == 0.0 else 0.0)
    assert grads[2] == (1.0 if limits[1] == 0.0 else 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finite_limits_in_both_directions_and_forward_mode(dtype):
    """``∫_a^b exp(θ x) dx = (exp(θ b) - exp(θ a)) / θ`` with its exact derivatives in θ, a
    and b, for b > a and b < a; by ``grad`` and by ``jacfwd`` (forward mode)."""

    def closed(t, a, b):
        value = (np.exp(t * b) - np.exp(t * a)) / t
        dtheta = (b * np.exp(t * b) - a * np.exp(t * a)) / t - value / t
        return value, (np.array([dtheta]), -np.exp(t * a), np.exp(t * b))

    tol = 1e-10 if dtype == np.float64 else 2e-6
    with jax.enable_x64(dtype == np.float64):
        quad = Quad(Exponential(), epsabs=1e-13, epsrel=1e-12)
        for a, b in [(-0.5, 1.5), (1.5, -0.5)]:
            args = (np.array([0.8], dtype), np.array(a, dtype), np.array(b, dtype))
            value, grads = jax.jit(jax.value_and_grad(quad, (0, 1, 2)))(*args)
            forward = jax.jit(jax.jacfwd(quad, (0, 1, 2)))(*args)
            assert value.dtype == dtype and all(g.dtype == dtype for g in grads)
            expected_value, expected = closed(0.8, a, b)
            np.testing.assert_allclose(value, expected_value, rtol=tol)
            for g, f, e in zip(grads, forward, expected):
                np.testing.assert_allclose(g, e, rtol=tol)
                np.testing.assert_allclose(f, e, rtol=tol)


class Power(jb.Adapter):
    """``x^θ``: integrable singularities at 0 (``θ > -1``) and slow tails (``θ < -1``)."""

    signature = "(),(p)->()"

    def forward(self, x, theta):
        with np.errstate(divide="ignore"):  # inf at 0 (∂/∂a there, for the Leibniz rule)
            return x ** theta[0]

    def backward(self, res, g):
        x, theta, f = res
        with np.errstate(divide="ignore", invalid="ignore"):
            return None, np.array([g * f * np.log(x)])


@pytest.mark.parametrize(
    "theta, a, b, derivative",
    [
        (-0.5, 0.0, 1.0, -1 / 0.5**2),  # ∫_0^1 x^θ = 1/(θ+1): ∂/∂θ = -1/(θ+1)²
        (-1.5, 1.0, INF, 1 / 0.5**2),  # ∫_1^∞ x^θ = -1/(θ+1): ∂/∂θ = 1/(θ+1)²
    ],
)
def test_derivatives_of_integrals_that_quadpack_extrapolates(theta, a, b, derivative):
    """The derivative's integrand (``x^θ log x``) is singular where the value's is: QUADPACK
    settles the value in 50 subintervals by extrapolation, and the derivative's ``quad_vec``,
    which bisects, was held to the same 50 and failed."""
    with jax.enable_x64(True):
        quad = Quad(Power())
        t = jnp.array([theta])
        np.testing.assert_allclose(quad(t, a, b), 1 / abs(theta + 1), rtol=1e-8)
        np.testing.assert_allclose(jax.grad(quad)(t, a, b), [derivative], rtol=1e-8)
        _, tangent = jax.jvp(lambda t: quad(t, a, b), (t,), (jnp.ones(1),))
        np.testing.assert_allclose(tangent, derivative, rtol=1e-8)


class Wave(jb.Adapter):
    """``θ₀ sin x + θ₁``: over a period, ``∂/∂θ₀`` integrates to exactly 0."""

    signature = "(),(p)->()"

    def forward(self, x, theta):
        return theta[0] * np.sin(x) + theta[1]

    def backward(self, res, g):
        x, _, _ = res
        return None, g * np.array([np.sin(x), 1.0])


def test_a_derivative_component_that_integrates_to_zero_with_no_absolute_target():
    """``epsabs = 0``: the derivative's error target is relative to the whole gradient, so a
    component that cancels to 0 does not fail it (integrated alone, it cannot meet it)."""
    with jax.enable_x64(True):
        quad = Quad(Wave(), epsabs=0.0)
        theta = jnp.array([1.0, 1.0])
        np.testing.assert_allclose(
            jax.grad(quad)(theta, 0.0, 2 * np.pi), [0, 2 * np.pi], atol=1e-12
        )


def test_vmap_and_jacrev_against_one_call_each():
    with jax.enable_x64(True):
        quad = Quad(GaussianCosine())
        thetas = jnp.array([[0.7, 0.5], [0.1, -0.3], [2.0, 0.0]])
        bs = jnp.array([0.5, 1.0, INF])
        values = jax.jit(jax.vmap(quad, (0, None, 0)))(thetas, -1.0, bs)
        jac = jax.jit(jax.jacrev(lambda th: jax.vmap(quad, (0, None, 0))(th, -1.0, bs)))(thetas)
        for i in range(3):
            np.testing.assert_allclose(values[i], quad(thetas[i], -1.0, bs[i]), rtol=1e-14)
            np.testing.assert_allclose(jac[i, i], jax.grad(quad)(thetas[i], -1.0, bs[i]))
            assert not np.any(np.delete(np.asarray(jac[i]), i, axis=0))  # no cross terms


@pytest.mark.slow
def test_check_adapter():
    from jaxbridge.testing import check_adapter

    quad = Quad(GaussianCosine(), epsabs=1e-12, epsrel=1e-12)
    args = (np.array([0.7, -0.4]), np.array(-0.5), np.array(1.5))
    with jax.enable_x64(True):
        check_adapter(quad, *args)
    check_adapter(quad, *(a.astype(np.float32) for a in args))


def test_a_divergent_integral_names_forward_and_quotes_quadpack():
    quad = Quad(Reciprocal())
    with pytest.raises(RuntimeError, match=r"Quad\.forward.*QUADPACK did not reach"):
        quad(jnp.zeros(1), 0.0, 1.0)
    # under jit too, its own type (read in the block: a GPU reports it at the read)
    with pytest.raises(RuntimeError, match=r"Quad\.forward.*QUADPACK did not reach"):
        with jb.host_errors():
            jax.jit(quad)(jnp.zeros(1), 0.0, 1.0).block_until_ready()
    values = jax.vmap(Quad(Reciprocal(), on_failure="nan"), (None, 0, None))(
        jnp.zeros(1), jnp.array([0.0, 0.5]), 1.0
    )
    assert np.isnan(values[0])
    np.testing.assert_allclose(values[1], np.log(2), rtol=1e-6)


def test_a_failed_derivative_integral_names_backward():
    quad = Quad(BadGradient())  # ∂f/∂θ is NaN for x > 1
    with pytest.raises(RuntimeError, match=r"Quad\.backward.*∂f/∂θ"):
        jax.grad(quad)(jnp.array([0.5]), 0.0, 2.0)
    grad = jax.grad(Quad(BadGradient(), on_failure="nan"))(jnp.array([0.5]), 0.0, 2.0)
    assert np.isnan(grad).all()


def test_bad_inputs_and_parameters_are_refused_clearly():
    with pytest.raises(RuntimeError, match=r"Quad\.forward.*non-finite"):
        Quad(GaussianCosine())(jnp.array([jnp.nan]), 0.0, 1.0)
    with pytest.raises(RuntimeError, match=r"Quad\.forward.*limit is NaN"):
        Quad(GaussianCosine())(jnp.array([1.0]), jnp.nan, 1.0)
    with pytest.raises(ValueError, match=r"'integrand' \(Exponential\) must have signature"):
        Quad(type("Exponential", (Exponential,), {"signature": "(n),(p)->()"})())
    with pytest.raises(TypeError, match=r"'integrand' must be a jaxbridge.Adapter"):
        Quad(np.sin)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'limit' must be a positive integer"):
        Quad(Exponential(), limit=0)
    with pytest.raises(ValueError, match=r"'on_failure' must be one of"):
        Quad(Exponential(), on_failure="zero")
