"""SciPy's spline interpolation of an image (``scipy/ndimage/src/ni_interpolation.c``),
written in JAX for the derivative rules: the boundary folding of coordinates and indices,
the B-spline weights, and their sum at each point. It follows SciPy's C code step by step
(the same folding, the same weight polynomials), so that JAX differentiates the function
whose values SciPy gives."""

from __future__ import annotations

import math
from typing import Literal

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


def weights(x: jax.Array, order: int) -> jax.Array:
    """The ``order + 1`` B-spline weights at ``x`` (trailing axis), SciPy's
    ``get_spline_interpolation_weights``: the same polynomials, the last weight one minus
    the others."""
    x = x - jnp.floor(x if order & 1 else x + 0.5)
    y, z = x, 1.0 - x
    if order == 0:
        return jnp.ones_like(x)[..., None]
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
    last = 1.0
    for w in first:
        last = last - w
    return jnp.stack([*first, last], axis=-1)


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
    ``NI_GeometricTransform``; ``shift`` is SciPy's ``nprepad``, added to each coordinate."""
    shape = coefficients.shape
    spline_mode = "mirror" if mode in ("constant", "wrap") else mode
    m = coordinates.shape[-1]
    flat = jnp.zeros((m,) + (1,) * len(shape), jnp.int32)
    product = jnp.ones((m,) + (1,) * len(shape), coordinates.dtype)
    outside = jnp.zeros((m,), bool)  # "constant": the point takes cval
    missing = jnp.zeros((m,) + (1,) * len(shape), bool)  # "grid-constant": this term is cval
    for axis, n in enumerate(shape):
        cc = coordinates[axis] + shift
        if mode not in ("grid-constant", "nearest"):
            cc = fold(cc, n, mode)
            outside = outside | (cc <= -1.0)
        floor = jnp.floor(cc) if order & 1 else jnp.floor(cc + 0.5)
        start = floor.astype(jnp.int32) - order // 2
        index = start[:, None] + jnp.arange(order + 1, dtype=jnp.int32)
        if mode == "grid-constant":
            beyond = (index < 0) | (index >= n)
            index = jnp.clip(index, 0, n - 1)
            missing = missing | _along(beyond, axis, len(shape))
        else:
            index = fold(index, n, spline_mode).astype(jnp.int32)
        stride = math.prod(shape[axis + 1 :])
        flat = flat + _along(index * stride, axis, len(shape))
        product = product * _along(weights(cc, order), axis, len(shape))
    terms = coefficients.reshape(-1)[flat]
    if mode == "grid-constant":
        terms = jnp.where(missing, jnp.asarray(cval, terms.dtype), terms)
    values = jnp.sum((terms * product).reshape(m, (order + 1) ** len(shape)), axis=-1)
    return jnp.where(outside, jnp.asarray(cval, values.dtype), values)


def _along(x: jax.Array, axis: int, rank: int) -> jax.Array:
    """``x`` (m, k) shaped (m, 1, ..., k, ..., 1) with ``k`` at ``1 + axis`` of ``rank``."""
    shape = [x.shape[0]] + [1] * rank
    shape[1 + axis] = x.shape[1]
    return x.reshape(shape)
