"""What the adapters' derivative rules, written in JAX, share."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import jax


def total(terms: Iterable[Any]) -> Any:
    """The sum of the ``terms`` that are not ``None`` (symbolic zeros), or ``None`` when
    all of them are: a tangent or cotangent made of several contributions."""
    present = [t for t in terms if t is not None]
    return sum(present[1:], present[0]) if present else None


def asked(wanted: frozenset[str] | None, name: str) -> bool:
    """Whether a pullback told ``wanted`` (the names of the inputs whose cotangents will be
    used; None: not told) must compute ``name``'s cotangent."""
    return wanted is None or name in wanted


def compiled(rule: Callable[..., Any]) -> Callable[..., Any]:
    """A rule written in JAX (``pushforward``, ``pullback``) as one compiled program, the
    adapter static: called eagerly, its operations would each compile on their own."""
    program = jax.jit(rule, static_argnums=0)

    @functools.wraps(rule)
    def method(self: Any, *args: Any) -> Any:
        return program(self, *args)

    return method
