"""SciPy's spline interpolation of an image (``scipy/ndimage/src/ni_interpolation.c``),
written in JAX for the derivative rules: the boundary folding of coordinates and indices,
the B-spline weights, and their sum at each point. It follows SciPy's C code step by step
(the same folding, the same weight polynomials), so that JAX differentiates the function
whose values SciPy gives."""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, Literal

import jax
import jax.numpy as jnp

Mode = Literal[
    "constant",
    "grid-constant",
    "nearest",
    "mirror",
    "reflect",
    "grid-mirror",
    "wrap",
    "grid-wrap",
]

PREPAD = 12
"""SciPy pads the image by this much before prefiltering for "nearest" and "grid-constant"
(``_prepad_for_spline_filter``), which have no exact boundary condition for the filter."""


def prepadded(mode: str, order: int, prefilter: bool) -> bool:
    return prefilter and order > 1 and mode in ("nearest", "grid-constant")


def fold(x: jax.Array, n: int, mode: str) -> jax.Array:
    """SciPy's ``map_coordinate``: ``x`` (coordinates or indices) outside ``[0, n - 1]``
    brought inside by the boundary ``mode``; -1 for "constant" (the constant value)."""
    if mode == "grid-mirror":
        mode = "reflect"
    if mode == "nearest":
        return jnp.clip(x, 0, n - 1)
    if mode == "constant":
        return jnp.where((x < 0) | (x > n - 1), -1, x)
    if n <= 1:
        return jnp.where((x < 0) | (x > n - 1), 0, x)
    below, above = x < 0, x > n - 1
    if mode == "mirror":
        period = 2 * n - 2
        low = period * jnp.trunc(-x / period) + x
        low = jnp.where(low <= 1 - n, low + period, -low)
        high = x - period * jnp.trunc(x / period)
        high = jnp.where(high >= n, period - high, high)
    elif mode == "reflect":
        period = 2 * n
        low = jnp.where(x < -period, period * jnp.trunc(-x / period) + x, x)
        # (SciPy's guard against -x - 1 == -1 for x just below 0)
        low = jnp.where(low < -n, low + period, jnp.where(low > -1e-15, 1e-15, -low) - 1)
        high = x - period * jnp.trunc(x / period)
        high = jnp.where(high >= n, period - high - 1, high)
    elif mode == "wrap":
        period = n - 1
        low = x + period * (jnp.trunc(-x / period) + 1)
        high = x - period * jnp.trunc(x / period)
    elif mode == "grid-wrap":
        low = x + n * (jnp.trunc((-1 - x) / n) + 1)
        high = x - n * jnp.trunc(x / n)
    else:  # pragma: no cover (the modes are checked when an adapter is made)
        raise ValueError(f"unknown mode {mode!r}")
    return jnp.where(below, low, jnp.where(above, high, x))


def fold_index(index: jax.Array, n: int, mode: str) -> jax.Array:
    """``fold`` for integer ``index`` in the modes that fold a spline's indices ("mirror",
    "reflect", "grid-mirror", "grid-wrap", "nearest"), in integer arithmetic: the same
    entries, without ``fold``'s float divisions, which made the rules' index computation
    cost three times the gathers."""
    if mode == "nearest" or n <= 1:
        return jnp.clip(index, 0, n - 1)
    if mode == "grid-wrap":
        return jnp.remainder(index, n)
    if mode == "mirror":
        period = 2 * n - 2
        r = jnp.remainder(jnp.abs(index), period)
        return jnp.where(r >= n, period - r, r)
    if mode in ("reflect", "grid-mirror"):
        r = jnp.remainder(index, 2 * n)
        return jnp.where(r >= n, 2 * n - 1 - r, r)
    raise ValueError(f"unknown mode {mode!r}")  # pragma: no cover


def weights(x: jax.Array, order: int) -> list[jax.Array]:
    """The ``order + 1`` B-spline weights at ``x``, one array each, SciPy's
    ``get_spline_interpolation_weights``: the same polynomials, the last weight one minus
    the others. (Separate arrays, not one stacked: the derivative of a column sliced from
    a stack is a padded array, which made the points' cotangents 20 times slower.)"""
    x = x - jnp.floor(x if order & 1 else x + 0.5)
    y, z = x, 1.0 - x
    if order == 0:
        return [jnp.ones_like(x)]
    if order == 1:
        first = [1.0 - x]
    elif order == 2:
        first = [0.5 * (0.5 - x) ** 2, 0.75 - x * x]
    elif order == 3:
        first = [
            z * z * z / 6.0,
            (y * y * (y - 2.0) * 3.0 + 4.0) / 6.0,
            (z * z * (z - 2.0) * 3.0 + 4.0) / 6.0,
        ]
    elif order == 4:
        t = x * x
        y1, w = 1.0 + x, 0.5 - x
        first = [
            (w * w) * (w * w) / 24.0,
            y1 * (y1 * (y1 * (5.0 - y1) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0,
            t * (t * 0.25 - 0.625) + 115.0 / 192.0,
            z * (z * (z * (5.0 - z) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0,
        ]
    elif order == 5:
        ty, tz = y * y, z * z
        y1, z1, w = y + 1.0, z + 1.0, 1.0 - x
        first = [
            w * (w * w) * (w * w) / 120.0,
            y1 * (y1 * (y1 * (y1 * (y1 / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425,
            ty * (ty * (0.25 - y / 12.0) - 0.5) + 0.55,
            tz * (tz * (0.25 - z / 12.0) - 0.5) + 0.55,
            z1 * (z1 * (z1 * (z1 * (z1 / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425,
        ]
    else:  # pragma: no cover
        raise ValueError(f"unsupported spline order {order}")
    last: Any = 1.0
    for w in first:
        last = last - w
    return [*first, last]


def evaluate(
    coefficients: jax.Array,
    coordinates: jax.Array,
    order: int,
    mode: str,
    cval: float,
    shift: float = 0.0,
) -> jax.Array:
    """The spline of ``order`` with ``coefficients`` (the image itself below order 2 or
    without prefiltering) at ``coordinates`` (d, m), extended by ``mode``, as SciPy's
    ``NI_GeometricTransform``; ``shift`` is SciPy's ``nprepad``, added to each coordinate.

    A sum over the ``(order + 1) ** d`` corners of each point's window, each corner one
    gather of ``m`` coefficients: XLA's gathers and their transposes, scatter-adds, ran
    3-6 times faster so than as one gather of (m, corners) indices."""
    shape = coefficients.shape
    spline_mode = "mirror" if mode in ("constant", "wrap") else mode
    m = coordinates.shape[-1]
    outside = jnp.zeros((m,), bool)  # "constant": the point takes cval
    axes = []  # per axis: the window's flat offsets, weights, and ("grid-constant") misses
    # (split, not indexed: the derivative of a row taken by indexing is a padded array,
    # which XLA fused with the whole evaluation and ran once per row)
    rows = jnp.split(coordinates, len(shape), axis=0)
    for axis, n in enumerate(shape):
        cc = rows[axis][0] + shift
        if mode not in ("grid-constant", "nearest"):
            cc = fold(cc, n, mode)
            outside = outside | (cc <= -1.0)
        floor = jnp.floor(cc) if order & 1 else jnp.floor(cc + 0.5)
        start = floor.astype(jnp.int32) - order // 2
        index = start[:, None] + jnp.arange(order + 1, dtype=jnp.int32)
        beyond = None
        if mode == "grid-constant":
            beyond = (index < 0) | (index >= n)
            index = jnp.clip(index, 0, n - 1)
        else:
            index = fold_index(index, n, spline_mode)
        axes.append((index * math.prod(shape[axis + 1 :]), weights(cc, order), beyond))
    flat = coefficients.reshape(-1)
    values = jnp.zeros((m,), jnp.result_type(coefficients, coordinates))
    for corner in itertools.product(range(order + 1), repeat=len(shape)):
        term = flat[sum(index[:, k] for (index, _, _), k in zip(axes, corner))]
        if mode == "grid-constant":
            missing = functools.reduce(
                jnp.logical_or, [b[:, k] for (_, _, b), k in zip(axes, corner)]
            )
            term = jnp.where(missing, jnp.asarray(cval, term.dtype), term)
        for (_, w, _), k in zip(axes, corner):
            term = term * w[k]
        values = values + term
    return jnp.where(outside, jnp.asarray(cval, values.dtype), values)
