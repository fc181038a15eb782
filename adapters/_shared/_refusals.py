"""The refusal of SciPy's arguments that a call form does not take, naming where they go
(the optimize and sparse families' call forms share it)."""

from __future__ import annotations

from typing import Any


def refuse_unsupported(owner: str, given: dict[str, tuple[Any, Any, str]]) -> None:
    """Refuse each of SciPy's arguments ``name: (value, default, why)`` given away from its
    default: a ``TypeError`` naming ``owner``, the argument and ``why`` (where it goes, or
    why it is not taken)."""
    for name, (value, default, why) in given.items():
        if (value is not None) if default is None else bool(value != default):
            raise TypeError(f"{owner}: argument {name!r} is not taken: {why}; got {value!r}.")
