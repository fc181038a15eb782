"""The "jvp" check: forward-mode tangents through the bridge (``jax.jvp`` under ``jit``, and
``vmap`` of it over tangents) against central finite differences of ``forward`` in float64
and against one call per tangent. Also the program the "transpose" check reads from."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbridge import Adapter

from ._differences import STEPS, central_difference, directional_step, moved, outputs64
from ._subject import Subject
from ._transforms import in_some

_BY_DIFFERENCES = ("from the bridge", "by central finite differences of forward in float64")


@functools.partial(jax.jit, static_argnums=(0, 1))
def _tangent_program(
    adapter: Adapter, wrt: tuple[int, ...], args: tuple, tangents: tuple, cts: Any
) -> tuple[list, tuple, Any]:
    """The tangents of the floating outputs along each floating argument alone (the others'
    tangents symbolic zeros: ``None`` to the rule), along all of them together, and (unless
    ``cts`` is None) the pullback of ``cts``."""
    along = [
        jax.jvp(in_some(adapter, args, (i,)), (args[i],), (t,))[1] for i, t in zip(wrt, tangents)
    ]
    primals = tuple(args[i] for i in wrt)
    every = jax.jvp(in_some(adapter, args, wrt), primals, tuple(tangents))[1]
    pulled = None
    if cts is not None:
        _, pullback = jax.vjp(in_some(adapter, args, wrt), *primals)
        pulled = pullback(tuple(cts))
    return along, every, pulled


@functools.partial(jax.jit, static_argnums=(0, 1))
def _jacfwd_program(adapter: Adapter, wrt: tuple[int, ...], args: tuple, tangents: tuple) -> tuple:
    """``vmap`` over the tangents alone of the tangent along every floating argument, as
    ``jax.jacfwd`` batches them (one primal, a batch of tangents)."""

    def every(ts: tuple) -> tuple:
        return jax.jvp(in_some(adapter, args, wrt), tuple(args[i] for i in wrt), ts)[1]

    return jax.vmap(every)(tangents)


def tangents_at(s: Subject, k: int) -> tuple[list, tuple, Any]:
    """``_tangent_program`` on ``args`` with the tangents of batch element ``k``, and the
    pullback of ``probe_cts`` where the adapter has a reverse-mode rule; as NumPy arrays."""
    key = ("tangents", k)
    if key not in s.memo:
        args = tuple(jnp.asarray(a) for a in s.first)
        tangents = tuple(jnp.asarray(t[k]) for t in s.tangents)
        cts = tuple(jnp.asarray(c) for c in s.probe_cts) if s.reverse_rule else None
        result = _tangent_program(s.adapter, tuple(s.wrt), args, tangents, cts)
        s.memo[key] = jax.tree.map(np.asarray, result)
    return s.memo[key]


def check_jvp(s: Subject) -> None:
    along, every, _ = tangents_at(s, 0)
    args = [a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a for a in s.first]
    outputs = outputs64(s.adapter, s.ranks, s.output_ranks, s.floating_outputs)
    totals: list[Any] = [0.0] * len(s.floating_outputs)
    errors: list[Any] = [0.0] * len(s.floating_outputs)
    for j, i in enumerate(s.wrt):
        direction = {i: s.tangents[j][0].astype(np.float64)}
        step = directional_step(s.domains, args, direction)
        values = {m: outputs(moved(args, direction, m * step)) for m in STEPS}
        differences, uncertainty = central_difference(values, step)
        for o, got, expected, error in zip(s.floating_outputs, along[j], differences, uncertainty):
            what = f"the tangent of output {o} along argument {s.names[i]!r} (jax.jvp under jit)"
            s.expect_close("jvp", what, got, expected, "grad", None, _BY_DIFFERENCES, error)
        totals = [a + d for a, d in zip(totals, differences)]
        errors = [a + e for a, e in zip(errors, uncertainty)]
    names = ", ".join(repr(s.names[i]) for i in s.wrt)
    if len(s.wrt) > 1:
        for o, got, expected, error in zip(s.floating_outputs, every, totals, errors):
            what = f"the tangent of output {o} along {names} together (jax.jvp under jit)"
            s.expect_close("jvp", what, got, expected, "grad", None, _BY_DIFFERENCES, error)
    _check_batched(s, names)


def _check_batched(s: Subject, names: str) -> None:
    """``vmap`` of ``jax.jvp`` over a batch of tangents against one call per tangent. (Batching
    the arguments too adds little: the "vmap" check batches the forward, "specs" hands a host
    ``jvp`` whole batches, and JAX batches a ``pushforward``.)"""
    args = tuple(jnp.asarray(a) for a in s.first)
    got = jax.tree.map(np.asarray, _jacfwd_program(s.adapter, tuple(s.wrt), args, s.tangents))
    keys = ((0, 0),) * len(s.names)
    for k in range(len(s.stacked[0])):
        _, expected, _ = tangents_at(s, k)
        for o, batched, reference in zip(s.floating_outputs, got, expected):
            what = (
                f"vmap of jax.jvp over the tangents only (as jax.jacfwd): the tangent of output "
                f"{o} along {names}, for tangent {k} of the batch"
            )
            s.expect_close("jvp", what, batched[k], reference, "same", keys)
