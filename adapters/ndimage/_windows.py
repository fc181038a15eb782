"""What ``UniformFilter`` and ``MedianFilter`` share: their static ``size`` per axis, and
the windows of an image in JAX (each window's entries along a leading axis, the image
extended beyond its edges as SciPy's filters extend it) for the derivative rules."""

from __future__ import annotations

import itertools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._correlate import extended


def sizes(owner: str, size: Any, rank: int) -> tuple[int, ...]:
    """``size`` (one for every axis, or one per axis) as a tuple of ``rank`` whole numbers."""
    values = tuple(size) if isinstance(size, (tuple, list)) else (size,) * rank
    if len(values) != rank or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1 for n in values
    ):
        raise ValueError(
            f"{owner}: parameter 'size' must be a whole number >= 1 or {rank} of them (one per "
            f"axis); got {size!r}."
        )
    return tuple(int(n) for n in values)


def windows(image: jax.Array, size: tuple[int, ...], mode: str, cval: float) -> jax.Array:
    """(prod(size), *image.shape): entry ``k`` holds, at each pixel, the ``k``-th entry of
    the window around it (offsets ``j - size // 2`` along each axis, SciPy's centring)."""
    padded = image
    for axis, n in enumerate(size):
        padded = extended(padded, axis, n // 2, n - 1 - n // 2, mode, cval)
    shifted = [
        jax.lax.slice(padded, start, tuple(s + m for s, m in zip(start, image.shape)))
        for start in itertools.product(*(range(n) for n in size))
    ]
    return jnp.stack(shifted)
