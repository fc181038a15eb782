"""The portable transport's vectors, one per type each way (``jaxbridge._wire``): every dtype
a host call may carry, scalars, empty arrays and batches come back as they went, bit for bit,
and reach the host aligned and C-contiguous. On a TPU, separate operands and results arrived
in each other's places, and its float64 crosses as two float32 parts (docs/accelerators.md):
these tests hold the packing to exactness wherever it runs, the TPU's halves included."""

from __future__ import annotations

import contextlib
import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import scipy.linalg

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


ON_TPU = jax.default_backend() == "tpu"


def _round_trip(arrays, halves=ON_TPU, seen=None):
    """Device arrays through pack, the host's read and write, and unpack, under jit, 64-bit
    types in halves where the bridge's lowering has them (a TPU); the arrays the host read
    are appended to ``seen``."""
    wire = Wire.of(arrays, halves)

    def host(*vectors):
        got = wire.read(vectors)
        if seen is not None:
            seen.append(got)
        return wire.write(got, np.shape(vectors[0])[:-1])

    def program(*xs):
        vectors = jax.pure_callback(host, wire.specs(), *wire.pack(xs), vmap_method="expand_dims")
        return wire.unpack(vectors)

    return program


def _held(x):
    """``x`` as the default device holds it (a TPU's float64 has 48 bits: what the host
    gets is what the device holds, not what was put there)."""
    return np.asarray(jax.device_put(x))


def _run(program, *args):
    """``program`` jitted, its results waited for (a TPU runs the host's part later)."""
    return jax.block_until_ready(jax.jit(program)(*args))


def _same(got, want, held=True):
    """``got`` is ``want`` bit for bit, as the device holds it if ``held`` (else as it is:
    what a TPU holds as a float32 pair, whose sign of zero its own transfer drops)."""
    want = _held(want) if held else want
    assert np.asarray(got).dtype == np.dtype(want.dtype)
    assert np.asarray(got).shape == want.shape
    assert np.asarray(got).tobytes() == want.tobytes()


def test_every_narrow_and_word_sized_dtype_crosses_bit_for_bit():
    arrays = _arrays(DTYPES + DTYPES[::-1], np.random.default_rng(0))
    for got, want in zip(_run(_round_trip(arrays), *arrays), arrays, strict=True):
        _same(got, want)


def test_eight_and_sixteen_byte_dtypes_cross_bit_for_bit():
    with jax.enable_x64(True):
        arrays = _arrays(WIDE + [np.float32, np.bool_], np.random.default_rng(1))
        for got, want in zip(_run(_round_trip(arrays), *arrays), arrays, strict=True):
            _same(got, want)


def test_nothing_to_send_is_one_element():
    """A TPU cannot move an empty array: an empty one, or none, crosses as one element."""
    wire = Wire.of([jax.ShapeDtypeStruct((0, 3), np.float32)])
    assert wire.lanes == ((np.float32, 1),) and wire.places[0].count == 0
    assert Wire.of([]).lanes == ((np.uint32, 1),)


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


def test_a_lone_result_that_fills_its_vector_is_not_copied_and_crosses_bit_for_bit():
    """One result of a carrier's own type whose size needs no padding is the vector itself
    (a copy of 40 MB into fresh memory cost a TPU's host about 40 ms); one that needs
    padding, is broadcast, or is of a narrower type goes into a new vector, its values the
    same. Both cross bit for bit, batched too."""
    rng = np.random.default_rng(5)
    fills = rng.standard_normal((2, 16)).astype(np.float32)  # 16 float32s: 64 bytes
    wire = Wire.of([fills[0]])
    (vector,) = wire.write([fills], (2,))
    assert np.shares_memory(vector, fills)
    for result, shape in [
        (rng.standard_normal((2, 15)).astype(np.float32), (15,)),  # padded to 16
        (np.broadcast_to(np.float32(2.5), (2, 16)), (16,)),  # broadcast
        (rng.standard_normal((2, 16)), (16,)),  # float64 for a float32 result: cast
    ]:
        spec = jax.ShapeDtypeStruct(shape, np.float32)
        (vector,) = Wire.of([spec]).write([result], (2,))
        assert not np.shares_memory(vector, result)
        _same(vector[:, : shape[0]], np.asarray(result, np.float32), held=False)
    program = _round_trip([fills[0]])
    _same(jax.jit(jax.vmap(program))(fills)[0], fills)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int8])
def test_the_packed_vector_holds_each_array_where_its_counts_say(dtype):
    """The host reads the device's packing: the first array's words come first."""
    x = (np.arange(6).reshape(2, 3) + 1).astype(dtype)
    y = -(np.arange(3) + 1).astype(dtype)
    wire = Wire.of([x, y])
    vectors = [np.asarray(v) for v in jax.jit(wire.pack)([jnp.asarray(x), jnp.asarray(y)])]
    assert [(v.shape[0], v.dtype) for v in vectors] == [(n, c) for c, n in wire.lanes]
    got_x, got_y = wire.read(vectors)
    _same(got_x, x)
    _same(got_y, y)


def test_each_bridged_call_is_lowered_with_host_transfers_of_its_own():
    """Two calls of one adapter on arrays of one shape: JAX's lowering cache made them one
    lowered function, sharing its host callback (on a TPU, its transfer channels, which
    then mixed the two calls' arrays). Each call has a callback of its own, as JAX's
    ``pure_callback`` does."""
    from jaxbridge.adapters.linalg import LinearSolve

    solve, a, b = LinearSolve(), 2 * np.eye(3, dtype=np.float32), np.ones(3, np.float32)
    on_cpu = jax.device_put(a, jax.devices("cpu")[0])  # (the CPU's lowering, on a TPU too)
    with _portable():
        text = jax.jit(lambda a: solve(a, b) + solve(a, 2 * b)).lower(on_cpu).as_text()
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


def test_each_array_reaches_the_host_aligned_and_c_contiguous():
    """An 8-byte array after an odd number of 4-byte elements (a bool, int32 or float32
    argument of odd size) reached the host 4 bytes off its alignment, and SciPy refused it."""
    rng = np.random.default_rng(3)
    with jax.enable_x64(True):
        arrays = [
            np.array([True, False, True]),
            rng.standard_normal(7).astype(np.float32),
            rng.standard_normal((3, 3)),
            np.arange(5, dtype=np.int32),
            rng.standard_normal(3) + 1j,
            rng.standard_normal(3),
        ]
        seen = []
        for got, want in zip(_run(_round_trip(arrays, seen=seen), *arrays), arrays):
            _same(got, want)
        for array, want in zip(seen[0], arrays, strict=True):
            _same(array, want)
            assert array.flags.c_contiguous and array.flags.aligned, array.dtype
    scipy.linalg.solve(seen[0][2], seen[0][5])  # (refused a misaligned view before)


class KeepSolve(jaxbridge.Adapter):
    """A new user's adapter: a bool argument of odd size first, then float64 ones."""

    signature = "(n),(n,n),(n)->(n)"

    def forward(self, keep, a, b):
        return np.where(keep, scipy.linalg.solve(a, b), 0)


def test_a_user_adapter_after_a_bool_argument_gets_scipys_answer_through_the_portable_transport():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((3, 3)) + 3 * np.eye(3), rng.standard_normal(3)
    keep = np.array([True, True, False])
    with jax.enable_x64(True), _portable():
        got = jax.jit(KeepSolve())(keep, a, b)
        # SciPy's answer on what the device holds, as the device holds it (a TPU: 48 bits)
        want = _held(np.where(keep, scipy.linalg.solve(_held(a), _held(b)), 0))
    np.testing.assert_array_equal(got, want)


@pytest.mark.xfail(
    ON_TPU,
    reason="open: a TPU's bitcast makes bfloat16 NaNs canonical and flushes subnormals",
    strict=True,
)
def test_a_bfloat16_nan_keeps_its_payload_and_raises_no_warning():
    """bfloat16 crossed widened to float32 and narrowed by NumPy's cast, which canonicalised
    NaN payloads and warned ('invalid value encountered in cast') on a signalling NaN. Its
    bits cross now; on a TPU the bitcast itself canonicalises them (measured), open."""
    bits = np.array([0x7F81, 0xFFC3, 0x7FC0, 0x3F80, 0x0001, 0x8000], np.uint16)
    x = bits.view(ml_dtypes.bfloat16)
    seen = []
    got = _run(_round_trip([x], seen=seen), x)[0]
    assert np.asarray(seen[0][0]).view(np.uint16).tolist() == bits.tolist()
    assert np.asarray(got).view(np.uint16).tolist() == bits.tolist()


# -- a TPU's float64: two float32 parts ---------------------------------------------------


def _double_floats(rng, n):
    """float64 values a TPU can hold: hi + lo, each a float32, lo within hi's last bit."""
    hi = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    lo = (hi.astype(np.float64) * rng.uniform(-(2.0**-25), 2.0**-25, n)).astype(np.float32)
    # a TPU (and XLA's CPU) flushes float32 subnormals: a pair's lo is normal or 0
    lo[np.abs(lo) < np.finfo(np.float32).tiny] = 0
    return hi.astype(np.float64) + lo.astype(np.float64)


def test_float64_as_halves_crosses_what_the_device_holds_bit_for_bit():
    """What a TPU holds (a float32 pair) reaches the host and comes back unchanged, for
    every magnitude in float32's range, and the specials."""
    rng = np.random.default_rng(4)
    with jax.enable_x64(True):
        x = np.concatenate(
            [
                _double_floats(rng, 2000),
                [0.0, -0.0, np.inf, -np.inf, np.nan, 3.0e38, float(np.float32(1.5e-38))],
            ]
        )
        z = x[:200] + 1j * x[200:400]
        seen = []
        got_x, got_z = _run(_round_trip([x, z], halves=True, seen=seen), x, z)
        _same(seen[0][0], x, held=False)
        _same(seen[0][1], z, held=False)
        # JAX's own transfer back (device_get) drops a float64 zero's sign on a TPU: the
        # results are compared as it reads them, and the zeros' signs on the device
        _same(got_x, x)
        _same(got_z, z)
        assert _signs_on_device(got_x[2000:2002]).tolist() == [False, True]


def _signs_on_device(x):
    """Whether each entry's sign bit is set, computed where ``x`` lives (on a TPU,
    ``jnp.signbit`` of float64 does not compile; ``1 / x`` keeps a zero's sign)."""
    return np.asarray(jax.jit(lambda v: (v < 0) | (1.0 / v < 0))(x))


def test_float64_as_halves_keeps_the_digits_a_float32_pair_holds():
    """An IEEE float64 (53 bits) crosses to a TPU as the nearest float32 pair: 48 bits."""
    x = np.random.default_rng(5).standard_normal(1000)
    with jax.enable_x64(True):
        got = np.asarray(_run(_round_trip([x], halves=True), x)[0])
    assert np.max(np.abs(got - x) / np.abs(x)) < 2.0**-47
    assert not np.array_equal(got, x)  # (what the CPU holds is more: this is the TPU's wire)


def test_64_bit_integers_in_halves_cross_bit_for_bit():
    """int64 and uint64 as their high and low words, by value: the extremes too."""
    i64, u64 = np.iinfo(np.int64), np.iinfo(np.uint64)
    with jax.enable_x64(True):
        i = np.array(
            [i64.min, i64.min + 1, -(2**32), -(2**31) - 1, -1, 0, 1, 2**31, 2**32 + 5, i64.max]
        )
        u = np.array([0, 1, 2**31, 2**32 - 1, 2**32, 2**63 + 7, u64.max], np.uint64)
        seen = []
        got_i, got_u = _run(_round_trip([i, u], halves=True, seen=seen), i, u)
        for got, want in [(seen[0][0], i), (seen[0][1], u), (got_i, i), (got_u, u)]:
            _same(got, want)
    assert all(c.itemsize == 4 for c, _ in Wire.of([i, u, np.ones(2)], halves=True).lanes)


def test_float64_as_halves_refuses_a_result_beyond_float32s_range_naming_it():
    wire = Wire.of(
        [jax.ShapeDtypeStruct((2,), np.float32), jax.ShapeDtypeStruct((3,), np.float64)], True
    )
    with pytest.raises(
        ValueError, match=r"Fit\.forward: result 1 \(float64, shape \(3,\)\) holds 1e\+300"
    ):
        wire.write([np.ones(2, np.float32), np.array([1.0, 1e300, 2.0])], (), "Fit.forward")
    with pytest.raises(ValueError, match="result 1 .* holds -3.5e\\+38"):
        wire.write([np.ones(2, np.float32), np.array([-3.5e38, 0, 0])], (), "Fit.forward")
    # inf and NaN are what they are; under float32's range a TPU's float64 flushes to 0
    vectors = wire.write([np.ones(2, np.float32), np.array([np.inf, np.nan, 1e-300])])
    assert [v.tolist() for v in wire.read(vectors)][1][:1] == [np.inf]
    assert np.isnan(wire.read(vectors)[1][1]) and wire.read(vectors)[1][2] == 0.0
