"""``held_fixed``: the guard on an argument that has no exact derivative.

Some arguments (the order of ``jv``) enter a function smoothly,
but SciPy computes no derivative in them and none of the family's own functions gives one.
Rather than return a silent zero or a finite difference, the adapter passes the argument
through ``held_fixed`` before its bridged call: the identity, whose derivative rule raises.
JAX calls that rule only when a tangent actually reaches the argument (it skips symbolic
zeros), so differentiating in the other arguments works and differentiating in this one is
an error when the program is traced, in forward and reverse mode alike.
"""

from __future__ import annotations

import functools

import jax

from jaxbridge.internal import as_array


def held_fixed(owner: str, name: str, why: str, value: object) -> jax.Array:
    """``value`` as an array, unchanged; differentiating through it raises a ``TypeError``
    that names ``owner`` (the function) and ``name`` (the argument), and says ``why``."""
    return _identity(owner, name, why, as_array(owner, name, value))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2))
def _identity(owner: str, name: str, why: str, value: jax.Array) -> jax.Array:
    return value


@_identity.defjvp
def _refuse(owner: str, name: str, why: str, primals, tangents):
    raise TypeError(
        f"{owner} is not differentiable in its argument '{name}': {why}; jaxbridge gives no "
        f"approximation (no finite difference, no silent zero). Differentiate in the other "
        f"arguments only: hold '{name}' fixed, or wrap it in jax.lax.stop_gradient if a zero "
        f"derivative is what you mean."
    )
