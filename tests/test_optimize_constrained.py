"""``MinimizeConstrained`` (SLSQP and trust-constr) projecting onto a simplex, a half-plane
and a ball, against closed forms: values and sensitivities; its failures."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _optimize_problems import (
    SECOND_ORDER,
    Distance,
    HalfPlanes,
    InBall,
    Nonnegative,
    SimplexDistance,
    SumToOne,
    TargetDistance,
    ball_projection,
    simplex_projection,
)

import jaxbridge as jb
from jaxbridge.adapters.optimize import MinimizeConstrained, OptimizeError
from jaxbridge.testing import check_adapter

METHODS = ("SLSQP", "trust-constr")


def _simplex_jacobian(x):
    """On the support S: I - 11ᵀ/|S|; zero off it."""
    support = (x > 0).astype(float)
    return np.diag(support) - np.outer(support, support) / support.sum()


@pytest.mark.parametrize("method", METHODS)
def test_projection_onto_the_simplex(method):
    project = MinimizeConstrained(
        SimplexDistance(), eq=SumToOne(), ineq=Nonnegative(), method=method
    )
    with jax.enable_x64(True):
        for theta in ([0.9, 0.4, -0.5], [0.2, 0.5, 0.1], [2.0, -1.0, 0.3]):
            theta = jnp.array(theta)
            x0 = jnp.ones(3) / 3
            expected = simplex_projection(np.asarray(theta))
            np.testing.assert_allclose(jax.jit(project)(x0, theta), expected, atol=1e-14)
            jac = jax.jit(jax.jacrev(project, (0, 1)))(x0, theta)
            assert np.all(np.asarray(jac[0]) == 0)
            np.testing.assert_allclose(jac[1], _simplex_jacobian(expected), atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_quadratic_program_with_an_active_and_a_slack_constraint(method):
    """Projection onto ``x₀ + x₁ <= 1, x₀ >= -5``: the first binds, the second is slack."""
    project = MinimizeConstrained(Distance(), ineq=HalfPlanes(), method=method)
    with jax.enable_x64(True):
        x0 = jnp.zeros(2)
        for theta, x, jac in (
            ([1.0, 0.5], [0.75, 0.25], np.eye(2) - 0.5),  # active: I - ½ 11ᵀ
            ([0.2, 0.3], [0.2, 0.3], np.eye(2)),  # neither binds
        ):
            theta = jnp.array(theta)
            np.testing.assert_allclose(project(x0, theta), x, atol=1e-14)
            np.testing.assert_allclose(jax.jacrev(project, 1)(x0, theta), jac, atol=1e-12)
            np.testing.assert_allclose(jax.jacfwd(project, 1)(x0, theta), jac, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_projection_onto_a_ball_that_moves_with_theta(method):
    """A nonlinear constraint depending on theta, with no hooks: its second derivatives
    (in the Lagrangian's Hessian) are differences of its Jacobian."""
    project = MinimizeConstrained(TargetDistance(), ineq=InBall(), method=method)
    with jax.enable_x64(True):
        theta = jnp.array([1.5, -2.0, 1.2])
        x, jac = ball_projection(np.asarray(theta))
        np.testing.assert_allclose(project(jnp.zeros(2), theta), x, atol=1e-14)
        np.testing.assert_allclose(jax.jacrev(project, 1)(jnp.zeros(2), theta), jac, atol=1e-11)


@pytest.mark.slow
def test_vmap_matches_a_loop_and_check_adapter():
    project = MinimizeConstrained(SimplexDistance(), eq=SumToOne(), ineq=Nonnegative())
    with jax.enable_x64(True):
        thetas = jnp.array([[0.9, 0.4, -0.5], [0.2, 0.5, 0.1], [0.7, 0.2, -1.0]])
        x0s = jnp.ones((3, 3)) / 3
        got = jax.jit(jax.vmap(project))(x0s, thetas)
        np.testing.assert_allclose(got, [project(x0s[0], t) for t in thetas], atol=1e-15)
        second = {"hessian": SECOND_ORDER}
        check_adapter(project, np.ones(3) / 3, np.array([0.7, 0.2, -1.0]), rtol=second)
        check_adapter(
            MinimizeConstrained(Distance(), ineq=HalfPlanes()),
            np.zeros(2),
            np.array([1.0, 0.5]),
            rtol=second,
        )


# -------------------------------------------------------------------------- failures


class TwiceTheSame(HalfPlanes):
    """``x₀ + x₁ <= 1`` twice: dependent active constraints."""

    def forward(self, x, theta):
        return np.array([1 - x[0] - x[1], 1 - x[0] - x[1]])

    def backward(self, res, g):
        _, theta, _ = res
        return -np.array([g[0] + g[1], g[0] + g[1]]), np.zeros_like(theta)


def test_degenerate_constraint_raises_or_gives_nan_per_element():
    """θ on the line ``x₀ + x₁ = 1``: the constraint binds with a zero multiplier."""
    with jax.enable_x64(True):
        thetas = jnp.array([[1.0, 0.5], [0.25, 0.75], [0.2, 0.3]])
        x0s = jnp.zeros((3, 2))
        with pytest.raises(OptimizeError, match="degenerate"):
            MinimizeConstrained(Distance(), ineq=HalfPlanes())(x0s[1], thetas[1])
        project = MinimizeConstrained(Distance(), ineq=HalfPlanes(), on_failure="nan")
        np.testing.assert_allclose(
            jax.vmap(project)(x0s, thetas), [[0.75, 0.25], [np.nan, np.nan], [0.2, 0.3]], 1e-14
        )
        grads = jax.vmap(jax.grad(lambda x0, t: project(x0, t)[0], (0, 1)))(x0s, thetas)
        np.testing.assert_allclose(grads[1], [[0.5, -0.5], [np.nan, np.nan], [1, 0]], atol=1e-12)
        np.testing.assert_array_equal(grads[0], [[0, 0], [np.nan, np.nan], [0, 0]])


def test_dependent_active_constraints_raise():
    with jax.enable_x64(True):
        # NNLS gives one copy the whole multiplier: the other binds with none
        with pytest.raises(OptimizeError, match="degenerate|not isolated|singular"):
            MinimizeConstrained(Distance(), ineq=TwiceTheSame())(
                jnp.zeros(2), jnp.array([1.0, 0.5])
            )


def test_bad_constraints_are_refused():
    with pytest.raises(
        ValueError, match=r"'eq' \(Distance\) must have signature '\(n\),\(p\)->\(m\)'"
    ):
        MinimizeConstrained(Distance(), eq=Distance())
    with pytest.raises(ValueError, match="'method' must be one of 'SLSQP', 'trust-constr'"):
        MinimizeConstrained(Distance(), method="L-BFGS-B")


class Unbounded(jb.Adapter):
    """``-x₀``: unbounded below on ``x₀ >= 0``."""

    signature = "(n),(p)->()"

    def forward(self, x, theta):
        return -x[0] + 0 * theta[0]

    def backward(self, res, g):
        x, theta, _ = res
        return np.array([-g, 0.0]), np.zeros_like(theta)


def test_no_solution_raises():
    with jax.enable_x64(True):
        with pytest.raises(OptimizeError, match="SLSQP"):
            MinimizeConstrained(Unbounded(), ineq=Nonnegative())(jnp.zeros(2), jnp.zeros(1))


class NoInequalities(jb.Adapter):
    """A constraint of no outputs: it constrains nothing."""

    signature = "(n),(p)->(m)"

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct((0,), x.dtype)

    def forward(self, x, theta):
        return np.zeros(0)

    def backward(self, res, g):
        x, theta, _ = res
        return np.zeros_like(x), np.zeros_like(theta)


@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_a_constraint_of_no_outputs_constrains_nothing(method):
    """The projection onto ``Σ x = 1`` with an empty inequality beside it (trust-constr
    failed on it: SciPy's maximum over no constraints)."""
    with jax.enable_x64(True):
        solve = MinimizeConstrained(Distance(), eq=SumToOne(), ineq=NoInequalities(), method=method)
        theta, g = jnp.array([0.7, -0.2, 0.9]), jnp.array([1.0, -2.0, 0.5])
        x = solve(jnp.zeros(3), theta)
        np.testing.assert_allclose(x, theta - (theta.sum() - 1) / 3, atol=1e-9)
        grad = jax.grad(lambda t: solve(jnp.zeros(3), t) @ g)(theta)
        np.testing.assert_allclose(grad, g - g.sum() / 3, atol=1e-8)  # (I - 11ᵀ/3) g
