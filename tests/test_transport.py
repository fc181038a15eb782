"""Choosing the transport: what a traced call compiles to, and both give the same answers."""

import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve


@pytest.fixture
def restore_transport():
    before = jb.transport()
    yield
    jb.set_transport(os.environ.get("JAXBRIDGE_TRANSPORT", "auto"))
    assert jb.transport() == before


def _callbacks(function, *args):
    return re.findall(r"custom_call @(\w*callback\w*)", jax.jit(function).lower(*args).as_text())


ON_CPU = jax.default_backend() == "cpu"
CPU_ONLY = pytest.mark.skipif(not ON_CPU, reason="the buffer_callback transport is CPU only")


def test_environment_variable_sets_the_transport():
    chosen = os.environ.get("JAXBRIDGE_TRANSPORT", "auto")
    auto = "buffer_callback" if ON_CPU else "pure_callback"
    assert jb.transport() == (auto if chosen == "auto" else chosen)


@pytest.mark.parametrize(
    "name, custom_call",
    [
        pytest.param("buffer_callback", "xla_buffer_python_cpu_callback", marks=CPU_ONLY),
        # (the callback's target is named after the platform: "cpu", "gpu")
        ("pure_callback", f"xla_ffi_python_{'cpu' if ON_CPU else 'gpu'}_callback"),
    ],
)
def test_each_transport_compiles_to_its_callback_and_agrees(restore_transport, name, custom_call):
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.normal(size=(3, 3)) + 3 * np.eye(3), jnp.float32)
    b = jnp.asarray(rng.normal(size=3), jnp.float32)

    def loss(a, b):
        return jnp.sum(jnp.sin(LinearSolve()(a, b)))

    jb.set_transport(name)
    assert jb.transport() == name
    grad = jax.grad(loss, (0, 1))
    assert _callbacks(grad, a, b) == [custom_call] * 2  # forward and backward
    expected = jax.grad(lambda a, b: jnp.sum(jnp.sin(jnp.linalg.solve(a, b))), (0, 1))(a, b)
    for got, want in zip(jax.jit(grad)(a, b), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_unknown_transport_is_refused():
    with pytest.raises(
        ValueError,
        match=r"transport must be one of \('auto', 'buffer_callback', 'pure_callback'\), got 'ffi'",
    ):
        jb.set_transport("ffi")


def test_bfloat16_takes_pure_callback_and_is_computed_right():
    """DLPack cannot carry bfloat16 to the host: such a call compiles to pure_callback (on
    either transport), and its values and gradients are right to bfloat16's precision."""
    rng = np.random.default_rng(1)
    a64 = rng.normal(size=(3, 3)) + 4 * np.eye(3)
    b64 = rng.normal(size=3)
    a, b = jnp.asarray(a64, jnp.bfloat16), jnp.asarray(b64, jnp.bfloat16)
    exact_a, exact_b = np.asarray(a, np.float64), np.asarray(b, np.float64)

    def loss(a, b):
        return jnp.sum(LinearSolve()(a, b))

    grad = jax.grad(loss, (0, 1))
    assert _callbacks(grad, a, b) == ["xla_ffi_python_cpu_callback"] * 2
    x = jax.jit(LinearSolve())(a, b)
    assert x.dtype == jnp.bfloat16
    np.testing.assert_allclose(
        np.asarray(x, np.float64), np.linalg.solve(exact_a, exact_b), rtol=2e-2, atol=1e-2
    )
    # d sum(x) / db = a⁻ᵀ 1, d sum(x) / da = -(a⁻ᵀ 1) xᵀ
    v = np.linalg.solve(exact_a.T, np.ones(3))
    ga, gb = jax.jit(grad)(a, b)
    assert ga.dtype == gb.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(gb, np.float64), v, rtol=2e-2, atol=1e-2)
    expected_ga = -np.outer(v, np.linalg.solve(exact_a, exact_b))
    np.testing.assert_allclose(np.asarray(ga, np.float64), expected_ga, rtol=3e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e5m2", "float8_e4m3fn"])
def test_every_ml_dtypes_type_takes_pure_callback(dtype):
    """Whatever kind NumPy gives them (float8_e5m2 says "f", bfloat16 "V"), ml_dtypes' types
    cannot cross DLPack: under jit their calls compile to pure_callback, and compute."""
    from jaxbridge.adapters import Doubling

    x = jnp.asarray([0.5, 1.0, -1.5], dtype)
    assert _callbacks(Doubling(), x) == ["xla_ffi_python_cpu_callback"]
    y = jax.jit(Doubling())(x)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(y, np.float32), [1.0, 2.0, -3.0])
