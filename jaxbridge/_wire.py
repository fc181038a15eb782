"""A host call's arrays as one vector per type each way, for ``jax.pure_callback``.

Vectors, not the arrays themselves: on a TPU v5e (jax 0.10.2) a 2-D ``complex128`` operand
failed to compile (a layout ``RET_CHECK``), a matrix once arrived transposed, and
same-sized operands arrived in each other's places before each call had channels of its
own (``_primitives``). Every array of a call crosses inside a 1-D vector of the type that
carries it, one vector per such type, so the host gets each array with its own values:

- 4- and 8-byte integers and floats cross as themselves (float64 too, except on a TPU);
- complex arrays as their real and imaginary parts, interleaved as NumPy stores them;
- **64-bit types on a TPU in two 32-bit halves** (``halves``): float64 as two float32
  parts, ``hi = float32(x)`` and ``lo = float32(x - hi)``, which is how a TPU holds it
  (measured: ``x - (hi + lo)`` is 0 there), so the host's ``hi + lo`` is what the device
  holds, exactly; its own float64 transfer rounded values under 1e-30 by up to 6e-8
  relative, and a bitcast of its float64 is not IEEE's bits. int64 and uint64 as their
  high and low words, by value. A result crosses back the same way; a float64 beyond
  float32's range (finite, over 3.4e38 in magnitude), which the TPU would hold as inf, is
  refused naming it. Under float32's normal range a TPU's float64 loses digits as float32
  does (1e-40 arrives as 9.99995e-41) and under about 1.4e-45 it is 0, as
  ``jax.device_put`` stores it there. Nothing 64 bits wide crosses, so a ``jax.enable_x64``
  context that the callback's thread does not see changes nothing (measured: 64-bit
  operands arrived with half their elements);
- narrower types widened exactly to 4 bytes (integers and bool by value, the 1- and 2-byte
  floats by their bits) and narrowed back. On the CPU a bfloat16 NaN keeps its payload; on
  a TPU the bitcast makes every NaN the canonical one and flushes subnormals to 0
  (measured; bfloat16 as itself through a raw ``pure_callback`` crossed there bit for bit,
  not yet tried as the bridge's wire).

Each array starts a multiple of ``ALIGN`` bytes into its vector: the host gets C-contiguous
views, aligned for their type, and nothing is copied on its way to a host function.
Leading batch axes, which ``vmap`` of a ``pure_callback`` puts in front
(``vmap_method="expand_dims"``), stay in front on both sides.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._host import kind
from ._refusals import RefusedValue

ALIGN = 64
"""Bytes between the starts of two arrays in one vector: a cache line."""

FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True)
class Place:
    """Where one array lies: ``count`` elements of vector ``lane``, from ``start``."""

    lane: int
    start: int
    count: int


@dataclass(frozen=True)
class Wire:
    """How each array of a call crosses: the vectors, and where each array lies in them.
    ``halves``: 64-bit types cross as two 32-bit parts (a TPU's lowering)."""

    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[np.dtype, ...]
    halves: bool = False

    @classmethod
    def of(cls, arrays: Sequence[Any], halves: bool | None = None) -> Wire:
        """For arrays, or anything with their ``shape`` and ``dtype`` (``ShapeDtypeStruct``);
        ``halves`` defaults to what the lowering in progress asks for (``in_halves``)."""
        return cls(
            tuple(tuple(a.shape) for a in arrays),
            tuple(np.dtype(a.dtype) for a in arrays),
            _HALVES.get() if halves is None else halves,
        )

    @functools.cached_property
    def _layout(self) -> tuple[tuple[tuple[np.dtype, int], ...], tuple[Place, ...]]:
        carriers: list[np.dtype] = []
        ends: list[int] = []
        places = []
        for shape, dtype in zip(self.shapes, self.dtypes):
            carrier, per_element = _carrier(dtype, self.halves)
            if carrier not in carriers:
                carriers.append(carrier)
                ends.append(0)
            lane = carriers.index(carrier)
            count = int(np.prod(shape, dtype=np.int64)) * per_element
            places.append(Place(lane, ends[lane], count))
            step = ALIGN // carrier.itemsize
            ends[lane] += -(-count // step) * step
        if not carriers:  # nothing to carry: one word (a TPU cannot move an empty array)
            carriers, ends = [np.dtype(np.uint32)], [0]
        # at least one element each: a TPU cannot move an empty array either
        return tuple((c, max(1, n)) for c, n in zip(carriers, ends)), tuple(places)

    @property
    def lanes(self) -> tuple[tuple[np.dtype, int], ...]:
        """Each vector's type and length."""
        return self._layout[0]

    @property
    def places(self) -> tuple[Place, ...]:
        return self._layout[1]

    def specs(self) -> tuple[jax.ShapeDtypeStruct, ...]:
        return tuple(jax.ShapeDtypeStruct((n,), c) for c, n in self.lanes)

    # -- on the device (JAX) ------------------------------------------------------------

    def pack(self, arrays: Sequence[jax.Array]) -> tuple[jax.Array, ...]:
        parts: list[list[jax.Array]] = [[] for _ in self.lanes]
        filled = [0] * len(self.lanes)
        for a, dtype, place in zip(arrays, self.dtypes, self.places):
            carrier = self.lanes[place.lane][0]
            lane = parts[place.lane]
            if place.start > filled[place.lane]:
                lane.append(jnp.zeros((place.start - filled[place.lane],), carrier))
            lane.append(_to_carrier(jnp.asarray(a), dtype, self.halves))
            filled[place.lane] = place.start + place.count
        vectors = []
        for lane, (carrier, length), end in zip(parts, self.lanes, filled):
            if length > end:
                lane.append(jnp.zeros((length - end,), carrier))
            vectors.append(jnp.concatenate(lane) if len(lane) > 1 else lane[0])
        return tuple(vectors)

    def unpack(self, vectors: Sequence[jax.Array]) -> tuple[jax.Array, ...]:
        return tuple(
            _from_carrier(vectors[p.lane][p.start : p.start + p.count], shape, dtype, self.halves)
            for shape, dtype, p in zip(self.shapes, self.dtypes, self.places)
        )

    # -- on the host (NumPy) ------------------------------------------------------------

    def read(self, vectors: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The arrays in ``vectors`` (leading batch axes in front of each)."""
        vectors = [_aligned(np.asarray(v)) for v in vectors]
        lead = vectors[0].shape[:-1]
        out = []
        for shape, dtype, p in zip(self.shapes, self.dtypes, self.places):
            chunk = vectors[p.lane][..., p.start : p.start + p.count]
            out.append(_host_array(np.ascontiguousarray(chunk), lead, shape, dtype, self.halves))
        return out

    def write(
        self, arrays: Sequence[np.ndarray], lead: tuple[int, ...] = (), name: str = "a host call"
    ) -> tuple[np.ndarray, ...]:
        """``arrays`` in vectors, each broadcast to the leading batch axes ``lead``.
        ``name`` says whose results they are, in a refusal."""
        if len(arrays) == 1 and self.lanes == ((self.dtypes[0], self.places[0].count),):
            # one array that fills its vector as itself: it is the vector, not copied into a
            # new one (on a TPU a copy of 40 MB into fresh memory cost about 40 ms)
            a = np.asarray(arrays[0], self.dtypes[0])
            if a.shape == lead + self.shapes[0] and a.flags.c_contiguous:
                return (a.reshape(lead + (-1,)),)
        vectors = tuple(np.zeros(lead + (n,), c) for c, n in self.lanes)
        for k, (a, shape, dtype, p) in enumerate(
            zip(arrays, self.shapes, self.dtypes, self.places)
        ):
            full = np.broadcast_to(np.asarray(a, dtype), lead + shape).reshape(lead + (-1,))
            target = vectors[p.lane][..., p.start : p.start + p.count]
            try:
                _fill(target, full, self.halves)
            except _BeyondFloat32 as beyond:
                raise RefusedValue(
                    f"{name}: result {k} ({dtype}, shape {shape}) holds {beyond.value!r}, beyond "
                    f"what a TPU's float64 holds (float32's range, magnitudes up to "
                    f"{FLOAT32_MAX:.4g}): it would arrive as inf. Rescale the problem, or return "
                    f"its logarithm."
                ) from None
        return vectors


@contextlib.contextmanager
def in_halves(halves: bool) -> Iterator[None]:
    """Within it, wires made by ``Wire.of`` carry 64-bit types in two 32-bit halves (or
    not): what a backend's lowering of the bridge's primitives sets (``_primitives``)."""
    token = _HALVES.set(halves)
    try:
        yield
    finally:
        _HALVES.reset(token)


_HALVES = contextvars.ContextVar("jaxbridge_in_halves", default=False)


def _carrier(dtype: np.dtype, halves: bool) -> tuple[np.dtype, int]:
    """The type of the vector that carries ``dtype``, and how many of its elements each of
    ``dtype``'s takes."""
    if dtype.kind == "c":
        carrier, per_element = _carrier(_part(dtype), halves)
        return carrier, 2 * per_element
    if dtype.itemsize == 8 and halves:  # float64, int64, uint64: two 32-bit parts
        return np.dtype({"f": np.float32, "i": np.int32, "u": np.uint32}[dtype.kind]), 2
    if dtype.itemsize in (4, 8) and dtype.isbuiltin == 1:
        return dtype, 1
    return (np.dtype(np.uint32) if kind(dtype) in "uf" else np.dtype(np.int32)), 1


def _part(dtype: np.dtype) -> np.dtype:
    """A complex type's real type."""
    return np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)


def _bits(dtype: np.dtype) -> np.dtype:
    """The unsigned integer of a narrow float's width (its bits cross, not its value)."""
    return np.dtype(f"u{dtype.itemsize}")


def _to_carrier(a: jax.Array, dtype: np.dtype, halves: bool) -> jax.Array:
    if dtype.kind == "c":  # real and imaginary parts, interleaved as NumPy stores them
        return _to_carrier(jnp.stack([a.real, a.imag], axis=-1), _part(dtype), halves)
    flat = a.reshape(-1)
    carrier, _ = _carrier(dtype, halves)
    if carrier == dtype:
        return flat
    if dtype == np.float64:  # halves: hi, then lo
        hi = flat.astype(jnp.float32)
        lo = (flat - hi.astype(jnp.float64)).astype(jnp.float32)
        return jnp.concatenate([hi, _low_part(jnp, hi, lo)])
    if dtype.itemsize == 8:  # int64, uint64 in halves: the high word, then the low one
        high = flat >> 32
        return jnp.concatenate([high, flat - (high << 32) + _LOW_OFFSET[dtype.kind]]).astype(
            carrier
        )
    if kind(dtype) == "f":
        flat = lax.bitcast_convert_type(flat, _bits(dtype))
    return flat.astype(carrier)


def _from_carrier(
    chunk: jax.Array, shape: tuple[int, ...], dtype: np.dtype, halves: bool
) -> jax.Array:
    if dtype.kind == "c":
        parts = _from_carrier(chunk, (*shape, 2), _part(dtype), halves)
        return lax.complex(parts[..., 0], parts[..., 1])
    carrier, _ = _carrier(dtype, halves)
    if carrier == dtype:
        return chunk.reshape(shape)
    if dtype.itemsize == 8:  # halves
        half = chunk.shape[0] // 2
        high, low = chunk[:half].astype(dtype), chunk[half:].astype(dtype)
        if dtype == np.float64:  # (where low is 0, high alone: -0.0 + -0.0 is +0.0 on a TPU)
            return jnp.where(low == 0, high, high + low).reshape(shape)
        return ((high << 32) + (low - _LOW_OFFSET[dtype.kind])).reshape(shape)
    if dtype == np.bool_:
        return (chunk != 0).reshape(shape)
    if kind(dtype) == "f":
        return lax.bitcast_convert_type(chunk.astype(_bits(dtype)), dtype).reshape(shape)
    return chunk.astype(dtype).reshape(shape)


def _host_array(
    chunk: np.ndarray, lead: tuple[int, ...], shape: tuple[int, ...], dtype: np.dtype, halves: bool
) -> np.ndarray:
    """The array of ``dtype`` (batch axes ``lead``, core ``shape``) that ``chunk`` holds in
    its carrier's elements: a view where it crosses as itself."""
    if dtype.kind == "c":
        size = int(np.prod(shape, dtype=np.int64))
        parts = _host_array(chunk, lead, (2 * size,), _part(dtype), halves)
        return parts.view(dtype).reshape(lead + shape)
    carrier, _ = _carrier(dtype, halves)
    if carrier == dtype:
        return chunk.reshape(lead + shape)
    if dtype.itemsize == 8:  # halves
        half = chunk.shape[-1] // 2
        whole = chunk[..., :half].astype(dtype)
        if dtype == np.float64:
            whole += chunk[..., half:]
        else:
            whole <<= 32
            whole += chunk[..., half:].astype(dtype) - _LOW_OFFSET[dtype.kind]
        return whole.reshape(lead + shape)
    if dtype == np.bool_:
        return (chunk != 0).reshape(lead + shape)
    if kind(dtype) == "f":
        return chunk.astype(_bits(dtype)).view(dtype).reshape(lead + shape)
    return chunk.astype(dtype).reshape(lead + shape)


def _fill(target: np.ndarray, flat: np.ndarray, halves: bool) -> None:
    """Write ``flat`` (leading batch axes, then one axis) into ``target``, its carrier's
    elements."""
    dtype = flat.dtype
    if dtype.kind == "c":
        parts = np.ascontiguousarray(flat).view(_part(dtype))
        _fill(target, parts, halves)
        return
    if dtype == np.float64 and halves:
        with np.errstate(over="ignore", invalid="ignore"):
            hi = flat.astype(np.float32)
            beyond = np.isinf(hi) & np.isfinite(flat)
            if beyond.any():
                raise _BeyondFloat32(float(flat[beyond].flat[0]))
            lo = (flat - hi).astype(np.float32)
        half = target.shape[-1] // 2
        target[..., :half] = hi
        target[..., half:] = _low_part(np, hi, lo)
    elif dtype.itemsize == 8 and halves:  # int64, uint64
        high = flat >> 32
        half = target.shape[-1] // 2
        target[..., :half] = high
        target[..., half:] = flat - (high << 32) + _LOW_OFFSET[dtype.kind]
    elif kind(dtype) == "f" and dtype.itemsize < 4:
        target[...] = flat.view(_bits(dtype))
    else:
        target[...] = flat


_LOW_OFFSET = {"i": -(2**31), "u": 0}
"""Added to a 64-bit integer's low word (0 to 2**32 - 1) so that it fits its carrier: int32
for int64, uint32 for uint64."""


def _low_part(xp: Any, hi: Any, lo: Any) -> Any:
    """A pair's ``lo`` as it crosses (``xp``: NumPy or jax.numpy): 0 where ``hi`` is not
    finite (``inf - inf`` is NaN), and ``hi``'s own zero where ``hi`` is zero, so that
    ``hi + lo`` keeps the sign of -0.0."""
    return xp.where(xp.isfinite(hi) & (hi != 0), lo, xp.where(hi == 0, hi, xp.zeros_like(lo)))


class _BeyondFloat32(Exception):
    def __init__(self, value: float) -> None:
        self.value = value


def _aligned(vector: np.ndarray) -> np.ndarray:
    """``vector`` as a C-contiguous array aligned for its type (a copy only if it is not)."""
    return np.require(vector, requirements=["C", "A"])
