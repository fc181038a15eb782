"""``processes``: a looped adapter's batch shared by worker processes, for host work that
holds the GIL. The same numbers as one process, computed elsewhere; errors as in one
process; an adapter the workers cannot receive is refused with the reason."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _process_adapters import Cubed, Decay, ParallelOdeSolve

import jaxbridge as jb
from jaxbridge.adapters.integrate import OdeSolve


def test_the_setting_is_checked_when_the_class_is_defined():
    with pytest.raises(TypeError, match="`processes` must be a whole number of at least 1"):

        class Zero(jb.Adapter):
            processes = 0

    with pytest.raises(TypeError, match="`threads` and `processes` both share the loop"):

        class Both(jb.Adapter):
            threads = 2
            processes = 2


def test_an_adapter_the_workers_cannot_import_is_refused_with_the_reason():
    class Local(Cubed):  # defined in a function: pickle cannot name its class
        pass

    with jax.enable_x64(True):
        with pytest.raises(TypeError, match=r"Local: processes = 2 runs its host methods in"):
            jax.vmap(Local())(jnp.ones((2, 3)))  # (outside jit: the error keeps its type)


@jax.enable_x64(True)
def test_a_batch_runs_in_the_workers_forward_backward_and_jvp():
    x = np.linspace(0.5, 2.0, 12).reshape(4, 3)
    cubed = Cubed()
    y, pids = jax.jit(jax.vmap(cubed))(x)
    np.testing.assert_array_equal(y, x**3)
    assert os.getpid() not in set(np.asarray(pids).astype(int))  # computed in the workers

    grad = jax.jit(jax.grad(lambda x: jax.vmap(cubed)(x)[0].sum()))(x)
    np.testing.assert_allclose(grad, 3 * x**2, rtol=1e-15)
    _, (dy, seen) = jax.jit(lambda x, t: jax.jvp(jax.vmap(cubed), (x,), (t,)))(x, np.ones_like(x))
    np.testing.assert_allclose(dy, 3 * x**2, rtol=1e-15)
    # each element's jvp ran in the worker whose forward computed it
    np.testing.assert_array_equal(seen, np.ones(len(x)))

    # an element whose forward raises: the error names the adapter, as in one process
    # (outside jit, where it keeps its type)
    bad = x.copy()
    bad[2, 0] = -1.0
    with pytest.raises(ValueError, match=r"^Cubed\.forward raised ValueError on the host: a neg"):
        jax.vmap(cubed)(bad)


@pytest.mark.slow  # starts two worker processes that import JAX and SciPy
@pytest.mark.parametrize("sensitivity", ["adjoint", "steps"])
@jax.enable_x64(True)
def test_ode_solves_in_the_workers_give_the_same_bits(sensitivity):
    """The values and the gradients (by the adjoint, or through the steps) of a batch of
    solves, in the workers (the backward in the worker whose forward kept each solution) and
    in one process: the same bits."""
    y0 = jnp.array([[1.0, 0.5], [0.2, -0.3], [2.0, 1.0]])
    theta = jnp.array([[0.5, 1.0], [1.5, 0.2], [0.8, 2.0]])
    ts = jnp.linspace(0.0, 3.0, 4)
    tolerances = {"rtol": 1e-8, "atol": 1e-10, "sensitivity": sensitivity}
    apart = ParallelOdeSolve(Decay(), method="RK45", **tolerances)
    here = OdeSolve(Decay(), method="RK45", **tolerances)

    def loss(solver):
        return jax.jit(
            jax.value_and_grad(lambda y, t: jax.vmap(solver, (0, 0, None))(y, t, ts).sum(), (0, 1))
        )

    np.testing.assert_array_equal(
        jax.jit(jax.vmap(apart, (0, 0, None)))(y0, theta, ts),
        jax.jit(jax.vmap(here, (0, 0, None)))(y0, theta, ts),
    )
    (value, grads), (expected, expected_grads) = loss(apart)(y0, theta), loss(here)(y0, theta)
    assert value == expected
    for g, e in zip(grads, expected_grads):
        np.testing.assert_array_equal(g, e)
