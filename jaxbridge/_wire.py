"""A host call's arrays as one vector of 32-bit words each way, for ``jax.pure_callback``.

On a TPU, ``pure_callback`` moves each operand and each result over a host transfer of its
own, and arrays of the same size can arrive in each other's places: measured on a TPU v5e
(jax 0.10.2), a ``LinearSolve`` call's pivots reached the next host call holding the bytes
of its solution, and its right-hand side the pivots' (LAPACK then crashed the process in
``slaswp``); in other programs a matrix arrived in its transposed order. One operand and one
result of one layout (a vector) leave nothing to mix up.

The words are the arrays' own bytes (``lax.bitcast_convert_type``): 4-byte types cross as
they are, 8-byte ones as pairs of words, complex ones as their real and imaginary parts,
and narrower ones (bool, int8, bfloat16...) widened exactly to 4 bytes and narrowed back.
Leading batch axes, which ``vmap`` of a ``pure_callback`` puts in front
(``vmap_method="expand_dims"``), stay in front on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

WORD = np.dtype(np.uint32)


@dataclass(frozen=True)
class Wire:
    """Where each array of a call lies in its vector of words."""

    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[np.dtype, ...]

    @classmethod
    def of(cls, arrays: Sequence[Any]) -> Wire:
        """For arrays, or anything with their ``shape`` and ``dtype`` (``ShapeDtypeStruct``)."""
        return cls(tuple(tuple(a.shape) for a in arrays), tuple(np.dtype(a.dtype) for a in arrays))

    @property
    def counts(self) -> tuple[int, ...]:
        """Words per array."""
        return tuple(
            int(np.prod(s, dtype=np.int64)) * max(1, _carrier(d).itemsize // 4)
            for s, d in zip(self.shapes, self.dtypes)
        )

    @property
    def words(self) -> int:
        """The vector's length, at least 1 (a TPU cannot move an empty array)."""
        return max(1, sum(self.counts))

    def spec(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((self.words,), WORD)

    # -- on the device (JAX) ------------------------------------------------------------

    def pack(self, arrays: Sequence[jax.Array]) -> jax.Array:
        parts = [_to_words(a, d) for a, d in zip(arrays, self.dtypes)]
        pad = self.words - sum(self.counts)
        parts += [jnp.zeros((pad,), WORD)] if pad else []
        return jnp.concatenate(parts) if len(parts) > 1 else parts[0]

    def unpack(self, vector: jax.Array) -> tuple[jax.Array, ...]:
        out, start = [], 0
        for shape, dtype, count in zip(self.shapes, self.dtypes, self.counts):
            out.append(_from_words(vector[start : start + count], shape, dtype))
            start += count
        return tuple(out)

    # -- on the host (NumPy) ------------------------------------------------------------

    def read(self, vector: np.ndarray) -> list[np.ndarray]:
        """The arrays in ``vector`` (leading batch axes in front of each)."""
        lead = vector.shape[:-1]
        vector = np.ascontiguousarray(vector)
        out, start = [], 0
        for shape, dtype, count in zip(self.shapes, self.dtypes, self.counts):
            chunk = np.ascontiguousarray(vector[..., start : start + count])
            array = chunk.view(_carrier(dtype)).reshape(lead + shape)
            out.append(array if array.dtype == dtype else array.astype(dtype))
            start += count
        return out

    def write(self, arrays: Sequence[np.ndarray], lead: tuple[int, ...] = ()) -> np.ndarray:
        """``arrays`` as words, each broadcast to the leading batch axes ``lead``."""
        parts = []
        for a, shape, dtype in zip(arrays, self.shapes, self.dtypes):
            full = np.broadcast_to(np.asarray(a, _carrier(dtype)), lead + shape)
            parts.append(np.ascontiguousarray(full).view(WORD).reshape(lead + (-1,)))
        pad = self.words - sum(self.counts)
        parts += [np.zeros(lead + (pad,), WORD)] if pad else []
        return np.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]


def _carrier(dtype: np.dtype) -> np.dtype:
    """The type an array crosses as: itself for 4- and 8-byte types (complex included),
    else the 4-byte type of its kind that holds it exactly."""
    if dtype.itemsize in (4, 8, 16):
        return dtype
    kind = "b" if dtype == np.bool_ else dtype.kind
    if kind == "V":  # ml_dtypes' floats (bfloat16, float8...), kind "V" to NumPy
        kind = "f"
    return np.dtype({"b": np.int32, "i": np.int32, "u": np.uint32, "f": np.float32}[kind])


def _to_words(a: jax.Array, dtype: np.dtype) -> jax.Array:
    carrier = _carrier(dtype)
    a = a.astype(carrier) if carrier != dtype else a
    if carrier.kind == "c":  # real and imaginary parts, interleaved as NumPy stores them
        a = jnp.stack([a.real, a.imag], axis=-1)
    return lax.bitcast_convert_type(a, WORD).reshape(-1)


def _from_words(words: jax.Array, shape: tuple[int, ...], dtype: np.dtype) -> jax.Array:
    carrier = _carrier(dtype)
    if carrier.kind == "c":
        part = np.dtype(np.float32 if carrier.itemsize == 8 else np.float64)
        pairs = _from_words(words, (*shape, 2), part)
        a = lax.complex(pairs[..., 0], pairs[..., 1])
    elif carrier.itemsize == 8:
        a = lax.bitcast_convert_type(words.reshape(*shape, 2), carrier)
    else:
        a = lax.bitcast_convert_type(words.reshape(shape), carrier)
    return a if carrier == dtype else (a != 0 if dtype == np.bool_ else a.astype(dtype))
