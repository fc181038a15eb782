"""An adapter call: its arguments matched, checked and bound to the forward primitive."""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._arrays import check_backend
from ._operations import Forward
from ._plan import arg_names, make_plan
from ._primitives import bind
from ._protocol import AdapterLike


def call(adapter: AdapterLike, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``adapter(*args, **kwargs)``: validate at trace time, then bind the forward."""
    check_backend(type(adapter))
    names = arg_names(type(adapter))
    arrays = _bind(adapter, names, args, kwargs)
    plan = make_plan(adapter, names, arrays)  # raises, naming the argument, on bad input
    padded = [jnp.reshape(a, shape) for a, shape in zip(arrays, plan.padded)]
    outputs = bind(Forward(adapter), padded)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _bind(
    adapter: AdapterLike, names: tuple[str, ...], args: tuple, kwargs: dict
) -> list[jax.Array]:
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
