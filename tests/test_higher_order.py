"""Second derivatives through every ready adapter, in every combination of modes, against
native JAX: ``hessian`` (jacfwd of jacrev), ``jacfwd(jacfwd)``, ``jacrev(jacfwd)``,
``jacrev(jacrev)`` and ``grad(grad)``.

Each case's arguments are flattened into one vector ``z`` and the function differentiated is
the scalar ``sum(sin(f(*args)) * ct)``, so every second derivative is one ``(n, n)`` matrix
and involves the adapter's own second derivatives (through ``sin``'s curvature, also for
adapters linear in their inputs). All of them equal the one native Hessian, computed once
per case.
"""

import functools

import _cases
import _solver_cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

pytestmark = pytest.mark.slow  # hessians and third derivatives: large programs to compile

CASES = [pytest.param(c, _cases.assert_close, id=f"simple-{c.name}") for c in _cases.CASES] + [
    pytest.param(c, _solver_cases.assert_close, id=f"solver-{c.name}") for c in _solver_cases.CASES
]


def _grad_of_grad(loss):
    """``∇(v · ∇loss)``, which is ``H v``: a gradient of a gradient, as a matrix (one
    direction ``v`` per column) so that it compares with the Hessian."""

    def matrix(z):
        directional = lambda z, v: jnp.vdot(jax.grad(loss)(z), v)  # noqa: E731
        return jax.vmap(jax.grad(directional), in_axes=(None, 1), out_axes=1)(z, jnp.eye(z.size))

    return matrix


TRANSFORMS = {
    "hessian": jax.hessian,
    "jacfwd(jacfwd)": lambda f: jax.jacfwd(jax.jacfwd(f)),
    "jacrev(jacfwd)": lambda f: jax.jacrev(jax.jacfwd(f)),
    "jacrev(jacrev)": lambda f: jax.jacrev(jax.jacrev(f)),
    "grad(grad)": _grad_of_grad,
}


def flat_loss(case, function):
    """``(loss, z)``: the scalar ``sum(sin(function(*args)) * ct)`` of the flattened arguments
    ``z``, and ``z`` at the case's arguments."""
    args = case.args()
    z, unravel = ravel_pytree(args)
    shape = jax.eval_shape(case.reference, *args).shape
    ct = jnp.asarray(np.random.default_rng(7).normal(size=shape))
    return lambda z: jnp.sum(jnp.sin(function(*unravel(z))) * ct), z


@functools.cache
def native_hessian(case):
    loss, z = flat_loss(case, case.reference)
    return jax.jit(jax.hessian(loss))(z)


@pytest.mark.parametrize(("case", "assert_close"), CASES)
def test_second_derivatives_match_native_hessian(case, assert_close):
    """All five in one jitted function per case (one compilation: a third cheaper than five)."""
    with jax.enable_x64(True):
        loss, z = flat_loss(case, case.adapter)
        got = jax.jit(lambda z: {name: make(loss)(z) for name, make in TRANSFORMS.items()})(z)
        expected = native_hessian(case)
        for name, matrix in got.items():
            assert matrix.shape == (z.size, z.size), name
            try:
                assert_close(matrix, expected)
            except AssertionError as error:
                raise AssertionError(f"{name}: {error}") from None


def test_hessian_catches_a_wrong_second_derivative():
    """The comparison is sharp: a Hessian of ``sin(2.02 x)`` instead of ``sin(2 x)`` fails."""
    with jax.enable_x64(True):
        case = _cases.CASES[0]  # doubling
        loss, z = flat_loss(case, lambda x: 1.01 * case.adapter(x))
        with pytest.raises(AssertionError):
            _cases.assert_close(jax.jit(jax.hessian(loss))(z), native_hessian(case))
