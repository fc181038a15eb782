"""What the adapters' derivative rules, written in JAX, share."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp


def total(terms: Iterable[Any]) -> Any:
    """The sum of the ``terms`` that are not ``None`` (symbolic zeros), or ``None`` when
    all of them are: a tangent or cotangent made of several contributions."""
    present = [t for t in terms if t is not None]
    return sum(present[1:], present[0]) if present else None


def times(weight: Any, partial: Any) -> Any:
    """``weight * partial`` for a tangent or cotangent ``weight``, and 0 where the weight is
    0, even against an infinite or NaN partial: so that each column of ``jacfwd`` (whose
    other inputs' tangents are explicit zeros) is what ``grad`` gives for that input, as
    reverse mode's separate cotangents give it (``∂x/∂q = inf`` at ``q = 0`` was NaN in
    ``jacfwd`` through the NaN shape derivative beside it)."""
    return jnp.where(weight == 0, jnp.zeros_like(weight * partial), weight * partial)


def asked(wanted: frozenset[str] | None, name: str) -> bool:
    """Whether a pullback told ``wanted`` (the names of the inputs whose cotangents will be
    used; None: not told) must compute ``name``'s cotangent."""
    return wanted is None or name in wanted


def compiled(rule: Callable[..., Any]) -> Callable[..., Any]:
    """A rule written in JAX (``pushforward``, ``pullback``, or a function they share) as
    one compiled program: called eagerly, its operations would each compile on their own.

    Its first argument (the adapter; or a function, for a shared helper) and its
    keyword-only arguments (a pullback's ``wanted``) are static; the others are arrays, or
    pytrees of them (a tangent that is ``None`` is part of the program's structure).
    """
    keywords = [
        p.name for p in inspect.signature(rule).parameters.values() if p.kind is p.KEYWORD_ONLY
    ]
    program = jax.jit(rule, static_argnums=0, static_argnames=keywords)

    @functools.wraps(rule)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return program(self, *args, **kwargs)

    return method


def nan_where(mask: Any, batch: int, cotangent: Any, core: int) -> Any:
    """``cotangent`` with NaN where ``mask`` holds. ``mask``'s first ``batch`` axes are the
    call's batch (the cotangent's of the outputs), the rest the leading core axes of the
    cotangent's argument, whose core has ``core`` axes. A cotangent whose argument the batch
    broadcast is summed over that batch already: the mask is reduced (any) to the
    cotangent's own batch shape, not the cotangent broadcast to the mask's (the bridge
    would then sum it again: an argument shared by a batch of two had twice its gradient)."""
    own = cotangent.ndim - core  # the cotangent's batch axes
    extra = batch - own
    if extra > 0:  # leading batch axes the cotangent lacks
        mask, batch = mask.any(axis=tuple(range(extra))), own
    summed = tuple(i for i in range(batch) if cotangent.shape[i] == 1 and mask.shape[i] != 1)
    if summed:
        mask = mask.any(axis=summed, keepdims=True)
    mask = mask.reshape(mask.shape + (1,) * (cotangent.ndim - mask.ndim))
    return jnp.where(mask, jnp.nan, cotangent)
