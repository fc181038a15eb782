"""An adapter call, and the default derivative rules that run an adapter's host methods."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from ._operations import (
    Backward,
    Forward,
    floating,
    fully_linear,
    host_function,
    loop_of,
    output_tangents,
    overrides,
    plan_of,
)
from ._plan import arg_names, make_plan
from ._primitives import bind
from ._transport import host_call

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
    given = [i for i, t in enumerate(tangents) if t is not None]
    n_res = len(res)
    cores = (*plan.args, *plan.outputs, *plan.residuals)
    ranks = [len(s.shape) for s in cores] + [len(plan.args[i].shape) for i in given]
    n_out = len(plan.outputs)

    def compute(values: Sequence[np.ndarray], _outs: object) -> list[object]:
        host_tangents: list[np.ndarray | None] = [None] * len(names)
        for i, value in zip(given, values[n_res:]):
            host_tangents[i] = value
        got = adapter.jvp(tuple(values[:n_res]), tuple(host_tangents))
        items = output_tangents(plan.owner, "jvp", got, n_out)
        return [
            np.zeros(o.shape, o.dtype) if t is None else t
            for t, o in zip(items, plan.outputs)
            if floating(o.dtype)
        ]

    results = [o for o in plan.outputs if floating(o.dtype)]
    args = (*res, *(tangents[i] for i in given))
    loop = loop_of(args, ranks)
    specs = [jax.ShapeDtypeStruct(loop + s.shape, s.dtype) for s in results]
    on_host = host_function(adapter, "jvp", compute, ranks, results, specs)
    computed = iter(host_call(on_host, specs, args))
    tangent_out = [next(computed) if floating(o.dtype) else None for o in plan.outputs]
    return tangent_out[0] if n_out == 1 else tuple(tangent_out)


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
