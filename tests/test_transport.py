"""Choosing the transport: what a traced call compiles to, and both give the same answers."""

import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters import Linear


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
    x, w, b = (jnp.asarray(rng.normal(size=s), jnp.float32) for s in [(4, 3), (3, 2), (2,)])

    def loss(x, w, b):
        return jnp.sum(jnp.sin(Linear()(x, w, b)))

    jb.set_transport(name)
    assert jb.transport() == name
    grad = jax.grad(loss, (0, 1, 2))
    assert _callbacks(grad, x, w, b) == [custom_call] * 2  # forward and backward
    expected = jax.grad(lambda x, w, b: jnp.sum(jnp.sin(x @ w + b)), (0, 1, 2))(x, w, b)
    for got, want in zip(jax.jit(grad)(x, w, b), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_unknown_transport_is_refused():
    with pytest.raises(
        ValueError,
        match=r"transport must be one of \('auto', 'buffer_callback', 'pure_callback'\), got 'ffi'",
    ):
        jb.set_transport("ffi")
