"""The table of ready adapters the core tests run over, each beside a native JAX reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb
from jaxbridge.adapters import Doubling, Linear, ReLU, Sigmoid


@dataclass(frozen=True)
class Case:
    name: str
    adapter: jb.Adapter
    reference: Callable[..., jax.Array]
    shapes: tuple[tuple[int, ...], ...]

    def args(self, dtype: type = np.float64, seed: int = 0) -> tuple[jax.Array, ...]:
        rng = np.random.default_rng(seed)
        # values kept away from 0 so that ReLU's kink is never hit by a gradient reference
        return tuple(
            jnp.asarray(rng.choice([-1, 1], s) * rng.uniform(0.2, 2.0, s), dtype)
            for s in self.shapes
        )


def _relu_reference(x: jax.Array) -> jax.Array:
    return jnp.where(x > 0, x, 0.0)


CASES = [
    Case("doubling", Doubling(), lambda x: 2 * x, ((5,),)),
    Case("linear", Linear(), lambda x, w, b: x @ w + b, ((4, 3), (3, 2), (2,))),
    Case("relu", ReLU(), _relu_reference, ((6,),)),
    Case("sigmoid", Sigmoid(), jax.nn.sigmoid, ((6,),)),
]
IDS = [c.name for c in CASES]

# Tolerances by dtype: float32 results agree to a few ulps of ~1e-7; float64 to ~1e-15.
TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def assert_close(actual: object, expected: object, dtype: type = np.float64) -> None:
    """Elementwise, with an absolute floor scaled to the array's largest entry: summation
    order differs between host and XLA, and cancellation makes small entries noisier."""
    tol = TOLERANCE[np.dtype(dtype)]
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        e = np.asarray(e)
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        np.testing.assert_allclose(np.asarray(a), e, rtol=tol, atol=tol * scale)


def projected(function: Callable[..., jax.Array], cotangent: jax.Array) -> Callable[..., jax.Array]:
    """``sum(function(*args) * cotangent)``: a scalar whose gradient is a full VJP."""
    return lambda *args: jnp.sum(function(*args) * cotangent)
