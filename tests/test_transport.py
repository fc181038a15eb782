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


def test_environment_variable_sets_the_transport():
    chosen = os.environ.get("JAXBRIDGE_TRANSPORT", "auto")
    expected = "buffer_callback" if chosen == "auto" else chosen  # these tests run on CPU
    assert jb.transport() == expected


@pytest.mark.parametrize(
    "name, custom_call",
    [
        ("buffer_callback", "xla_buffer_python_cpu_callback"),
        ("pure_callback", "xla_ffi_python_cpu_callback"),
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
