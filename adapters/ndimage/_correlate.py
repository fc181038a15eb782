"""SciPy's 1-D correlation along an axis (``correlate1d``), with its boundary modes, in JAX
for the filters' derivative rules: the line extended by ``jnp.pad`` (whose transpose folds
the extension back), then a weighted sum of shifted copies."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

FilterMode = Literal[
    "reflect", "constant", "nearest", "mirror", "wrap", "grid-constant", "grid-mirror", "grid-wrap"
]

# SciPy's filter modes as NumPy's (and jnp.pad's) padding modes
PAD_MODES = {
    "reflect": "symmetric",
    "grid-mirror": "symmetric",
    "mirror": "reflect",
    "nearest": "edge",
    "wrap": "wrap",
    "grid-wrap": "wrap",
    "constant": "constant",
    "grid-constant": "constant",
}


def extended(x: jax.Array, axis: int, before: int, after: int, mode: str, cval: float) -> jax.Array:
    """``x`` extended along ``axis`` by ``before`` and ``after`` entries as SciPy's filters
    extend it."""
    widths = [(0, 0)] * x.ndim
    widths[axis] = (before, after)
    if PAD_MODES[mode] == "constant":
        return jnp.pad(x, widths, constant_values=jnp.asarray(cval, x.dtype))
    return jnp.pad(x, widths, mode=PAD_MODES[mode])


def correlate1d(
    x: jax.Array, weights: jax.Array, axis: int, mode: str, cval: float, origin: int = 0
) -> jax.Array:
    """``out[i] = Σ_j weights[j] x[i + j - len(weights) // 2 - origin]`` along ``axis``,
    ``x`` extended by ``mode``: SciPy's ``correlate1d``."""
    size = weights.shape[0]
    before = size // 2 + origin
    padded = extended(x, axis, before, size - 1 - before, mode, cval)
    n = x.shape[axis]
    total = jnp.zeros(x.shape, jnp.result_type(x, weights))
    for j in range(size):
        total = total + weights[j] * jax.lax.slice_in_dim(padded, j, j + n, axis=axis)
    return total
