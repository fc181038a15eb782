"""The portable transport's one vector of words each way (``jaxbridge._wire``): every dtype
a host call may carry, scalars, empty arrays and batches come back as they went, bit for bit.
On a TPU, separate operands and results arrived in each other's places (docs/accelerators.md);
these tests hold the packing to exactness wherever it runs."""

from __future__ import annotations

import contextlib
import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jaxbridge
from jaxbridge import _transport
from jaxbridge._wire import Wire

DTYPES = [
    np.float32,
    np.int32,
    np.uint32,
    np.bool_,
    np.int8,
    np.uint16,
    np.float16,
    ml_dtypes.bfloat16,
    np.complex64,
]
WIDE = [np.float64, np.int64, np.complex128]


def _arrays(dtypes, rng):
    shapes = [(), (3,), (2, 3), (0,), (2, 0, 4)]
    out = []
    for k, dtype in enumerate(dtypes):
        shape = shapes[k % len(shapes)]
        values = rng.standard_normal(shape) * 100
        if np.dtype(dtype).kind == "c":
            values = values + 1j * rng.standard_normal(shape)
        out.append(np.asarray(values).astype(dtype))
    return out


def _round_trip(arrays):
    """Device arrays through pack, the host's read and write, and unpack, under jit."""
    wire = Wire.of(arrays)

    def host(words):
        words = np.asarray(words)
        return wire.write(wire.read(words), words.shape[:-1])

    def program(*xs):
        words = jax.pure_callback(host, wire.spec(), wire.pack(xs), vmap_method="expand_dims")
        return wire.unpack(words)

    return program


def _same(got, want):
    assert np.asarray(got).dtype == np.dtype(want.dtype)
    assert np.asarray(got).shape == want.shape
    assert np.asarray(got).tobytes() == want.tobytes()


def test_every_narrow_and_word_sized_dtype_crosses_bit_for_bit():
    arrays = _arrays(DTYPES + DTYPES[::-1], np.random.default_rng(0))
    for got, want in zip(jax.jit(_round_trip(arrays))(*arrays), arrays, strict=True):
        _same(got, want)


def test_eight_and_sixteen_byte_dtypes_cross_bit_for_bit():
    with jax.enable_x64(True):
        arrays = _arrays(WIDE + [np.float32, np.bool_], np.random.default_rng(1))
        for got, want in zip(jax.jit(_round_trip(arrays))(*arrays), arrays, strict=True):
            _same(got, want)


def test_nothing_to_send_is_one_word():
    wire = Wire.of([jax.ShapeDtypeStruct((0, 3), np.float32)])
    assert wire.words == 1 and wire.counts == (0,)


def test_a_batch_keeps_its_axes_in_front_on_both_sides():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 2, 3)).astype(np.float32)
    b = rng.integers(-5, 5, (4, 3)).astype(np.int32)
    c = np.float32(7.5)  # not batched: broadcast to every element
    program = _round_trip([a[0], b[0], c])
    got = jax.jit(jax.vmap(program, in_axes=(0, 0, None)))(a, b, c)
    _same(got[0], a)
    _same(got[1], b)
    _same(got[2], np.full(4, c, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int8])
def test_the_packed_vector_holds_each_array_where_its_counts_say(dtype):
    """The host reads the device's packing: the first array's words come first."""
    x = (np.arange(6).reshape(2, 3) + 1).astype(dtype)
    y = -(np.arange(3) + 1).astype(dtype)
    wire = Wire.of([x, y])
    words = np.asarray(jax.jit(wire.pack)([jnp.asarray(x), jnp.asarray(y)]))
    assert words.shape == (wire.words,) and words.dtype == np.uint32
    got_x, got_y = wire.read(words)
    _same(got_x, x)
    _same(got_y, y)


def test_each_bridged_call_is_lowered_with_host_transfers_of_its_own():
    """Two calls of one adapter on arrays of one shape: JAX's lowering cache made them one
    lowered function, sharing its host callback (on a TPU, its transfer channels, which
    then mixed the two calls' arrays). Each call has a callback of its own, as JAX's
    ``pure_callback`` does."""
    from jaxbridge.adapters.linalg import LinearSolve

    solve, a, b = LinearSolve(), 2 * np.eye(3, dtype=np.float32), np.ones(3, np.float32)
    with _portable():
        text = jax.jit(lambda a: solve(a, b) + solve(a, 2 * b)).lower(a).as_text()
    calls = re.findall(r"custom_call @xla_ffi_python_cpu_callback\(.*?index = (\d+)", text)
    assert len(calls) == 2 and len(set(calls)) == 2, calls


@contextlib.contextmanager
def _portable():
    before = _transport._transport
    jaxbridge.set_transport("pure_callback")
    try:
        yield
    finally:
        jaxbridge.set_transport(before)
