"""Checks of the static parameters the adapter families share."""

from __future__ import annotations

from collections.abc import Sequence


def check_choice(owner: str, name: str, value: object, choices: Sequence[str]) -> None:
    """Refuse a static parameter outside ``choices``, naming the adapter and the parameter
    (for choices that depend on the adapter; a fixed set is a ``Literal`` annotation)."""
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{owner}: parameter '{name}' must be one of {allowed}; got {value!r}.")
