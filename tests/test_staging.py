"""A large call through the portable transport goes to the host in slices, each by a callback
of its own, into buffers its call site keeps (``jaxbridge._staging``): what a TPU's lowering
does from two slices' worth of bytes (docs/accelerators.md). Here with slices of a few
hundred bytes, so that small arrays take the same route: the host sees each array whole and
bit for bit, results come back bit for bit, call after call, under jit, vmap and grad."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge
from jaxbridge import _primitives, _transport
from jaxbridge._staging import Staging, sliced

SLICE = 256

pytestmark = pytest.mark.tpu  # (in the TPU subset: there the TPU's own lowering slices)


class Counting(Staging):
    """The bridge's staging, counting the slices that reached the host."""

    made: list[Counting] = []

    def __init__(self, lanes, slice_bytes):
        super().__init__(lanes, slice_bytes)
        self.received = 0
        Counting.made.append(self)

    def _receive(self, piece):
        self.received += 1
        return super()._receive(piece)


@pytest.fixture
def slices(monkeypatch):
    """Slices of ``SLICE`` bytes, through the portable transport: on a TPU by its own
    lowering (``SLICE_BYTES``), elsewhere by ``sliced``, which other lowerings leave be."""
    monkeypatch.setattr(_primitives, "SLICE_BYTES", SLICE)
    monkeypatch.setattr(_transport, "Staging", Counting)
    Counting.made = []
    jax.clear_caches()  # (each test lowers its calls afresh, with its own staging)
    before, x64 = _transport._transport, jax.config.read("jax_enable_x64")
    jaxbridge.set_transport("pure_callback")
    # 64-bit mode globally: XLA runs the callbacks on threads that a context does not reach
    jax.config.update("jax_enable_x64", True)
    try:
        with sliced(SLICE):
            yield Counting.made
    finally:
        jaxbridge.set_transport(before)
        jax.config.update("jax_enable_x64", x64)


SEEN: list = []  # (what Mixed's host saw)
OUTS: list = []  # (the result buffers Scale was given)


class Mixed(jaxbridge.Adapter):
    """Three carriers each way: float32, int32 and float64 (on a TPU, float32 halves)."""

    signature = "(n),(m),(k)->(n),(m),(k)"

    def forward(self, x, i, z):
        SEEN.append((x.copy(), i.copy(), z.copy()))
        return np.sin(x), (i * 3).astype(np.float32), z * -3.0


def _held(x):
    """float64 values that a TPU holds exactly (its float64 is a float32 pair): float32's."""
    return np.asarray(x).astype(np.float32).astype(np.float64)


def _mixed(rng, n=1001):
    x = rng.standard_normal(n).astype(np.float32)
    i = rng.integers(-(2**30), 2**30, 37).astype(np.int32)
    z = _held(rng.standard_normal(75) * 2.0 ** rng.integers(-30, 30, 75))
    return x, i, z


def test_a_large_call_reaches_the_host_whole_and_returns_bit_for_bit(slices):
    rng = np.random.default_rng(0)
    x, i, z = _mixed(rng)
    SEEN.clear()
    got = jax.jit(Mixed())(x, i, z)
    (staging,) = slices
    # every lane in slices of at most SLICE bytes, each of which reached the host
    assert len(staging.slices) >= (x.nbytes + i.nbytes + z.nbytes) // SLICE
    assert staging.received == len(staging.slices)
    for seen, sent in zip(SEEN[0], (x, i, z)):
        np.testing.assert_array_equal(seen, sent)
    for g, want in zip(got, (np.sin(x), (i * 3).astype(np.float32), z * -3.0)):
        np.testing.assert_array_equal(np.asarray(g), want.astype(g.dtype))


def test_kept_buffers_hold_each_calls_own_values(slices):
    """The call site's buffers are reused: a second call with other arrays (and one where
    only a single slice differs) reads its own values, never the first call's."""
    rng = np.random.default_rng(1)
    call = jax.jit(Mixed())
    for x, i, z in [_mixed(rng), _mixed(rng)]:
        for x in (x, np.concatenate([x[:-1], [7.0]]).astype(np.float32)):
            got = call(x, i, z)
            np.testing.assert_array_equal(np.asarray(got[0]), np.sin(x))
            np.testing.assert_array_equal(np.asarray(got[2]), z * -3.0)
    assert len(slices) == 1  # one call site, four calls


class Scale(jaxbridge.Adapter):
    """y = c x, writing into the result buffer it is given."""

    signature = "(n),()->(n)"

    def forward(self, x, c, *, out=None):
        OUTS.append(out)
        if out is None:
            return c * x
        (y,) = out
        np.multiply(x, c, out=y)
        return y

    def backward(self, res, g):
        x, c, _ = res
        return c * g, np.sum(g * x, axis=-1)


def test_a_sliced_call_offers_its_kept_result_buffers_and_differentiates_exactly(slices):
    x = _held(np.random.default_rng(2).standard_normal(300))
    c = np.float64(1.5)
    OUTS.clear()
    y = jax.jit(Scale())(x, c)
    np.testing.assert_array_equal(np.asarray(y), c * x)
    assert OUTS[-1] is not None and OUTS[-1][0].shape == x.shape
    # d/dx sum(y * x) = 2 c x and d/dc = sum(x^2): exact in binary for c = 1.5
    gx, gc = jax.jit(jax.grad(lambda x, c: jnp.sum(Scale()(x, c) * x), (0, 1)))(x, c)
    np.testing.assert_array_equal(np.asarray(gx), 2 * c * x)
    np.testing.assert_allclose(float(gc), float(np.sum(x * x)), rtol=1e-13)  # (48 bits on a TPU)
    assert len(slices) >= 2  # the forward's and the backward's calls both sliced


def test_a_batch_goes_up_in_slices_in_one_call(slices):
    x = _held(np.random.default_rng(3).standard_normal((4, 200)))
    c = np.array([1.0, -2.0, 0.5, 3.0])
    OUTS.clear()
    y = jax.jit(jax.vmap(Scale()))(x, c)
    np.testing.assert_array_equal(np.asarray(y), c[:, None] * x)
    assert len(slices) == 1  # one host call for the batch, looped over its elements there
    assert len(OUTS) == 4 and all(out is not None for out in OUTS)


def test_a_jit_function_called_from_two_places_keeps_each_calls_arrays(slices):
    """JAX lowers ``inner`` once, as one function called from both places, so both calls
    share one call site's callbacks and run at once: each reads its own arrays."""
    inner = jax.jit(lambda x: Scale()(x, 3.0))
    both = jax.jit(lambda x, y: (inner(x), inner(y), inner(x + y)))
    rng = np.random.default_rng(5)
    for _ in range(5):
        x, y = (_held(rng.standard_normal(500)) for _ in range(2))
        got = both(x, y)
        for g, want in zip(got, (3 * x, 3 * y, 3 * (x + y))):
            np.testing.assert_array_equal(np.asarray(g), want)


def test_a_small_call_crosses_in_one_callback(slices):
    x = np.ones(SLICE // 4, np.float32)  # one slice's worth: under two
    np.testing.assert_array_equal(np.asarray(jax.jit(Scale())(x, np.float32(2))), 2 * x)
    assert slices == []


def test_each_call_takes_the_slices_of_its_own_tokens():
    """One lowered call site serving two calls at once (a ``jit`` function called from two
    places): their slices interleave, and each call takes its own by their tokens."""
    staging = Staging([(np.dtype(np.float32), 1000)], SLICE)
    first, second = [], []
    for k, (_, start, stop) in enumerate(staging.slices):
        first.append(staging._receive(np.full(stop - start, k, np.float32)))
        second.append(staging._receive(np.full(stop - start, -k, np.float32)))
    want = np.repeat(np.arange(16), 64)[:1000]
    with staging.lock:
        np.testing.assert_array_equal(staging.whole(second, "Scale.forward")[0], -want)
        np.testing.assert_array_equal(staging.whole(first, "Scale.forward")[0], want)
        # XLA may run a call twice on the same tokens
        np.testing.assert_array_equal(staging.whole(first, "Scale.forward")[0], want)
        with pytest.raises(RuntimeError, match=r"Scale.forward: 1 of the 16 slices"):
            staging.whole([*first[:3], np.int32(12345), *first[4:]], "Scale.forward")


@pytest.mark.skipif(jax.default_backend() != "tpu", reason="only a TPU's lowering slices")
def test_on_a_tpu_a_call_of_megabytes_goes_up_in_slices_by_default(monkeypatch):
    """Slices of the default size (``SLICE_BYTES``), of float32, or of float64 in halves
    where 64-bit mode is on (``JAX_ENABLE_X64=1``)."""
    monkeypatch.setattr(_transport, "Staging", Counting)
    Counting.made = []
    jax.clear_caches()
    x = _held(np.random.default_rng(4).standard_normal(3_000_000)).astype(jnp.zeros(()).dtype)
    c = x.dtype.type(1.5)
    y = jax.jit(Scale())(x, c)
    gx = jax.jit(jax.grad(lambda x: jnp.sum(Scale()(x, c) * x)))(x)
    assert len(Counting.made) == 2 and all(s.received == len(s.slices) > 1 for s in Counting.made)
    np.testing.assert_array_equal(np.asarray(y), c * x)
    np.testing.assert_array_equal(np.asarray(gx), 2 * c * x)
