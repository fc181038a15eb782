"""Reverse-mode derivatives of the ready adapters against native JAX's own."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _cases import CASES, IDS, assert_close, projected


def _cotangent(case, args, dtype):
    shape = jax.eval_shape(case.reference, *args).shape
    return jnp.asarray(np.random.default_rng(7).normal(size=shape), dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_grad_matches_reference(case, dtype, jit):
    with jax.enable_x64(dtype == np.float64):
        args = case.args(dtype)
        ct = _cotangent(case, args, dtype)
        argnums = tuple(range(len(args)))
        grad = jax.grad(projected(case.adapter, ct), argnums)
        expected = jax.grad(projected(case.reference, ct), argnums)(*args)
        got = (jax.jit(grad) if jit else grad)(*args)
        assert [g.shape for g in got] == [a.shape for a in args]
        assert_close(got, expected, dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_value_and_grad(case):
    with jax.enable_x64(True):
        args = case.args()
        ct = _cotangent(case, args, np.float64)
        value, grad = jax.jit(jax.value_and_grad(projected(case.adapter, ct)))(*args)
        ref_value, ref_grad = jax.value_and_grad(projected(case.reference, ct))(*args)
        assert_close((value, grad), (ref_value, ref_grad))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jacrev(case):
    with jax.enable_x64(True):
        args = case.args()
        argnums = tuple(range(len(args)))
        got = jax.jit(jax.jacrev(case.adapter, argnums))(*args)
        assert_close(got, jax.jacrev(case.reference, argnums)(*args))


def test_relu_subgradient_at_zero_is_zero():
    from jaxbridge.adapters import ReLU

    x = jnp.array([-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(jax.grad(lambda x: ReLU()(x).sum())(x), [0.0, 0.0, 1.0])
