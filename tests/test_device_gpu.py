"""Adapters on CuPy's and PyTorch's arrays on a GPU backend: XLA's device buffers handed to
the rule with no copy, the rule's work ordered on XLA's stream, every transformation. Skipped
without a GPU backend (the plumbing is tested on the CPU in ``test_device_arrays.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.testing import check_adapter

pytestmark = pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a GPU backend")


def _library(name: str):
    """The library, where it runs on this machine's GPU (CuPy fails at first use, not at
    import, without one)."""
    library = pytest.importorskip(name)
    try:
        if name == "cupy":
            library.zeros(1).sum()
        elif not library.cuda.is_available():
            pytest.skip("PyTorch has no CUDA here")
    except Exception as error:  # noqa: BLE001 (any failure: no usable device)
        pytest.skip(f"{name} cannot use the GPU: {error}")
    return library


class _Doubling(jb.Adapter):
    signature = "()->()"
    vectorized = True

    def forward(self, x, *, out=None):
        if out is None:
            return 2 * x
        (y,) = out
        y[...] = 2 * x  # into XLA's own result buffer, on XLA's stream
        return y

    def backward(self, res, g):
        return (2 * g,)

    def jvp(self, res, t):
        return 2 * t[0]


def _doubling(arrays: str) -> jb.Adapter:
    return type("Doubling", (_Doubling,), {"arrays": arrays})()


def _sin(arrays: str, library) -> jb.Adapter:
    """sin with its rules on the device, in ``library``."""

    class Sin(jb.Adapter):
        signature = "(n)->(n)"

        def forward(self, x):
            return library.sin(x)

        def backward(self, res, g):
            x, _ = res
            return (library.cos(x) * g,)

        def jvp(self, res, t):
            x, _ = res
            return library.cos(x) * t[0]

    return type("Sin", (Sin,), {"arrays": arrays})()


@pytest.mark.parametrize("arrays", ["cupy", "torch"])
def test_values_derivatives_and_batches_on_the_device(arrays):
    library = _library(arrays)
    double, sin = _doubling(arrays), _sin(arrays, library)
    x = jnp.linspace(-1.0, 1.0, 1000, dtype=jnp.float32)
    np.testing.assert_allclose(jax.jit(double)(x), 2 * np.asarray(x))
    np.testing.assert_allclose(double(x), 2 * np.asarray(x))
    grad = jax.jit(jax.grad(lambda x: (double(x) * x).sum()))(x)
    np.testing.assert_allclose(grad, 4 * np.asarray(x), rtol=1e-6)
    xs = x.reshape(10, 100)
    np.testing.assert_allclose(jax.jit(jax.vmap(sin))(xs), np.sin(np.asarray(xs)), rtol=1e-6)
    _, t = jax.jit(lambda x: jax.jvp(sin, (x,), (jnp.ones_like(x),)))(xs)
    np.testing.assert_allclose(t, np.cos(np.asarray(xs)), rtol=1e-6)
    check_adapter(sin, np.linspace(0.1, 1.0, 4, dtype=np.float32))


@pytest.mark.parametrize("arrays", ["cupy", "torch"])
def test_work_is_ordered_on_xlas_stream(arrays):
    """A long chain of XLA work before the call and after it: without XLA's stream, the rule
    would read its input before XLA wrote it, or XLA read the result before the rule did."""
    _library(arrays)
    double = _doubling(arrays)
    x = jnp.ones((4096, 4096), jnp.float32)

    @jax.jit
    def f(x):
        for _ in range(8):
            x = jnp.tanh(x @ x / 4096.0) + 0.5  # long XLA kernels before the call
        y = double(x)
        return (y @ y).sum()  # and XLA reading its result at once

    c = 1.0  # every entry of x is c: x @ x / 4096 has entries c**2
    for _ in range(8):
        c = np.tanh(c**2) + 0.5
    want = (2 * c) ** 2 * 4096 * 4096**2
    assert float(f(x)) == pytest.approx(want, rel=1e-3)


def test_cupy_on_host_arrays_is_refused_by_name():
    _library("cupy")
    double = _doubling("cupy")
    x = jax.device_put(jnp.ones(3), jax.devices("cpu")[0])
    with pytest.raises(RuntimeError, match="arrays = 'cupy'"):
        double(x)
