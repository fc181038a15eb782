"""What the forward's solves keep for the adjoint's backward.

A differentiated ``OdeSolve`` call keeps what its derivatives need of the solve between
the output times (the dense output, or an explicit method's steps) here under its exact
inputs, so that the backward does not solve ``y`` again (JAX's residuals could not carry
it: its size is the number of steps taken). The backward takes it; one that is not here
(dropped for room, or a call the forward never saw) is solved again by the very same call,
so what is kept changes the time a backward takes, never its result. The store is bounded
in bytes, the oldest dropped first, and the last solution taken stays until the next is
taken (a Jacobian's rows ask for it once each).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, NamedTuple

import numpy as np

from ._bdf import BdfSteps
from ._ode import Trajectory
from ._steps import Steps

BUDGET = 64 * 2**20
"""Bytes of solutions kept at most: a few thousand solves of a small system."""


class Trajectories:
    """Solutions by their call, an owner and its inputs, within ``budget`` bytes.

    Owners are compared as values, as adapters are: an equal copy of the adapter (one a
    worker process received pickled, ``Adapter.processes``) finds what the original kept.
    """

    def __init__(self, budget: int = BUDGET) -> None:
        self.budget = budget
        self._kept: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._bytes = 0
        self._last: tuple[Hashable, _Entry] | None = None
        self._lock = threading.Lock()

    def put(
        self, owner: Hashable, inputs: tuple[np.ndarray, ...], trajectory: Trajectory, nbytes: int
    ) -> None:
        if nbytes > self.budget:
            return
        key = _key(owner, inputs)
        with self._lock:
            if key in self._kept:
                self._bytes -= self._kept.pop(key).nbytes
            self._kept[key] = _Entry(trajectory, nbytes)
            self._bytes += nbytes
            while self._bytes > self.budget:
                self._bytes -= self._kept.popitem(last=False)[1].nbytes

    def take(self, owner: Hashable, inputs: tuple[np.ndarray, ...]) -> Trajectory | None:
        key = _key(owner, inputs)
        with self._lock:
            entry = self._kept.pop(key, None)
            if entry is not None:
                self._bytes -= entry.nbytes
                self._last = (key, entry)
            elif self._last is not None and self._last[0] == key:
                entry = self._last[1]
            return None if entry is None else entry.trajectory

    def __len__(self) -> int:
        return len(self._kept)


class _Entry(NamedTuple):
    trajectory: Trajectory
    nbytes: int


def _key(owner: Hashable, inputs: tuple[np.ndarray, ...]) -> tuple[Any, ...]:
    return (owner, *((a.dtype.str, a.shape, a.tobytes()) for a in inputs))


def nbytes(trajectory: Trajectory) -> int:
    """The bytes of the arrays a trajectory keeps, step by step."""
    if isinstance(trajectory, (Steps, BdfSteps)):
        return trajectory.nbytes
    return sum(
        value.nbytes
        for step in trajectory.solution.interpolants
        for value in vars(step).values()
        if isinstance(value, np.ndarray)
    )


kept = Trajectories()
"""The store ``OdeSolve`` shares between its forwards and backwards."""
