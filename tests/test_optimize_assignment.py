"""``LinearSumAssignment``: SciPy's matching, and the optimal cost's derivative against
central differences of SciPy's optimal cost."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxbridge.adapters.optimize import LinearSumAssignment
from jaxbridge.testing import check_adapter

RNG = np.random.default_rng(0)


def optimal_cost(cost, maximize=False):
    rows, cols = scipy.optimize.linear_sum_assignment(cost, maximize=maximize)
    return cost[rows, cols].sum()


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
@pytest.mark.parametrize("maximize", [False, True])
def test_the_matching_is_scipys(shape, maximize):
    cost = RNG.normal(size=shape).astype(np.float32)  # (64-bit mode off: float32 goes)
    rows, cols = LinearSumAssignment(maximize=maximize)(cost)
    expected = scipy.optimize.linear_sum_assignment(cost, maximize=maximize)
    np.testing.assert_array_equal(rows, expected[0])
    np.testing.assert_array_equal(cols, expected[1])
    assert rows.dtype == cols.dtype == jnp.int32


@pytest.mark.parametrize("maximize", [False, True])
def test_the_optimal_costs_gradient_matches_central_differences(maximize):
    cost = RNG.normal(size=(5, 6))
    assign = LinearSumAssignment(maximize=maximize)

    def total(c):
        rows, cols = assign(c)
        return c[rows, cols].sum()

    with jax.enable_x64(True):
        gradient = jax.jit(jax.grad(total))(jnp.asarray(cost))
        np.testing.assert_allclose(jax.jit(total)(jnp.asarray(cost)), optimal_cost(cost, maximize))
    h, expected = 1e-6, np.zeros_like(cost)
    for i in np.ndindex(cost.shape):
        step = np.zeros_like(cost)
        step[i] = h
        up, down = optimal_cost(cost + step, maximize), optimal_cost(cost - step, maximize)
        expected[i] = (up - down) / (2 * h)
    np.testing.assert_allclose(gradient, expected, atol=1e-8)
    assert np.asarray(gradient).sum() == 5  # one chosen entry per row


def test_every_mode_and_vmap():
    costs = RNG.normal(size=(3, 4, 4))

    def total(c):
        rows, cols = LinearSumAssignment()(c)
        return c[rows, cols].sum()

    with jax.enable_x64(True):
        grads = jax.vmap(jax.grad(total))(jnp.asarray(costs))
        forward = jax.vmap(jax.jacfwd(total))(jnp.asarray(costs))
        hessian = jax.hessian(total)(jnp.asarray(costs[0]))
        check_adapter(LinearSumAssignment(), costs[0], seed=0)
    for c, g, f in zip(costs, grads, forward):
        rows, cols = scipy.optimize.linear_sum_assignment(c)
        indicator = np.zeros_like(c)
        indicator[rows, cols] = 1
        np.testing.assert_array_equal(g, indicator)
        np.testing.assert_array_equal(f, indicator)
    np.testing.assert_array_equal(hessian, 0)  # (the cost is linear where the match holds)


def test_bad_matrices_are_refused_naming_the_adapter():
    cost = RNG.normal(size=(3, 3)).astype(np.float32)
    with pytest.raises(ValueError, match="LinearSumAssignment.*'cost_matrix' holds NaN"):
        LinearSumAssignment()(np.where(np.eye(3) > 0, np.nan, cost))
    with pytest.raises(ValueError, match="LinearSumAssignment.*'cost_matrix' holds -inf"):
        LinearSumAssignment()(np.where(np.eye(3) > 0, -np.inf, cost))
    with pytest.raises(ValueError, match="LinearSumAssignment.*infeasible"):
        LinearSumAssignment()(np.full((3, 3), np.inf, np.float32))
    with pytest.raises(ValueError, match=r"LinearSumAssignment.*'cost_matrix'.*\(n, m\)"):
        LinearSumAssignment()(np.ones(3, np.float32))
