"""Adapters on PyTorch's arrays (``arrays = "torch"``), on the CPU backend: the hand-off of
XLA's own buffers (no copy), results written into XLA's result buffers, batching, every
transformation, the result checks, the input guard, and the errors. The same plumbing
serves CuPy and PyTorch on a GPU (``test_device_gpu.py``); PyTorch's CPU build exercises
it where there is no GPU."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.testing import check_adapter

torch = pytest.importorskip("torch", reason="PyTorch is not installed (the `torch` extra)")
pytestmark = pytest.mark.skipif(
    jax.default_backend() != "cpu", reason="PyTorch's CPU tensors take the CPU backend's buffers"
)


class Sin(jb.Adapter):
    """sin, one vector at a time (the bridge loops over a batch)."""

    signature = "(n)->(n)"
    arrays = "torch"

    def forward(self, x):
        assert isinstance(x, torch.Tensor)
        return torch.sin(x)

    def backward(self, res, g):
        x, _ = res
        return (torch.cos(x) * g,)

    def jvp(self, res, t):
        x, _ = res
        return torch.cos(x) * t[0]


class BatchedSin(Sin):
    vectorized = True


SEEN: list = []  # the arrays Scale.forward was handed last, for the tests to look at


class Scale(jb.Adapter):
    """y = a x, written into XLA's own result buffer: ``out``."""

    signature = "(),(n)->(n)"
    arrays = "torch"
    vectorized = True

    def forward(self, a, x, *, out=None):
        SEEN[:] = [x, out]
        if out is None:  # (a direct call, as check_adapter makes)
            return x * a[..., None]
        (y,) = out
        torch.mul(x, a[..., None], out=y)
        return y

    def backward(self, res, g):
        a, x, _ = res
        return ((g * x).sum(-1), a[..., None] * g)


def test_values_and_every_derivative_match_numpy():
    x = jnp.linspace(-1.0, 2.0, 5)
    for adapter in (Sin(), BatchedSin()):
        np.testing.assert_allclose(adapter(x), np.sin(x), rtol=1e-6)
        np.testing.assert_allclose(jax.jit(adapter)(x), np.sin(x), rtol=1e-6)
        grad = jax.jit(jax.grad(lambda x: (adapter(x) * jnp.arange(5.0)).sum()))(x)
        np.testing.assert_allclose(grad, np.cos(x) * np.arange(5.0), rtol=1e-6)
        _, tangent = jax.jit(lambda x, t: jax.jvp(adapter, (x,), (t,)))(x, jnp.ones(5))
        np.testing.assert_allclose(tangent, np.cos(x), rtol=1e-6)


def test_a_batch_is_one_call_looped_or_whole():
    xs = jnp.arange(12.0).reshape(3, 4) / 7
    calls = []

    class Counted(BatchedSin):
        def forward(self, x):
            calls.append(tuple(x.shape))
            return torch.sin(x)

    out = jax.jit(jax.vmap(Counted()))(xs)
    np.testing.assert_allclose(out, np.sin(xs), rtol=1e-6)
    assert calls == [(3, 4)]
    calls.clear()

    class CountedLoop(Sin):
        def forward(self, x):
            calls.append(tuple(x.shape))
            return torch.sin(x)

    grads = jax.jit(jax.vmap(jax.grad(lambda x: CountedLoop()(x).sum())))(xs)
    np.testing.assert_allclose(grads, np.cos(xs), rtol=1e-6)
    assert calls == [(4,)] * 3  # one element at a time, in one host call


def test_inputs_and_results_are_xlas_own_buffers():
    x = jnp.linspace(0.0, 1.0, 8)
    y = jax.jit(Scale())(3.0, x)
    np.testing.assert_allclose(y, 3 * np.asarray(x), rtol=1e-6)
    given, (out,) = SEEN
    assert isinstance(given, torch.Tensor) and isinstance(out, torch.Tensor)
    assert out.data_ptr() == y.unsafe_buffer_pointer()  # computed in place: not copied
    # eager: the very memory of JAX's array, handed over through DLPack
    Scale()(2.0, x)
    assert SEEN[0].data_ptr() == x.unsafe_buffer_pointer()


def test_check_adapter_passes_and_catches_a_backward_one_percent_off():
    x = np.linspace(0.1, 1.0, 4, dtype=np.float32)
    check_adapter(Sin(), x)
    check_adapter(BatchedSin(), x)
    check_adapter(Scale(), np.float32(1.5), x)

    class Off(BatchedSin):
        def backward(self, res, g):
            x, _ = res
            return (1.01 * torch.cos(x) * g,)

    with pytest.raises(AssertionError, match="'grad' check failed"):
        check_adapter(Off(), x)


def test_float32_results_are_cast_within_a_kind_and_other_kinds_refused():
    class Wide(BatchedSin):
        def output_specs(self, x):
            return jax.ShapeDtypeStruct(x.shape, jnp.float32)

        def forward(self, x):
            return torch.sin(x).double()  # float64 for a declared float32

    out = jax.jit(Wide())(jnp.linspace(0.0, 1.0, 3, dtype=jnp.float32))
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(out, np.sin(np.linspace(0.0, 1.0, 3)), rtol=1e-6)

    class Integer(BatchedSin):
        def forward(self, x):
            return x.to(torch.int32)

    with pytest.raises(TypeError, match="Integer: result 0 of forward has dtype int32"):
        Integer()(jnp.ones(3))
    with pytest.raises(TypeError, match="Integer: result 0 of forward"), jb.host_errors():
        jax.jit(Integer())(jnp.ones(3)).block_until_ready()


def test_a_wrong_shape_is_an_error_naming_the_adapter():
    class Short(BatchedSin):
        def forward(self, x):
            return torch.sin(x)[..., :-1]

    with pytest.raises(ValueError, match=r"Short: result 0 of forward has shape \(2,\), expected"):
        Short()(jnp.ones(3))
    with pytest.raises(ValueError, match="Short: result 0 of forward"), jb.host_errors():
        jax.jit(Short())(jnp.ones(3)).block_until_ready()


def test_a_zero_cotangent_may_be_none_and_a_broadcast_one_is_summed():
    class Product(jb.Adapter):
        signature = "(n),()->(n)"
        arrays = "torch"
        vectorized = True

        def forward(self, x, c):
            return x * c[..., None]

        def backward(self, res, g):
            x, c, _ = res
            return (None, (g * x).sum(-1))  # none for x

    x, c = jnp.arange(1.0, 4.0), jnp.asarray(2.0)
    gx, gc = jax.grad(lambda x, c: Product()(x, c).sum(), argnums=(0, 1))(x, c)
    np.testing.assert_array_equal(gx, np.zeros(3))
    assert float(gc) == pytest.approx(6.0)
    xs = jnp.stack([x, 2 * x])
    gcs = jax.jit(jax.grad(lambda c: Product()(xs, c).sum()))(c)  # c broadcast over the batch
    assert float(gcs) == pytest.approx(18.0)


def test_zero_derivatives_given_as_none_in_a_looped_batch():
    class Looped(jb.Adapter):
        """y = c x, one element at a time; no derivative in x given (None)."""

        signature = "(n),()->(n)"
        arrays = "torch"

        def forward(self, x, c):
            return x * c

        def backward(self, res, g):
            x, _, _ = res
            return (None, (g * x).sum())

        def jvp(self, res, t):
            x, _, _ = res
            return None if t[1] is None else x * t[1]

    xs, c = jnp.arange(6.0).reshape(2, 3), jnp.asarray(2.0)
    gx = jax.jit(jax.grad(lambda xs: Looped()(xs, c).sum()))(xs)
    np.testing.assert_array_equal(gx, np.zeros((2, 3)))
    _, t = jax.jit(lambda xs: jax.jvp(lambda xs: Looped()(xs, c), (xs,), (xs,)))(xs)
    np.testing.assert_array_equal(t, np.zeros((2, 3)))
    gc = jax.jit(jax.grad(lambda c: Looped()(xs, c).sum()))(c)
    assert float(gc) == pytest.approx(15.0)


def test_an_error_keeps_its_type_and_names_the_adapter():
    class Refuses(BatchedSin):
        def forward(self, x):
            raise ArithmeticError("no")

    with pytest.raises(ArithmeticError, match="Refuses.forward raised ArithmeticError"):
        Refuses()(jnp.ones(2))
    with pytest.raises(ArithmeticError, match="Refuses.forward raised"), jb.host_errors():
        jax.jit(Refuses())(jnp.ones(2)).block_until_ready()


def test_guard_inputs_catches_a_write_into_an_input():
    class Writes(BatchedSin):
        def forward(self, x):
            x.mul_(2)  # XLA's (or JAX's) own memory
            return x.clone()

    x = jnp.ones(3)
    jb.guard_inputs(True)
    try:
        with pytest.raises(ValueError, match="Writes.forward wrote into its input 0"):
            Writes()(x)
        with pytest.raises(ValueError, match="Writes.forward wrote into"), jb.host_errors():
            jax.jit(Writes())(jnp.ones(3)).block_until_ready()
        x = np.linspace(0.1, 1.0, 3, dtype=np.float32)
        check_adapter(BatchedSin(), x, checks=("jit", "grad", "vmap"))
    finally:
        jb.guard_inputs(False)


def test_the_class_settings_are_checked():
    with pytest.raises(TypeError, match="`arrays` must be one of"):

        class Unknown(jb.Adapter):
            signature = "()->()"
            arrays = "jax"

    with pytest.raises(TypeError, match="runs on one thread"):

        class Threaded(jb.Adapter):
            signature = "()->()"
            arrays = "torch"
            threads = 2


def test_cupy_on_the_cpu_backend_is_a_clear_error():
    class OnCuPy(jb.Adapter):
        signature = "()->()"
        arrays = "cupy"

        def forward(self, x):
            return 2 * x

    with pytest.raises(RuntimeError, match="OnCuPy has arrays = 'cupy', which runs on a GPU"):
        OnCuPy()(jnp.ones(2))
    with pytest.raises(RuntimeError, match="OnCuPy has arrays = 'cupy'"):
        jax.jit(OnCuPy())(jnp.ones(2))
