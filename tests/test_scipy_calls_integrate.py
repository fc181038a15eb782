"""SciPy's ``solve_ivp`` and ``quad`` with a JAX function (``jaxbridge.adapters.integrate``):
SciPy's solution, and derivatives in ``args``, ``y0`` and ``t_eval`` against closed forms
and central differences of SciPy's own call."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

from jaxbridge.adapters.integrate import quad, solve_ivp

TIGHT = {"rtol": 1e-10, "atol": 1e-12}
TIMES = np.linspace(0.0, 2.0, 5)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def decay(t, y, k):
    return -k * y


def van_der_pol(t, y, mu):
    return jnp.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_solve_ivp_is_the_solution_and_its_derivatives_the_closed_forms(method):
    y0 = jnp.array([1.0, 2.0])

    def last(k):
        return solve_ivp(decay, (0, 2), y0, method=method, t_eval=TIMES, args=(k,), **TIGHT).y

    result = solve_ivp(decay, (0, 2), y0, method=method, t_eval=TIMES, args=(0.7,), **TIGHT)
    assert result.y.shape == (2, 5) and bool(result.success)
    np.testing.assert_allclose(result.t, TIMES)
    exact = np.array([1.0, 2.0])[:, None] * np.exp(-0.7 * TIMES)
    np.testing.assert_allclose(result.y, exact, rtol=1e-7)
    # d y(t)/dk = -t y(t); d²/dk² = t² y(t)
    np.testing.assert_allclose(jax.jacobian(last)(0.7), -TIMES * exact, rtol=1e-6, atol=1e-9)
    if method in ("BDF", "Radau", "RK45"):
        second = jax.hessian(lambda k: last(k)[0, -1])(0.7)
        np.testing.assert_allclose(second, 4.0 * exact[0, -1], rtol=1e-5)


def test_solve_ivp_on_a_stiff_problem_as_scipy_and_its_derivatives_against_differences():
    times = np.linspace(0.0, 3.0, 7)

    def scipy_solution(mu):
        return scipy.integrate.solve_ivp(
            lambda t, y: np.asarray(van_der_pol(t, y, mu)),
            (0, 3),
            [2.0, 0.0],
            method="Radau",
            t_eval=times,
            rtol=1e-12,
            atol=1e-12,
        ).y

    def ours(mu, method):
        y = solve_ivp(
            van_der_pol,
            (0, 3),
            jnp.array([2.0, 0.0]),
            method=method,
            t_eval=times,
            args=(mu,),
            rtol=1e-9,
            atol=1e-11,
        )
        return y.y

    for method in ("Radau", "BDF"):
        np.testing.assert_allclose(
            jax.jit(ours, static_argnums=1)(5.0, method), scipy_solution(5.0), rtol=1e-6, atol=1e-8
        )
        h = 1e-4
        differences = (scipy_solution(5.0 + h) - scipy_solution(5.0 - h)) / (2 * h)
        np.testing.assert_allclose(jax.jacfwd(ours)(5.0, method), differences, rtol=1e-4, atol=1e-6)


def test_solve_ivp_under_vmap_with_t_eval_after_t0_and_a_pytree_y0():
    def rhs(t, y, k):
        return {"a": -k * y["a"], "b": k * y["a"]}

    y0 = {"a": jnp.array(1.0), "b": jnp.array(0.0)}
    times = np.array([0.5, 1.0])  # (t0 = 0 is not an output)
    got = jax.vmap(lambda k: solve_ivp(rhs, (0, 1), y0, t_eval=times, args=(k,), **TIGHT).y)(
        jnp.array([1.0, 2.0])
    )
    k = np.array([1.0, 2.0])[:, None]
    np.testing.assert_allclose(got[:, 0], np.exp(-k * times), rtol=1e-7)  # leaves in order
    np.testing.assert_allclose(got[:, 1], 1 - np.exp(-k * times), rtol=1e-7)


def test_solve_ivp_refuses_what_it_does_not_offer():
    y0 = jnp.array([1.0])
    with pytest.raises(ValueError, match="solve_ivp: t_eval is required"):
        solve_ivp(decay, (0, 1), y0, args=(1.0,))
    with pytest.raises(ValueError, match="solve_ivp: events and dense_output are not offered"):
        solve_ivp(decay, (0, 1), y0, t_eval=[1.0], args=(1.0,), dense_output=True)
    with pytest.raises(ValueError, match=r"solve_ivp: t_span must run forward in time"):
        solve_ivp(decay, (1, 0), y0, t_eval=[0.5], args=(1.0,))


def gaussian(x, s):
    return jnp.exp(-s * x**2)


def test_quad_is_scipy_quad_and_its_derivatives_the_closed_forms():
    """``∫₀^∞ exp(-s x²) dx = √π / (2 √s)``; in ``s``: ``-√π s^(-3/2) / 4`` and ``3 √π
    s^(-5/2) / 8``; in an upper limit ``b``: the integrand there."""
    y, bound = jax.jit(lambda s: quad(gaussian, 0.0, jnp.inf, args=(s,)))(2.0)
    expected, error = scipy.integrate.quad(lambda x: np.exp(-2 * x * x), 0, np.inf)
    np.testing.assert_allclose(y, expected, rtol=1e-14)
    assert error <= float(bound) == 1.49e-8
    root_pi = np.sqrt(np.pi)
    grad = jax.grad(lambda s: quad(gaussian, 0.0, jnp.inf, args=(s,))[0])(2.0)
    np.testing.assert_allclose(grad, -root_pi / 4 * 2.0**-1.5, rtol=1e-9)
    second = jax.hessian(lambda s: quad(gaussian, 0.0, jnp.inf, args=(s,))[0])(2.0)
    np.testing.assert_allclose(second, 3 * root_pi / 8 * 2.0**-2.5, rtol=1e-8)
    in_b = jax.grad(lambda b: quad(gaussian, 0.0, b, args=(2.0,))[0])(1.0)
    np.testing.assert_allclose(in_b, np.exp(-2.0), rtol=1e-14)
    batch = jax.vmap(lambda s: quad(gaussian, 0.0, 1.0, args=(s,))[0])(jnp.array([1.0, 2.0]))
    for s, got in zip((1.0, 2.0), batch):
        np.testing.assert_allclose(
            got, scipy.integrate.quad(lambda x: np.exp(-s * x * x), 0, 1)[0], rtol=1e-13
        )
