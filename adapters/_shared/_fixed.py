"""``held_fixed``: the guard on an argument that has no exact derivative, and ``HoldsFixed``,
the base that applies it to the arguments an adapter names in ``held``.

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
from collections.abc import Mapping
from typing import Any, ClassVar

import jax

import jaxbridge as jb
from jaxbridge.internal import arg_names, as_array


class HoldsFixed(jb.Adapter):
    """An adapter with arguments that have no derivative: it names them in ``held``, and each
    call passes them through ``held_fixed`` before the bridged call. Differentiating in one
    raises a ``TypeError`` naming the adapter (``name()``) and the argument, with the reason;
    the other arguments differentiate as usual.

    An adapter whose held arguments depend on its parameters (``Interpolant1D``) or that
    reshapes its arguments first (``RegularGridInterpolator``) calls ``held_fixed`` in its own
    ``__call__`` instead.
    """

    held: ClassVar[Mapping[str, str]] = {}
    """The arguments held fixed, by name, each with why it has no derivative (the clause
    that follows "not differentiable in its argument 'v': ")."""

    def name(self) -> str:
        """The name its errors give it: the class's, unless a subclass says otherwise."""
        return type(self).__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        names = arg_names(type(self))
        args = tuple(self._hold(names[i], a) if i < len(names) else a for i, a in enumerate(args))
        kwargs = {name: self._hold(name, a) for name, a in kwargs.items()}
        return super().__call__(*args, **kwargs)

    def _hold(self, name: str, value: Any) -> Any:
        why = self.held.get(name)
        return value if why is None else held_fixed(self.name(), name, why, value)


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
