"""What the adapters' derivative rules, written in JAX, share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def total(terms: Iterable[Any]) -> Any:
    """The sum of the ``terms`` that are not ``None`` (symbolic zeros), or ``None`` when
    all of them are: a tangent or cotangent made of several contributions."""
    present = [t for t in terms if t is not None]
    return sum(present[1:], present[0]) if present else None
