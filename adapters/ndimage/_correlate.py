"""SciPy's 1-D correlation along an axis (``correlate1d``) and its transpose, with its
boundary modes, for the filters' derivative rules: the correlation in JAX (the line
extended by ``jnp.pad``, then a weighted sum of shifted copies), for the weights'
derivatives and the median's windows; the transpose in the image on the host (SciPy's
correlation with the flipped weights, the extension's share folded back onto the edges),
one pass as the correlation itself is."""

from __future__ import annotations

import functools
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import scipy.ndimage

FilterMode = Literal[
    "reflect", "constant", "nearest", "mirror", "wrap", "grid-constant", "grid-mirror", "grid-wrap"
]

# SciPy's filter modes as NumPy's (and jnp.pad's) padding modes
PAD_MODES: dict[str, Any] = {
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


def transposed_correlate1d(
    g: np.ndarray,
    weights: np.ndarray,
    axis: int,
    mode: str,
    origin: int = 0,
    output: np.ndarray | None = None,
) -> np.ndarray:
    """``Cᵀ g`` for ``C`` SciPy's ``correlate1d(·, weights, axis, mode=mode, origin=origin)``
    with ``cval = 0`` (the constant enters the values, not their derivative), in float64
    (into ``output`` where given, a float64 array of ``g``'s shape).

    ``C x = Σ_j weights[j] x_ext[i + j - before]`` with ``x_ext`` the image extended by
    ``mode`` (``before = len(weights) // 2 + origin``). Its transpose is the correlation of
    ``g`` with the flipped weights over the image (SciPy, with zeros beyond the edges and
    the origin that mirrors ``origin``) plus what ``C`` read from the extension, added back
    onto the entries the mode copied there: a small matrix on the edges' entries alone."""
    weights = np.asarray(weights, np.float64)
    size = weights.shape[0]
    out = scipy.ndimage.correlate1d(
        g,
        weights[::-1],
        axis,
        output=np.float64 if output is None else output,
        mode="constant",
        cval=0.0,
        origin=size - 1 - 2 * (size // 2) - origin,
    )
    out = output if output is not None else out
    if PAD_MODES[mode] == "constant" or size == 1:
        return out
    runs, count, columns, entries, taps = _folding(g.shape[axis], size, size // 2 + origin, mode)
    edges = np.bincount(entries, weights[taps], count * columns.size)
    read = np.moveaxis(np.take(g, columns, axis), axis, -1)
    shares = read @ edges.reshape(count, columns.size).T
    folded = np.moveaxis(out, axis, -1)
    for start, stop, first in runs:  # (slices: fancy indices took twice as long)
        folded[..., start:stop] += shares[..., first : first + stop - start]
    return out


def _runs(indices: np.ndarray) -> list[tuple[int, int, int]]:
    """The runs of consecutive entries of sorted ``indices``: (start, stop, position)."""
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [indices.size]])
    return [(int(indices[a]), int(indices[b - 1]) + 1, int(a)) for a, b in zip(starts, stops)]


@functools.lru_cache(maxsize=256)
def _folding(
    n: int, size: int, before: int, mode: str
) -> tuple[list[tuple[int, int, int]], int, np.ndarray, np.ndarray, np.ndarray]:
    """Where the correlation's reads of the extension go back to, for lines of ``n``: the
    image entries the mode copied there (``count`` of them, as runs of consecutive entries
    ``(start, stop, position)``), the entries of ``g`` whose outputs read them
    (``columns``), and for each read its place in the (targets, columns) matrix
    (flattened: ``entries``) and the weight it reads with (``taps``)."""
    after = size - 1 - before
    extension = np.concatenate([np.arange(-before, 0), np.arange(n, n + after)])
    copied = np.pad(np.arange(n), (before, after), mode=PAD_MODES[mode])[extension + before]
    sources = extension[:, None] + before - np.arange(size)  # the output read at weight j
    read = (sources >= 0) & (sources < n)
    targets, target_index = np.unique(copied, return_inverse=True)
    columns, column_index = np.unique(sources[read], return_inverse=True)
    rows = np.broadcast_to(target_index[:, None], sources.shape)[read]
    taps = np.broadcast_to(np.arange(size), sources.shape)[read]
    breaks = np.flatnonzero(np.diff(targets) != 1) + 1
    starts, stops = np.r_[0, breaks], np.r_[breaks, targets.size]
    runs = [(int(targets[a]), int(targets[b - 1]) + 1, int(a)) for a, b in zip(starts, stops)]
    return runs, targets.size, columns, rows * columns.size + column_index, taps
