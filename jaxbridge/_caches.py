"""Caches that never keep users' objects alive.

The bridge works out a call's plan, ``forward``'s argument names and so on once per adapter
class, function or instance. Keyed strongly (``functools.cache``), those caches would hold
every adapter class made at run time, and everything its methods close over, for the life
of the process. Here each entry lives on its key weakly: it goes when the key does (after
``jax.clear_caches()``, which drops the compiled programs that hold adapters).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

Key = TypeVar("Key")
Value = TypeVar("Value")


def per_object(function: Callable[[Key], Value]) -> Callable[[Key], Value]:
    """``function(key)`` cached while ``key`` (a class, function or adapter) is alive."""
    results: weakref.WeakKeyDictionary[Any, Value] = weakref.WeakKeyDictionary()

    @functools.wraps(function)
    def cached(key: Key) -> Value:
        try:
            return results[key]
        except KeyError:
            value = results[key] = function(key)
            return value

    cached.cache_clear = results.clear  # type: ignore[attr-defined]
    return cached
