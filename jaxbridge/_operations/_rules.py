"""The rules written in JAX: an adapter's ``pullback`` called and checked, and ``Check``, the
host call of ``adapter.check`` that such a rule's results are made to depend on: under
``jit`` XLA drops a forward whose value is unused, and a rule in JAX may not call the host
at all, so the refusal would be lost."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import numpy as np

from .._caches import per_object
from .._plan import (
    Plan,
    overrides,
    plan_of,
)
from .._primitives import bind, held_weakly
from .._protocol import AdapterLike
from .._transport import host_call
from ._shared import describe, host_function, loop_of


def pullback(
    adapter: AdapterLike,
    plan: Plan,
    res: Sequence[Any],
    g: Sequence[jax.Array],
    wanted: Sequence[bool],
) -> list:
    """``adapter.pullback(res, g)``, checked: one cotangent (or ``None``) per input. A
    pullback with a keyword ``wanted`` is told which inputs' cotangents will be used (by
    name): outside ``jit`` nothing removes the work of the others."""
    n_out = len(plan.outputs)
    told = {}
    if _takes_wanted(type(adapter)):
        told["wanted"] = frozenset(name for name, w in zip(plan.names, wanted) if w)
    got = adapter.pullback(tuple(res), tuple(g) if n_out > 1 else g[0], **told)
    if not isinstance(got, (tuple, list)) or len(got) != len(plan.args):
        raise TypeError(
            f"{plan.owner}.pullback must return a tuple of {len(plan.args)} cotangents (one "
            f"per input, None for zero), got {describe(got)}."
        )
    if not overrides(adapter, "pullback"):
        return list(got)  # (the host backward ran the check)
    return checked(adapter, plan, res, list(got))


@per_object  # (weakly: adapter classes made at run time must be freed)
def _takes_wanted(cls: type) -> bool:
    return "wanted" in inspect.signature(cls.pullback).parameters


def checked(adapter: AdapterLike, plan: Plan, res: Sequence[Any], got: list) -> list:
    """The results ``got`` of a rule written in JAX, made to depend
    on ``adapter.check`` of the inputs (the first of ``res``) where the adapter defines one:
    a host rule runs it itself, but a rule in JAX may not call the host at all."""
    if not overrides(adapter, "check") or all(x is None for x in got):
        return got
    (zeros,) = bind(Check(adapter), res[: len(plan.args)])  # of the call's batch shape
    # one zero: the cotangent of an argument the batch broadcast is summed over the batch
    # already, and zeros of the batch's shape would broadcast it back (then summed again)
    zero = zeros.sum()
    return [None if x is None else x + zero.astype(x.dtype) for x in got]


@held_weakly  # (by JAX's caches: see held_weakly)
@dataclass(frozen=True)
class Check:
    """``adapter.check`` of the inputs on the host: arguments the inputs; one result, zeros
    of their batch shape (float32), that a rule in JAX adds to its results (``checked``)."""

    adapter: AdapterLike

    primitive: ClassVar[str] = "jaxbridge_check"

    def specs(self, args):
        plan = plan_of(self.adapter, args)
        loop = loop_of(args, plan.ranks)
        return (jax.ShapeDtypeStruct(loop, np.float32),)

    def run(self, args):
        adapter, plan = self.adapter, plan_of(self.adapter, args)
        specs = self.specs(args)
        result = jax.ShapeDtypeStruct((), np.float32)
        on_host = host_function(adapter, "check", CheckCall(adapter), plan.ranks, [result], specs)
        return host_call(
            on_host, specs, args, type(adapter).arrays, f"{type(adapter).__name__}.check"
        )

    def jvp(self, primals, tangents):
        outs = bind(self, primals)
        return outs, [None]  # (zeros wherever the inputs move)

    def transpose(self, cts, args):
        raise TypeError(f"{type(self.adapter).__name__}.check is not linear in its inputs.")


@dataclass(frozen=True)
class CheckCall:
    """``adapter.check`` on one call's inputs (see ``ForwardCall``): a zero when it passes."""

    adapter: AdapterLike

    def __call__(self, values: Sequence[np.ndarray], _outs: object) -> list[object]:
        self.adapter.check(*values)
        return [np.zeros((), np.float32)]
