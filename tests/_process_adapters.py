"""Adapters whose batch loop runs in worker processes (``processes = 2``), for
``test_processes.py``: defined here, at the top level of an importable module, so that the
workers can import their classes."""

from __future__ import annotations

import os

import jax
import numpy as np

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
