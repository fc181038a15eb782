"""The store of dense solutions ``OdeSolve``'s differentiated forward keeps for its rules:
found by an equal owner and exact inputs, bounded in bytes (oldest dropped first), the last one
taken kept for a pullback called again."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _integrate_cases import Decay

from jaxbridge.adapters.integrate import OdeSolve
from jaxbridge.adapters.integrate._trajectories import Trajectories


def inputs(value: float) -> tuple[np.ndarray, ...]:
    return (np.array([value, 1.0]), np.array([0.5]), np.array([0.0, 1.0]))


def trajectory(t: float) -> np.ndarray:
    return np.array([t])


def test_found_by_an_equal_owner_and_the_same_bytes_alone():
    store, owner = Trajectories(budget=1000), object()
    store.put(owner, inputs(1.0), trajectory, 100)
    assert store.take(object(), inputs(1.0)) is None  # another owner
    assert store.take(owner, inputs(1.0 + 1e-16 * 4)) is None  # other bits
    assert store.take(owner, (inputs(1.0)[0].astype(np.float32), *inputs(1.0)[1:])) is None
    assert store.take(owner, inputs(1.0)) is trajectory
    assert len(store) == 0  # taken: only the last-taken slot holds it now


def test_an_equal_owner_is_the_same_call():
    """Adapters are values: a copy (as a worker process receives one) finds the original's."""
    store = Trajectories(budget=1000)
    store.put(("OdeSolve", "BDF", 1e-6), inputs(1.0), trajectory, 100)
    assert store.take(("OdeSolve", "BDF", 1e-7), inputs(1.0)) is None
    assert store.take(("OdeSolve", "BDF", 1e-6), inputs(1.0)) is trajectory


def test_the_last_taken_serves_a_pullback_called_again():
    store, owner = Trajectories(budget=1000), object()
    store.put(owner, inputs(1.0), trajectory, 100)
    assert store.take(owner, inputs(1.0)) is trajectory
    assert store.take(owner, inputs(1.0)) is trajectory
    store.put(owner, inputs(2.0), trajectory, 100)
    assert store.take(owner, inputs(2.0)) is trajectory
    assert store.take(owner, inputs(1.0)) is None  # replaced as the last taken


def test_bounded_in_bytes_oldest_first():
    store, owner = Trajectories(budget=250), object()
    for value in (1.0, 2.0, 3.0):
        store.put(owner, inputs(value), trajectory, 100)
    assert len(store) == 2
    assert store.take(owner, inputs(1.0)) is None
    assert store.take(owner, inputs(2.0)) is trajectory
    assert store.take(owner, inputs(3.0)) is trajectory
    store.put(owner, inputs(4.0), trajectory, 251)  # larger than the whole budget
    assert len(store) == 0 and store.take(owner, inputs(4.0)) is None


@pytest.mark.parametrize("sensitivity", ["adjoint", "steps"])
def test_calls_that_differ_in_theta_alone_keep_their_own_solutions(sensitivity):
    """A batch in theta alone (same y0 and ts) is solved element by element, all forwards
    before the backwards: each backward must find its own element's solution. The gradients
    are against the closed form ``y(t) = y0 exp(-k t)``."""
    with jax.enable_x64(True):
        solve = OdeSolve(Decay(), rtol=1e-10, atol=1e-12, sensitivity=sensitivity)
        y0, ts, ks = jnp.array([1.0]), jnp.array([0.0, 1.0]), jnp.array([[0.5], [2.0]])
        grads = jax.grad(lambda ks: solve(y0, ks, ts)[:, 1, 0].sum())(ks)
        # d/dk of exp(-k) is -exp(-k)
        np.testing.assert_allclose(grads[:, 0], -np.exp(-np.array([0.5, 2.0])), rtol=1e-6)
