"""The store of dense solutions ``OdeSolve``'s differentiated forward keeps for its rules:
found by an equal owner and exact inputs, bounded in bytes (oldest dropped first), the last one
taken kept for a pullback called again."""

import numpy as np

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
