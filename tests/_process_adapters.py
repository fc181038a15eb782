"""Adapters for ``test_processes.py`` and ``test_blas_threads.py``: defined here, at the
top level of an importable module, so that worker processes (``processes > 1``) can
import their classes."""

from __future__ import annotations

import os

import jax
import numpy as np
from threadpoolctl import threadpool_info

import jaxbridge as jb
from jaxbridge.adapters.integrate import OdeSolve

SEEN: set[bytes] = set()
"""The inputs ``Cubed.forward`` saw in this process."""


class Cubed(jb.Adapter):
    """``x³`` elementwise, and the id of the process that computed it (as a float); a
    ``forward`` given a negative ``x[0]`` raises. Exact ``backward``; ``jvp`` gives the
    exact tangent of ``x³`` and, as the id's tangent, 1 where this process's own
    ``forward`` saw ``x`` (0 elsewhere): whether host state stays with its elements."""

    signature = "(n)->(n),()"
    processes = 2

    def output_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct((), x.dtype)

    def forward(self, x):
        if x[0] < 0:
            raise ValueError(f"a negative first entry: {x[0]}")
        SEEN.add(x.tobytes())
        return x**3, np.asarray(float(os.getpid()))

    def backward(self, res, g):
        x, _, _ = res
        gy, _ = g
        return (3 * x**2 * gy,)

    def jvp(self, res, tangents):
        x, _, _ = res
        (dx,) = tangents
        return 3 * x**2 * dx, np.asarray(float(x.tobytes() in SEEN))


class Decay(jb.Adapter):
    """``y' = -θ₀ y + θ₁ sin t``: an ``OdeSolve`` right-hand side."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        return -theta[0] * y + theta[1] * np.sin(t)

    def backward(self, res, g):
        t, y, theta, _ = res
        return None, -theta[0] * g, np.array([-(g @ y), g.sum() * np.sin(t)])


class ParallelOdeSolve(OdeSolve):
    """``OdeSolve`` with its batch shared by two worker processes."""

    processes = 2


def blas_threads() -> int:
    """The fewest threads that any of the OpenBLAS thread servers loaded (NumPy's, SciPy's)
    may use now: what ``blas_threads`` holds."""
    return min(
        info["num_threads"]
        for info in threadpool_info()
        if info["internal_api"] == "openblas" and info["threading_layer"] == "pthreads"
    )


class BlasProbe(jb.Adapter):
    """``x`` times the number of BLAS threads its host code ran with (``blas_threads``),
    and the same factor in ``backward`` and ``jvp``: exact where BLAS was held at one
    thread. A ``forward`` given a negative ``x[0]`` raises."""

    signature = "(n)->(n)"
    blas_threads = 1

    def forward(self, x):
        if x[0] < 0:
            raise ValueError("a negative first entry")
        return x * blas_threads()

    def backward(self, res, g):
        return (g * blas_threads(),)

    def jvp(self, res, tangents):
        (dx,) = tangents
        return dx * blas_threads()


class BlasProbeInProcesses(BlasProbe):
    """In three worker processes: a count no other test's adapter uses, so that its
    workers start when its test runs, with that test's environment."""

    processes = 3
