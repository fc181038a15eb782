"""An adapter call, and the default derivative rules that run an adapter's host methods."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from ._operations import Backward, Forward, host_tangents
from ._plan import arg_names, floating, fully_linear, make_plan, overrides, plan_of
from ._primitives import bind

if TYPE_CHECKING:
    from ._adapter import Adapter


def call(adapter: Adapter, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``adapter(*args, **kwargs)``: validate at trace time, then bind the forward."""
    names = arg_names(type(adapter))
    arrays = _bind(adapter, names, args, kwargs)
    plan = make_plan(adapter, names, arrays)  # raises, naming the argument, on bad input
    padded = [jnp.reshape(a, shape) for a, shape in zip(arrays, plan.padded)]
    outputs = bind(Forward(adapter), padded)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def host_pullback(adapter: Adapter, res: tuple[jax.Array, ...], g: Any) -> tuple[Any, ...]:
    """The default ``Adapter.pullback``: ``adapter.backward`` in one host callback."""
    cotangents = tuple(g) if isinstance(g, (tuple, list)) else (g,)
    computed = iter(bind(Backward(adapter), (*res, *cotangents)))
    plan = plan_of(adapter, res[: len(arg_names(type(adapter)))])
    return tuple(next(computed) if floating(a.dtype) else None for a in plan.args)


def host_pushforward(adapter: Adapter, res: tuple[jax.Array, ...], tangents: tuple) -> Any:
    """The default ``Adapter.pushforward``: ``adapter.jvp`` in one host callback, or for an
    adapter linear in all its arguments, the forward applied to the tangents."""
    names = arg_names(type(adapter))
    plan = plan_of(adapter, res[: len(names)])
    if not overrides(adapter, "jvp"):
        if fully_linear(adapter, plan):
            # integer arguments are held fixed: they keep their values
            filled = [
                t if t is not None else jnp.zeros(a.shape, a.dtype) if floating(a.dtype) else a
                for a, t in zip(res, tangents)
            ]
            return call(adapter, tuple(filled), {})
        raise TypeError(
            f"{plan.owner} has no forward-mode rule, so jvp, jacfwd, hessian and linearize "
            f"cannot go through it (reverse mode, grad and jacrev, works). Define `jvp(self, "
            f"res, tangents)` on the host, or `pushforward(self, res, tangents)` in JAX."
        )
    return host_tangents(adapter, plan, res, tangents)


def _bind(adapter: Adapter, names: tuple[str, ...], args: tuple, kwargs: dict) -> list[jax.Array]:
    """Match arguments to ``forward``'s parameters by position or name, as JAX arrays."""
    owner = type(adapter).__name__
    parameters = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    try:
        bound = inspect.Signature(parameters).bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(
            f"{owner} takes {len(names)} array arguments ({', '.join(names)}) for signature "
            f"{adapter.signature!r}: {error}."
        ) from None
    return [as_array(owner, name, bound.arguments[name]) for name in names]


def as_array(owner: str, name: str, value: Any) -> jax.Array:
    """``value`` as a JAX array of numbers, or a ``TypeError`` naming ``owner`` and ``name``."""
    if isinstance(value, jax.Array):  # (tracers too)
        return value
    if value is None:
        got = "None"
    else:
        try:
            if np.asarray(value).dtype != object:
                return jnp.asarray(value)
            got = "an array of Python objects (dtype object)"
        except (TypeError, ValueError) as error:
            got = f"{type(value).__name__} ({error})"
    raise TypeError(
        f"{owner}: argument '{name}' must be an array of numbers (or a number), got {got}."
    )
