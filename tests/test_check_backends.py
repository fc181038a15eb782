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


class _Drifting:
    """An adapter whose host forward is off by ``drift`` (relative) from its ``after``-th
    call on: the second program of a check (the "device" one) then differs from the first."""

    @staticmethod
    def make(drift: float, after: float):
        import jaxbridge as jb

        class Drifting(jb.Adapter):
            signature = "(n)->(n)"
            calls = 0

            def forward(self, x):
                type(self).calls += 1
                return 2 * x * (1 + (drift if type(self).calls > after else 0.0))

            def backward(self, res, g):
                return (2 * g,)

        return Drifting()


def test_the_float64_tolerance_fails_a_result_1e9_off_and_passes_1e12():
    """check_backends' own float64 tolerance (1e-10 of each result's largest entry), with
    a difference made on purpose in the second program: comparing the CPU with itself, any
    tolerance passed, so this one had no test."""
    import pytest

    x = np.array([0.5, -1.25, 2.0])
    with jax.enable_x64(True):
        counting = _Drifting.make(0.0, np.inf)
        check_backends(counting, x, device=CPU)
        per_program = type(counting).calls // 2  # (the two programs call alike)
        check_backends(_Drifting.make(1e-12, per_program), x, device=CPU)
        with pytest.raises(AssertionError, match="differs by"):
            check_backends(_Drifting.make(1e-9, per_program), x, device=CPU)
