"""What the integrate adapters check and how they fail: a tolerance or limit that is not a
positive number, an ``IntegrationFailure`` with its reason (``failure``), and a failure of
the first derivatives named as the adapter's backward (``named_backward``); and the
adapters their derivative rules call, made once per adapter (``kept_on``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from .._shared._failure import IntegrationFailure


def check_positive(owner: str, name: str, value: object, allow_zero: bool = False) -> None:
    """Refuse a tolerance or a limit that is not a positive (or non-negative) number."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and (value >= 0 if allow_zero else value > 0)  # type: ignore[operator]
    if not ok:
        what = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{owner}: parameter '{name}' must be {what} number; got {value!r}.")


failure = IntegrationFailure.because


@contextlib.contextmanager
def named_backward(owner: str) -> Iterator[None]:
    """Name a failure inside as ``{owner}.backward``'s: the first derivatives run as bridged
    calls of their own (``OdeGradient``, ``QuadGradient``), whose names the bridge puts
    first, but they are what the adapter's backward computed and its users look for."""
    try:
        yield
    except IntegrationFailure as error:
        raise IntegrationFailure(f"{owner}.backward: {error}") from None


def kept_on(owner: Any, name: str, make: Callable[[], Any]) -> Any:
    """``make()``, kept on ``owner`` (a frozen adapter) as attribute ``name`` after the first
    call: the bridge works out a call's plan once per adapter object, so an adapter made
    anew at each gradient would pay for it every time. (Not a dataclass field: equality,
    hashing and ``dataclasses.replace`` ignore it.)"""
    got = owner.__dict__.get(name)
    if got is None:
        got = make()
        object.__setattr__(owner, name, got)
    return got
