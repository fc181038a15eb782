"""What the operations share: the batch shape of a call's arguments, the host function of
one callback (its method run over the batch, results checked), and the shaping of the
rules' results to their targets."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import HANDOFFS, Guarded
from .._batches import run_batched, whole
from .._blas import HeldBlas
from .._host import Compute, HostFunction, Repair, host_error
from .._plan import (
    Plan,
    floating,
)
from .._primitives import Linear, vary_like
from .._protocol import AdapterLike
from .._refusals import RefusedType


def loop_of(args: Sequence[Any], core_ranks: Sequence[int]) -> tuple[int, ...]:
    """The broadcast of the leading (non-core) axes of ``args``."""
    return tuple(
        np.broadcast_shapes(*(tuple(a.shape)[: len(a.shape) - r] for a, r in zip(args, core_ranks)))
    )


def host_function(
    adapter: AdapterLike,
    method: str,
    compute: Compute,
    ranks: Sequence[int],
    results: Sequence[jax.ShapeDtypeStruct],
    specs: Sequence[jax.ShapeDtypeStruct],
    sources: Sequence[Sequence[int] | None] | None = None,
    repair: Repair | None = None,
) -> HostFunction:
    """The host function of one callback: ``compute`` run over the batch, results checked.

    ``results`` are the results' core specs, ``specs`` the same with their batch axes,
    ``sources`` gives, per result, the arguments whose batch it has (``None``: all), and
    ``repair`` mends results that fail the fast check before they are checked."""
    cls = type(adapter)
    if cls.arrays != "numpy":
        compute = Guarded(compute, cls.__name__, method, HANDOFFS[cls.arrays])
    held = cls.blas_threads
    if held is not None and cls.processes > 1:
        compute = HeldBlas(compute, held)  # in the worker processes, around each element
    if cls.vectorized:
        expected = [
            (tuple(s.shape), np.dtype(s.dtype), len(r.shape)) for s, r in zip(specs, results)
        ]
        # a forward's results must have the whole batch (see conform)
        function = whole(cls.__name__, method, compute, expected, repair, method == "forward")
    else:
        cores = [(s.shape, np.dtype(s.dtype)) for s in results]
        sources = [None] * len(cores) if sources is None else sources
        function = functools.partial(
            run_batched,
            cls.__name__,
            method,
            compute,
            ranks,
            cores,
            sources,
            cls.threads,
            cls.processes,
            repair=repair,
        )
    # held on the thread that runs the host call, around the whole of it (see _blas)
    return function if held is None else HeldBlas(function, held)


def output_tangents(owner: str, method: str, got: Any, n_out: int) -> list[Any]:
    """The output tangents a ``jvp`` or ``pushforward`` returned, one per output: a tuple for
    several outputs; for one, the tangent itself (or a tuple of it)."""
    if isinstance(got, (tuple, list)) and (n_out > 1 or type(got) is tuple):
        items = list(got)
    else:
        items = [got]
    if len(items) != n_out:
        raise RefusedType(
            f"{owner}.{method} must return {n_out} output tangents (a tuple if there are "
            f"several outputs), got {describe(got)}."
        )
    return items


def shaped(plan: Plan, name: str, ct: Any, target: Linear) -> jax.Array | None:
    """A cotangent shaped like its argument: summed over axes the argument was broadcast
    along, cast to its dtype, varying over the same mesh axes."""
    if not floating(target.dtype):
        return None
    if ct is None:
        return vary_like(jnp.zeros(target.shape, target.dtype), target.varying)
    ct = jnp.asarray(ct)
    shape = target.shape
    # (the argument has the call's loop axes already: a cotangent with more is wrong)
    if ct.ndim != len(shape) or any(s != 1 and s != c for s, c in zip(shape, ct.shape)):
        raise ValueError(
            f"{plan.owner}: the cotangent of argument '{name}' has shape {ct.shape}, which "
            f"does not reduce to the argument's shape {shape}."
        )
    return vary_like(_reduce(ct, target).astype(target.dtype), target.varying)


def _reduce(x: jax.Array, target: Any) -> jax.Array:
    """``x`` summed down to ``target``'s shape, over the axes ``target`` broadcasts along."""
    shape = tuple(target.shape)
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, (s, c) in enumerate(zip(shape, x.shape[lead:])) if s == 1 and c != 1
    )
    return jnp.sum(x, axis=axes).reshape(shape) if axes else x


def describe(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


def run_check(adapter: AdapterLike, values: Sequence[np.ndarray]) -> None:
    """``adapter.check`` of the inputs, before a host method: its error names ``check``,
    not the method it guards."""
    try:
        adapter.check(*values)
    except Exception as error:
        raise host_error(type(adapter).__name__, "check", error)
