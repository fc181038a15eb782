"""The transformed calls that the reverse-mode checks compare: jitted, vmapped, scanned and
differentiated.

Both programs here are module-level and jitted with the adapter as a static argument, so a
check on an adapter and shapes seen before (the next Hypothesis example, say) reuses their
compiled code. The "jit", "grad", "vmap" and "scan" checks compile at most these two programs
per new shape; their loops of reference calls all hit ``plain``'s cache, because batch
elements share their shapes. The checks of forward-mode rules keep their programs beside
them, built the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxbridge import Adapter

Result = tuple[tuple[jax.Array, ...], Any]
"""What every program below returns per call: the outputs, and the cotangents of the floating
arguments (``None`` when no cotangents were given)."""


class Layout(NamedTuple):
    """Which arguments each batched variant batches (static, so part of the compile key)."""

    some: tuple[bool, ...] | None  # vmap over these arguments only; None: skip
    broadcast: tuple[bool, ...]  # leading batch axes passed straight to the adapter
    outer: tuple[bool, ...]  # batched by the outer of two nested vmaps (the inner: all)
    vmap: bool
    scan: bool


def floating(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.floating))


def _pullback(function: Callable[..., tuple[jax.Array, ...]], args: tuple, cts: Any) -> Result:
    """``function(*args)`` and the cotangents of its floating arguments for ``cts``, the
    cotangents of its floating outputs. Integer arguments are held fixed."""
    outputs = function(*args)
    if cts is None:
        return outputs, None
    wrt = [i for i, a in enumerate(args) if floating(a.dtype)]

    def floating_outputs(*values: jax.Array) -> tuple[jax.Array, ...]:
        full = list(args)
        for i, value in zip(wrt, values):
            full[i] = value
        return tuple(o for o in function(*full) if floating(o.dtype))

    _, pullback = jax.vjp(floating_outputs, *(args[i] for i in wrt))
    return outputs, pullback(tuple(cts))


def _called(adapter: Adapter) -> Callable[..., tuple[jax.Array, ...]]:
    def call(*args: jax.Array) -> tuple[jax.Array, ...]:
        got = adapter(*args)
        return tuple(got) if isinstance(got, (tuple, list)) else (got,)

    return call


def in_some(
    adapter: Adapter, args: Sequence[Any], indices: Sequence[int]
) -> Callable[..., tuple[jax.Array, ...]]:
    """The call as a function of the arguments at ``indices`` alone (the others fixed at
    ``args``), returning its floating outputs: what ``jax.jvp``, ``jax.vjp`` and
    ``jax.linear_transpose`` take."""
    call = _called(adapter)

    def function(*values: jax.Array) -> tuple[jax.Array, ...]:
        full = list(args)
        for i, value in zip(indices, values):
            full[i] = value
        return tuple(o for o in call(*full) if floating(o.dtype))

    return function


@functools.partial(jax.jit, static_argnums=0)
def plain(adapter: Adapter, args: tuple, cts: Any) -> Result:
    """One call under ``jit``, and its pullback of ``cts``."""
    return _pullback(_called(adapter), args, cts)


@functools.partial(jax.jit, static_argnums=(0, 1))
def batched(
    adapter: Adapter, layout: Layout, stacked: tuple, cts: Any, extra: tuple, extra_cts: Any
) -> dict[str, Result]:
    """Every batched variant in one program, keyed by name.

    ``stacked`` holds each argument with a leading axis of batch elements, ``cts`` the
    cotangents of those elements; ``extra`` and ``extra_cts`` a second batch of them, for the
    outer level of the nested vmap. Which element each result stands for is said where
    ``_batching`` builds its references.
    """
    call = _called(adapter)

    def step(args: tuple, c: Any) -> Result:
        return _pullback(call, args, c)

    first = tuple(a[0] for a in stacked)
    results: dict[str, Result] = {}
    if layout.vmap:
        results["vmap"] = jax.vmap(step)(stacked, cts)
        if layout.some is not None:
            args = tuple(s if m else f for m, s, f in zip(layout.some, stacked, first))
            in_axes = tuple(0 if m else None for m in layout.some)
            results["vmap_some"] = jax.vmap(step, in_axes=(in_axes, 0))(args, cts)
        if cts is not None:
            results["vmap_cotangent"] = jax.vmap(step, in_axes=(None, 0))(first, cts)
        # outer-batched arguments carry (batch, 2, ...): the outer vmap takes axis 1
        nested = tuple(
            jnp.stack([s, e], axis=1) if m else s for m, s, e in zip(layout.outer, stacked, extra)
        )
        nested_cts = jax.tree.map(lambda c, e: jnp.stack([c, e]), cts, extra_cts)
        outer_axes = tuple(1 if m else None for m in layout.outer)
        results["vmap_nested"] = jax.vmap(jax.vmap(step), in_axes=(outer_axes, 0))(
            nested, nested_cts
        )
        args = tuple(s if m else f for m, s, f in zip(layout.broadcast, stacked, first))
        results["broadcast"] = step(args, cts)
    if layout.scan:

        def body(carry: None, element: tuple) -> tuple[None, Result]:
            return carry, step(*element)

        results["scan_inner"] = jax.lax.scan(body, None, (stacked, cts))[1]
        if cts is not None:

            def scanned(*args: jax.Array) -> tuple[jax.Array, ...]:
                return jax.lax.scan(lambda c, a: (c, call(*a)), None, args)[1]

            results["scan_outer"] = _pullback(scanned, stacked, cts)
    return results
