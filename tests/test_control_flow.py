"""Adapters inside ``lax.scan``, ``fori_loop``, ``cond``, ``jax.checkpoint``, and their gradients."""

import jax
import jax.numpy as jnp
import pytest
from _cases import CASES, IDS, assert_close

pytestmark = pytest.mark.slow  # each case compiles a loop and its gradient: 8-18 s on 2 busy cores


def _scan_loss(f):
    def loss(*args):
        def step(carry, _):
            return carry + jnp.sum(jnp.sin(f(*args) * carry)), None

        total, _ = jax.lax.scan(step, 1.0, None, length=3)
        return total

    return loss


def _fori_loss(f):
    def loss(*args):
        return jax.lax.fori_loop(0, 3, lambda i, c: c + jnp.sum(jnp.tanh(f(*args)) * (i + 1)), 0.0)

    return loss


def _checkpoint_loss(f):
    return lambda *args: jnp.sum(jnp.sin(jax.checkpoint(f)(*args)))


def _cond_loss(f):
    def loss(*args):
        out = f(*args)
        return jax.lax.cond(
            jnp.sum(out) > -1e9, lambda o: jnp.sum(o**2), lambda o: 0.0 * jnp.sum(o), out
        )

    return loss


WRAPPERS = {
    "scan": _scan_loss,
    "fori_loop": _fori_loss,
    "checkpoint": _checkpoint_loss,
    "cond": _cond_loss,
}


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("wrapper", WRAPPERS, ids=list(WRAPPERS))
def test_gradient_inside_control_flow(case, wrapper):
    with jax.enable_x64(True):
        args = case.args()
        argnums = tuple(range(len(args)))
        loss = WRAPPERS[wrapper]
        got = jax.jit(jax.value_and_grad(loss(case.adapter), argnums))(*args)
        assert_close(got, jax.value_and_grad(loss(case.reference), argnums)(*args))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_of_grad_of_scan(case):
    with jax.enable_x64(True):
        args = case.args()
        xs = jnp.stack([args[0], -args[0], 0.5 * args[0]])
        in_axes = (0,) + (None,) * (len(args) - 1)
        grad = jax.vmap(jax.grad(_scan_loss(case.adapter)), in_axes)
        ref = jax.vmap(jax.grad(_scan_loss(case.reference)), in_axes)
        assert_close(jax.jit(grad)(xs, *args[1:]), ref(xs, *args[1:]))
