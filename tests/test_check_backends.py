"""``jaxbridge.testing.check_backends`` where there is no accelerator: given the CPU as the
"device", it compares two programs of the same backend, enough to show that it builds its
program for every kind of adapter (integer results alone included: it raised IndexError
for ``KDTreeBallCount`` and ``LinearSumAssignment`` on the TPU)."""

from __future__ import annotations

import jax
import numpy as np

from jaxbridge.adapters.spatial import KDTreeBallCount
from jaxbridge.testing import check_backends

CPU = jax.devices("cpu")[0]


def test_integer_results_alone_are_compared_without_derivatives():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((6, 2)).astype(np.float32)
    x = rng.standard_normal((3, 2)).astype(np.float32)
    check_backends(KDTreeBallCount(), data, x, np.full(3, 0.8, np.float32), device=CPU)
