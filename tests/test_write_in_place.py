"""``forward(..., *, out)``: results written into the arrays the bridge hands over, XLA's own
buffers with the buffer_callback transport."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _cases import assert_close as _assert_close

import jaxbridge as jb

SEEN: list = []  # per forward call: None, or (shape, dtype, writeable, C-contiguous, address) per out


def _record(out):
    if out is None:
        SEEN.append(None)
        return
    SEEN.append(
        [(o.shape, o.dtype, o.flags.writeable, o.flags.c_contiguous, o.ctypes.data) for o in out]
    )


class Exponential(jb.Adapter):
    """``exp(x)``, written in place, with the derivative saved in its own residual buffer."""

    signature = "(n)->(n)"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x, *, out=None):
        _record(out)
        if out is None:  # (eager calls, pure_callback)
            return np.exp(x), np.exp(x)
        y, derivative = out
        np.exp(x, out=y)
        np.exp(x, out=derivative)
        return y, derivative

    def backward(self, res, g):
        _, _, derivative = res
        return (g * derivative,)


class LoopedExponential(Exponential):
    signature = "()->()"  # scalar elements: each out is a 0-d view into the batch's buffer
    vectorized = False


@pytest.fixture(params=["buffer_callback", "pure_callback"])
def transport(request):
    jb.set_transport(request.param)
    yield request.param
    jb.set_transport(os.environ.get("JAXBRIDGE_TRANSPORT", "auto"))


def assert_close(actual, expected):
    _assert_close(actual, expected, np.float32)  # (NumPy's exp and XLA's differ by an ulp)


def _loss(f):
    return lambda x: jnp.sum(jnp.sin(f(x)))


def _fresh(adapter):
    # a new function for jit each time: a traced call keeps the transport it was traced with
    return lambda *args: adapter(*args)


def _outs(call):
    return None if call is None else [s[:4] for s in call]


def test_forward_writes_every_result_in_place_under_each_transform(transport):
    x = jnp.linspace(-1.0, 1.0, 5, dtype=jnp.float32)
    expected = jnp.exp(x)
    given = transport == "buffer_callback"  # pure_callback copies: it has no buffers to give
    SEEN.clear()
    assert_close(jax.jit(_fresh(Exponential()))(x), expected)
    # the residual gets its buffer too, though the primal call keeps none
    assert _outs(SEEN[0]) == ([((5,), np.float32, True, True)] * 2 if given else None)
    SEEN.clear()
    assert_close(jax.jit(jax.grad(_loss(Exponential())))(x), jnp.cos(expected) * expected)
    assert len(SEEN) == 1
    xs = jnp.stack([x, 2 * x, -x])
    SEEN.clear()
    got = jax.jit(jax.vmap(jax.grad(_loss(Exponential()))))(xs)
    assert_close(got, jnp.cos(jnp.exp(xs)) * jnp.exp(xs))
    assert _outs(SEEN[0]) == ([((3, 5), np.float32, True, True)] * 2 if given else None)


def test_eager_calls_give_no_arrays_to_write_into():
    x = jnp.array([0.5, -2.0])
    SEEN.clear()
    assert_close(Exponential()(x), jnp.exp(x))
    assert SEEN == [None]


def test_buffer_callback_hands_over_xla_own_result_buffers(transport):
    if transport != "buffer_callback":
        pytest.skip("pure_callback copies results to the device: no buffers to hand over")
    x = jnp.arange(4.0)
    SEEN.clear()
    y = jax.jit(_fresh(Exponential()))(x)
    assert y.unsafe_buffer_pointer() == SEEN[0][0][4]  # the very memory forward wrote


def test_looped_adapter_writes_each_element_into_its_view(transport):
    xs = jnp.array([[0.0, 1.0, -1.0], [2.0, 0.5, -0.5]])
    SEEN.clear()
    assert_close(jax.jit(jax.vmap(_fresh(LoopedExponential())))(xs), jnp.exp(xs))
    assert len(SEEN) == 6  # one forward per element, each writing its 0-d views
    views = [((), np.dtype(xs.dtype), True, True)] * 2
    assert all(_outs(call) == (views if transport == "buffer_callback" else None) for call in SEEN)
    grad = jax.jit(jax.vmap(jax.grad(_loss(LoopedExponential()))))
    assert_close(grad(xs.ravel()), jnp.cos(jnp.exp(xs.ravel())) * jnp.exp(xs.ravel()))


class WritesElsewhere(jb.Adapter):
    """Scribbles on its out array and returns a different one: the returned one counts."""

    signature = "(n)->(n)"
    vectorized = True

    def forward(self, x, *, out=None):
        if out is not None:
            out[0][...] = np.nan
        return 3 * x


def test_a_result_returned_as_another_array_is_copied_into_place(transport):
    x = jnp.array([1.0, -2.0, 4.0])
    assert_close(jax.jit(_fresh(WritesElsewhere()))(x), 3 * x)
    assert_close(
        jax.jit(jax.vmap(_fresh(WritesElsewhere())))(jnp.stack([x, x])), 3 * jnp.stack([x, x])
    )


class Scaled(jb.Adapter):
    signature = "()->()"

    def forward(self, x, *, scale):
        return scale * x


class OutWithoutDefault(jb.Adapter):
    signature = "()->()"

    def forward(self, x, *, out):
        return x


@pytest.mark.parametrize("adapter", [Scaled, OutWithoutDefault])
def test_forward_takes_no_keyword_only_parameter_but_out_none(adapter):
    message = rf"{adapter.__name__}\.forward may take one keyword-only parameter, `out=None`"
    with pytest.raises(TypeError, match=message):
        adapter()(jnp.ones(2))
