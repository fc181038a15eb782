"""``vmap`` of the ready adapters: any ``in_axes``, nested, partial batching, of ``grad``."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _cases import CASES, IDS, assert_close, projected

from jaxbridge.adapters.linalg import DiscreteLyapunovSolve


def _batched(case, size=3, seed=1):
    return tuple(
        jnp.stack([a] * size) * (1 + jnp.arange(size).reshape((size,) + (1,) * a.ndim))
        for a in case.args(seed=seed)
    )


def _in_axes_choices(n):
    """Every way of batching a non-empty subset of the arguments."""
    return [c for c in itertools.product([0, None], repeat=n) if any(a == 0 for a in c)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_forward_every_in_axes(case):
    with jax.enable_x64(True):
        plain, batched = case.args(), _batched(case)
        for in_axes in _in_axes_choices(len(plain)):
            args = [b if ax == 0 else p for ax, p, b in zip(in_axes, plain, batched)]
            got = jax.jit(jax.vmap(case.adapter, in_axes))(*args)
            assert_close(got, jax.jit(jax.vmap(case.reference, in_axes))(*args))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_of_grad_every_in_axes(case):
    with jax.enable_x64(True):
        plain, batched = case.args(), _batched(case)
        ct = jnp.asarray(
            np.random.default_rng(3).normal(size=jax.eval_shape(case.reference, *plain).shape)
        )
        argnums = tuple(range(len(plain)))
        for in_axes in _in_axes_choices(len(plain)):
            args = [b if ax == 0 else p for ax, p, b in zip(in_axes, plain, batched)]
            grad = jax.vmap(jax.grad(projected(case.adapter, ct), argnums), in_axes)
            ref = jax.vmap(jax.grad(projected(case.reference, ct), argnums), in_axes)
            assert_close(jax.jit(grad)(*args), jax.jit(ref)(*args))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_grad_through_vmap_sums_over_broadcast_arguments(case):
    """An argument not batched by vmap gets a gradient of its own shape, summed over the batch."""
    with jax.enable_x64(True):
        plain, batched = case.args(), _batched(case)
        in_axes = (0,) + (None,) * (len(plain) - 1)
        args = (batched[0], *plain[1:])
        argnums = tuple(range(len(plain)))

        def loss(f):
            return lambda *a: jnp.sum(jnp.cos(jax.vmap(f, in_axes)(*a)))

        got = jax.jit(jax.grad(loss(case.adapter), argnums))(*args)
        assert [g.shape for g in got] == [a.shape for a in args]
        assert_close(got, jax.jit(jax.grad(loss(case.reference), argnums))(*args))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_nested_vmap(case):
    with jax.enable_x64(True):
        plain = case.args()
        outer = tuple(jnp.stack([a, 2 * a]) for a in _batched(case, 3))  # (2, 3, ...)
        # outer vmap over the first argument's leading axis, inner over the middle one
        args = (outer[0], *plain[1:])
        in_axes = (0,) + (None,) * (len(plain) - 1)
        inner = jax.vmap(case.adapter, in_axes)
        got = jax.jit(jax.vmap(inner, in_axes))(*args)
        ref = jax.vmap(jax.vmap(case.reference, in_axes), in_axes)(*args)
        assert_close(got, ref)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_along_other_axes(case):
    with jax.enable_x64(True):
        plain = case.args()
        moved = jnp.moveaxis(_batched(case)[0], 0, -1)
        args = (moved, *plain[1:])
        in_axes = (-1,) + (None,) * (len(plain) - 1)
        got = jax.jit(jax.vmap(case.adapter, in_axes, out_axes=1 if moved.ndim > 1 else 0))(*args)
        ref = jax.vmap(case.reference, in_axes, out_axes=1 if moved.ndim > 1 else 0)(*args)
        assert_close(got, ref)


def test_a_looped_adapter_broadcasts_batch_axes_of_different_ranks():
    """A looped (not ``vectorized``) adapter given ``a`` (3, n, n) and ``q`` (2, 3, n, n)
    broadcasts them as a gufunc does: values and gradients equal a loop over the (2, 3)
    batch, ``a``'s gradient summed over the axis it was broadcast along."""
    solve = DiscreteLyapunovSolve()
    assert not solve.vectorized
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        a = jnp.asarray(rng.normal(size=(3, 2, 2)) / 4)  # spectral radius below 1
        q = jnp.asarray(rng.normal(size=(2, 3, 2, 2)))
        w = jnp.asarray(rng.normal(size=(2, 3, 2, 2)))  # a cotangent that tells entries apart

        def loss(a, q):
            return jnp.sum(solve(a, q) * w)

        def looped(a, q):
            return sum(jnp.sum(solve(a[j], q[i, j]) * w[i, j]) for i in range(2) for j in range(3))

        x = solve(a, q)
        assert x.shape == (2, 3, 2, 2)
        for i, j in itertools.product(range(2), range(3)):
            assert_close(x[i, j], solve(a[j], q[i, j]))
        assert_close(jax.grad(loss, (0, 1))(a, q), jax.grad(looped, (0, 1))(a, q))
