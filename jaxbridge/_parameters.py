"""An adapter's static parameters, checked when it is made: hashable, never traced, and one of
the values a ``Literal[...]`` annotation allows."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any, Literal

import jax
import numpy as np
from jax.core import Tracer

from ._caches import per_object


def given_parameters(
    init: Callable[..., None], self: Any, args: tuple, kwargs: dict
) -> dict[str, Any]:
    """The parameters a constructor call gives, by name; none if they do not bind."""
    try:
        bound = inspect.signature(init).bind(self, *args, **kwargs)
    except TypeError:
        return {}
    return {name: value for name, value in bound.arguments.items() if name != "self"}


@per_object  # weakly: adapter classes made at run time must be freed
def choices_of(cls: type) -> dict[str, tuple[object, ...]]:
    """The static parameters annotated ``Literal[...]``, with the values each may take."""
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation that cannot be resolved: nothing to check
        return {}
    fields = {field.name for field in dataclasses.fields(cls)}
    return {
        name: typing.get_args(hint)
        for name, hint in hints.items()
        if name in fields and typing.get_origin(hint) is Literal
    }


def check_choice(owner: str, name: str, value: object, choices: tuple[object, ...]) -> None:
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{owner}: parameter '{name}' must be one of {allowed}; got {value!r}.")


def traced(value: object) -> bool:
    """Whether ``value`` is traced, or a tuple or list holding a traced value."""
    if isinstance(value, (tuple, list)):
        return any(traced(v) for v in value)
    return isinstance(value, Tracer)


def check_parameter(owner: str, name: str, value: object) -> None:
    """A static parameter is part of the adapter's identity: hashable, never traced."""
    if traced(value):
        raise TypeError(
            f"{owner}: parameter '{name}' got a traced value (under jit, grad or vmap), but it "
            f"is a static parameter, fixed when a call is traced. To differentiate in it or "
            f"vary it, make it an array argument of forward (and of the signature) instead."
        )
    try:
        hash(value)
    except TypeError:
        advice = (
            "Pass it as an array argument of forward instead, or as a tuple"
            if isinstance(value, (np.ndarray, jax.Array))
            else "Pass a tuple (or another hashable value) instead"
        )
        raise TypeError(
            f"{owner}: parameter '{name}' must be hashable (static parameters are part of the "
            f"adapter's identity), got {type(value).__name__}. {advice}."
        ) from None
