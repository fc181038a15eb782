"""``Minimize`` on a parameterised Rosenbrock and ``MinimizeBounded`` projecting onto a box,
against their closed-form minimisers and sensitivities; their failures."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _optimize_problems import SECOND_ORDER, Distance, PlainRosenbrock, Rosenbrock

import jaxbridge as jb
from jaxbridge.adapters.optimize import Minimize, MinimizeBounded, OptimizeError
from jaxbridge.testing import check_adapter

METHODS = ("L-BFGS-B", "BFGS", "CG", "Newton-CG", "trust-ncg", "trust-krylov", "trust-exact")


def _rosenbrock_jacobian(a):
    """d(a, a²)/d(a, b)."""
    return np.array([[1.0, 0.0], [2 * a, 0.0]])


@pytest.mark.parametrize("method", METHODS)
def test_rosenbrock_minimiser_and_sensitivity(method):
    minimize = Minimize(Rosenbrock(), method=method)
    with jax.enable_x64(True):
        x0, theta = jnp.array([-1.0, 1.0]), jnp.array([1.2, 5.0])
        np.testing.assert_allclose(jax.jit(minimize)(x0, theta), [1.2, 1.44], rtol=1e-14)
        jac = jax.jit(jax.jacrev(minimize, (0, 1)))(x0, theta)
        assert np.all(np.asarray(jac[0]) == 0)  # exactly zero in the start
        np.testing.assert_allclose(jac[1], _rosenbrock_jacobian(1.2), rtol=1e-13, atol=1e-14)


def test_second_derivatives_by_differences_of_the_gradient():
    """Without a ``hessian`` hook: as accurate as the exact hook, to 1e-12."""
    with jax.enable_x64(True):
        thetas = jnp.array([[1.2, 5.0], [0.7, 3.5], [1.5, 7.0]])
        x0s = jnp.zeros((3, 2))
        jac = jax.vmap(jax.jacfwd(Minimize(PlainRosenbrock()), 1))(x0s, thetas)
        for j, a in zip(jac, thetas[:, 0]):
            np.testing.assert_allclose(j, _rosenbrock_jacobian(float(a)), atol=1e-12)


def test_vmap_jvp_scan_and_check_adapter():
    minimize = Minimize(Rosenbrock())
    with jax.enable_x64(True):
        thetas = jnp.array([[1.2, 5.0], [0.7, 3.5], [1.5, 7.0]])
        x0s = jnp.zeros((3, 2))
        got = jax.jit(jax.vmap(minimize))(x0s, thetas)
        np.testing.assert_allclose(got, jnp.stack([thetas[:, 0], thetas[:, 0] ** 2], 1), 1e-14)
        _, tangent = jax.jvp(lambda t: minimize(x0s[0], t), (thetas[0],), (jnp.array([1.0, 3.0]),))
        np.testing.assert_allclose(tangent, [1.0, 2.4], rtol=1e-13)
        sums = jax.lax.scan(lambda c, t: (c + minimize(x0s[0], t).sum(), None), 0.0, thetas)[0]
        np.testing.assert_allclose(sums, np.sum(thetas[:, 0] + thetas[:, 0] ** 2), rtol=1e-14)
        check_adapter(minimize, np.zeros(2), np.array([1.2, 5.0]), rtol={"hessian": SECOND_ORDER})


# ---------------------------------------------------------------------------- box

BOX_METHODS = ("L-BFGS-B", "TNC", "SLSQP", "trust-constr")


@pytest.mark.parametrize("method", BOX_METHODS)
def test_projection_onto_a_box(method):
    """The minimiser of ``½|x - θ|²`` over the box is ``clip(θ, lower, upper)``: derivative 1
    in θ where free, 1 in the bound that holds it, 0 elsewhere."""
    project = MinimizeBounded(Distance(), method=method)
    with jax.enable_x64(True):
        theta = jnp.array([-3.0, 0.3, 1.7, 0.5])
        lower, upper = jnp.array([-1.0, -1.0, -jnp.inf, 0.0]), jnp.array([1.0, 1.0, 1.5, jnp.inf])
        x0 = jnp.zeros(4)
        np.testing.assert_allclose(jax.jit(project)(x0, theta, lower, upper), [-1, 0.3, 1.5, 0.5])
        jac = jax.jit(jax.jacrev(project, (0, 1, 2, 3)))(x0, theta, lower, upper)
        assert np.all(np.asarray(jac[0]) == 0)
        for got, held in zip(jac[1:], ([0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0])):
            np.testing.assert_allclose(got, np.diag(held), atol=1e-12)
        tangents = (jnp.zeros(4), jnp.ones(4), 2 * jnp.ones(4), 3 * jnp.ones(4))
        _, tangent = jax.jvp(project, (x0, theta, lower, upper), tangents)
        np.testing.assert_allclose(tangent, [2, 1, 3, 1], atol=1e-12)


def test_box_check_adapter():
    with jax.enable_x64(True):
        args = [np.array([0.0, 0.5]), np.array([-2.5, 0.4]), -np.ones(2) * 1.5, np.ones(2) * 1.5]
        check_adapter(MinimizeBounded(Distance()), *args, rtol={"hessian": SECOND_ORDER})


# -------------------------------------------------------------------------- failures


class Saddle(jb.Adapter):
    """``x₀² - x₁² + θ x₀``: stationary at ``(-θ/2, 0)``, a saddle."""

    signature = "(n),(p)->()"

    def forward(self, x, theta):
        return x[0] ** 2 - x[1] ** 2 + theta[0] * x[0]

    def backward(self, res, g):
        x, theta, _ = res
        return g * np.array([2 * x[0] + theta[0], -2 * x[1]]), g * np.array([x[0]])


class Flat(jb.Adapter):
    """``(x₀ - θ)²``: every ``x₁`` is a minimiser, none strict."""

    signature = "(n),(p)->()"

    def forward(self, x, theta):
        return (x[0] - theta[0]) ** 2

    def backward(self, res, g):
        x, theta, _ = res
        return g * np.array([2 * (x[0] - theta[0]), 0.0]), g * np.array([-2 * (x[0] - theta[0])])


def test_saddle_and_flat_minima_raise():
    with jax.enable_x64(True):
        with pytest.raises(OptimizeError, match="not a strict local minimum"):
            Minimize(Saddle())(jnp.array([1.0, 0.0]), jnp.array([1.0]))
        with pytest.raises(OptimizeError, match="singular|not a strict"):
            Minimize(Flat())(jnp.array([1.0, 0.3]), jnp.array([1.0]))


def test_no_convergence_raises_with_scipys_message():
    with jax.enable_x64(True):
        minimize = Minimize(Rosenbrock(), options=(("maxiter", 2),))
        with pytest.raises(
            OptimizeError, match=r"L-BFGS-B.*reported failure \(status 1.*ITERATIONS"
        ):
            minimize(jnp.array([-1.5, 2.0]), jnp.array([1.2, 5.0]))


def test_degenerate_bound_raises_or_gives_nan_per_element():
    """θ exactly on a bound: a kink of the solution map."""
    with jax.enable_x64(True):
        thetas = jnp.array([[0.5, 2.0], [0.5, 1.0], [-3.0, 0.2]])  # the second is degenerate
        lower, upper = -jnp.ones(2), jnp.ones(2)
        x0s = jnp.zeros((3, 2))
        with pytest.raises(OptimizeError, match="degenerate"):
            MinimizeBounded(Distance())(x0s[1], thetas[1], lower, upper)
        project = MinimizeBounded(Distance(), on_failure="nan")
        got = jax.vmap(project, (0, 0, None, None))(x0s, thetas, lower, upper)
        np.testing.assert_allclose(got, [[0.5, 1.0], [np.nan, np.nan], [-1.0, 0.2]])
        grads = jax.vmap(jax.grad(lambda t: project(x0s[0], t, lower, upper).sum()))(thetas)
        np.testing.assert_allclose(grads, [[1, 0], [np.nan, np.nan], [0, 1]], atol=1e-12)


def test_empty_box_raises():
    with jax.enable_x64(True):
        with pytest.raises(OptimizeError, match=r"the box is empty: lower\[1\]"):
            MinimizeBounded(Distance())(
                jnp.zeros(2), jnp.zeros(2), jnp.array([0, 0.5]), jnp.ones(2) * 0.2
            )
