"""``Backward``, Jᵀ·g: ``adapter.backward`` on the host (the default ``pullback``); linear in
the cotangents, its transpose is the tangent map."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._host import cotangent
from .._plan import (
    Plan,
    arg_names,
    floating,
    fully_linear,
    overrides,
    plan_of,
)
from .._primitives import Linear, bind, held_weakly
from .._protocol import AdapterLike
from .._refusals import RefusedType
from .._transport import host_call
from ._shared import describe, host_function, loop_of, run_check, shaped
from ._tangent import TangentMap


@held_weakly  # (by JAX's caches: see held_weakly)
@dataclass(frozen=True)
class Backward:
    """Jᵀ·g on the host: arguments ``(*res, *g)``, one cotangent per output; results, one
    cotangent per floating input."""

    adapter: AdapterLike

    primitive: ClassVar[str] = "jaxbridge_vjp"

    def _plan(self, args: Sequence[Any]) -> Plan:
        return plan_of(self.adapter, args[: len(arg_names(type(self.adapter)))])

    def _n_res(self, plan: Plan) -> int:
        return len(plan.args) + len(plan.outputs) + len(plan.residuals)

    def _cores(self, plan: Plan) -> list[jax.ShapeDtypeStruct]:
        return [*plan.args, *plan.outputs, *plan.residuals, *plan.outputs]

    def _results(self, plan: Plan) -> list[jax.ShapeDtypeStruct]:
        return [a for a in plan.args if floating(a.dtype)]

    def specs(self, args):
        plan = self._plan(args)
        loop = loop_of(args, [len(s.shape) for s in self._cores(plan)])
        return tuple(jax.ShapeDtypeStruct(loop + s.shape, s.dtype) for s in self._results(plan))

    def run(self, args):
        adapter, plan = self.adapter, self._plan(args)
        n_res, names = self._n_res(plan), plan.names
        wanted = [i for i, a in enumerate(plan.args) if floating(a.dtype)]
        ranks = [len(s.shape) for s in self._cores(plan)]

        count = len(names)
        every, several = len(wanted) == count, len(plan.outputs) > 1
        specs = self.specs(args)
        # what each cotangent must be: the whole call's batch for a vectorized adapter, one
        # element's core shape for a looped one (the bridge loops)
        shapes = [
            s.shape if adapter.vectorized else plan.args[i].shape for s, i in zip(specs, wanted)
        ]

        chosen = None if every else tuple(wanted)
        checks = overrides(adapter, "check")
        compute = BackwardCall(adapter, plan.owner, n_res, several, count, chosen, checks)

        def repair(values: Sequence[np.ndarray], cts: Sequence[object]) -> list[np.ndarray]:
            # (only for cotangents that are not arrays of the exact shape and dtype: None,
            # broadcast, another dtype, or wrong)
            g_batch = loop_of(values[n_res:], ranks[n_res:])
            return [
                cotangent(plan.owner, names[i], c, shape, g_batch, plan.args[i].dtype)
                for c, shape, i in zip(cts, shapes, wanted)
            ]

        results = self._results(plan)
        on_host = host_function(adapter, "backward", compute, ranks, results, specs, repair=repair)
        return host_call(
            on_host, specs, args, type(adapter).arrays, f"{type(adapter).__name__}.backward"
        )

    def jvp(self, primals, tangents):
        plan = self._plan(primals)
        n_res = self._n_res(plan)
        if any(d is not None for d in tangents[:n_res]) and not fully_linear(self.adapter, plan):
            raise TypeError(_HOST_BACKWARD_AGAIN.format(owner=plan.owner))
        outs = bind(self, primals)
        if all(d is None for d in tangents[n_res:]):
            return outs, [None] * len(outs)
        filled = [
            jnp.zeros_like(g) if d is None else d for g, d in zip(primals[n_res:], tangents[n_res:])
        ]
        return outs, bind(self, (*primals[:n_res], *filled))

    def transpose(self, cts, args):
        plan = self._plan(args)
        n_res = self._n_res(plan)
        res, g = args[:n_res], args[n_res:]
        if any(isinstance(r, Linear) for r in res):
            raise TypeError(
                f"{plan.owner}: its backward is linear in the cotangents only, not in the "
                "inputs, outputs or residuals it was built from."
            )
        given = iter(cts)
        tangents = [next(given) if floating(a.dtype) else None for a in plan.args]
        which = tuple(t is not None for t in tangents)
        computed = iter(
            bind(TangentMap(self.adapter, which), (*res, *(t for t in tangents if t is not None)))
        )
        out = []
        for o, gi in zip(plan.outputs, g):
            t = next(computed) if floating(o.dtype) else None
            out.append(
                shaped(plan, "g", t, gi) if isinstance(gi, Linear) and t is not None else None
            )
        return [None] * n_res + out


@dataclass(frozen=True)
class BackwardCall:
    """``adapter.backward`` on ``(*res, *cotangents)`` (see ``ForwardCall``): the cotangents
    of the ``wanted`` inputs (None: all ``count``)."""

    adapter: AdapterLike
    owner: str
    n_res: int
    several: bool  # outputs, so a tuple of cotangents
    count: int
    wanted: tuple[int, ...] | None
    checks: bool

    def __call__(self, values: Sequence[np.ndarray], _outs: object) -> Sequence[object]:
        n_res = self.n_res
        if self.checks:  # (res begins with the inputs)
            run_check(self.adapter, values[: self.count])
        g = tuple(values[n_res:]) if self.several else values[n_res]
        got = self.adapter.backward(tuple(values[:n_res]), g)
        if not isinstance(got, (tuple, list)) or len(got) != self.count:
            raise RefusedType(
                f"{self.owner}.backward must return a tuple of {self.count} cotangents "
                f"(one per input, None for zero), got {describe(got)}."
            )
        return got if self.wanted is None else [got[i] for i in self.wanted]


_HOST_BACKWARD_AGAIN = (
    "{owner}.backward runs on the host, so it cannot be differentiated again (hessian, "
    "jacrev of jacrev, grad of grad). Override `pullback` with bridged calls that have "
    "derivative rules of their own (or with jnp code) to get derivatives of every order."
)
