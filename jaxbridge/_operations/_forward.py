"""``Forward``: ``adapter.forward`` on the host; with ``residuals``, the residuals too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._batches import set_aside
from .._plan import (
    floating,
    overrides,
    plan_of,
    told_residuals,
    writes_out,
)
from .._primitives import Linear, bind, held_weakly
from .._protocol import AdapterLike
from .._residuals import refuse_differentiated_residuals
from .._transport import gives_buffers, host_call
from ._rules import pullback
from ._shared import host_function, run_check, shaped
from ._tangent import TangentMap


@held_weakly  # (by JAX's caches: see held_weakly)
@dataclass(frozen=True)
class Forward:
    """The forward call: outputs, and the residuals too if ``residuals``."""

    adapter: AdapterLike
    residuals: bool = False

    primitive: ClassVar[str] = "jaxbridge_forward"

    def specs(self, args: Sequence[Any]) -> tuple[jax.ShapeDtypeStruct, ...]:
        return plan_of(self.adapter, args).results(self.residuals)

    def run(self, args: Sequence[jax.Array]) -> Sequence[jax.Array]:
        adapter, plan = self.adapter, plan_of(self.adapter, args)
        n_out, n_all = len(plan.outputs), len(plan.outputs) + len(plan.residuals)
        writes = writes_out(type(adapter))
        # An adapter that writes its results in place gets XLA's buffers for its residuals
        # too, even where the call keeps none: XLA's scratch memory is reused from call to
        # call, NumPy's large arrays are fresh pages each time.
        every = self.residuals or (
            writes and bool(plan.residuals) and gives_buffers(args, type(adapter).arrays)
        )
        declared = (*plan.outputs, *(plan.residuals if every else ()))
        specs = plan.results(every)

        told: dict[str, Any] = {}
        if plan.residuals and told_residuals(type(adapter)):
            told["residuals"] = every  # False: it may skip the work only residuals need
        unread = every and not self.residuals  # residuals computed in buffers no one reads
        checks = overrides(adapter, "check")
        compute = ForwardCall(adapter, writes, told, len(declared), n_out, n_all, unread, checks)

        # residuals take the batch of the arguments they are computed from alone
        sources = [None] * n_out + [plan.sources] * (len(declared) - n_out)
        on_host = host_function(adapter, "forward", compute, plan.ranks, declared, specs, sources)
        results = host_call(
            on_host, specs, args, type(adapter).arrays, f"{type(adapter).__name__}.forward"
        )
        return results if every == self.residuals else results[:n_out]

    def jvp(self, primals, tangents):
        plan = plan_of(self.adapter, primals)
        if all(t is None for t in tangents):
            outs = bind(self, primals)
            return outs, [None] * len(outs)
        if self.residuals:  # a rule that reads the residuals is being differentiated
            refuse_differentiated_residuals(self.adapter, plan, primals, tangents)
        results = bind(Forward(self.adapter, residuals=True), primals)
        res = (*primals, *results)
        which = tuple(t is not None for t in tangents)
        given = [t for t in tangents if t is not None]
        computed = iter(bind(TangentMap(self.adapter, which), (*res, *given)))
        out_tangents = [next(computed) if floating(o.dtype) else None for o in plan.outputs]
        outs = results if self.residuals else results[: len(plan.outputs)]
        # residuals are constants of the derivative rules: their tangents are zero
        return outs, out_tangents + [None] * (len(outs) - len(plan.outputs))

    def transpose(self, cts, args):
        """``jax.linear_transpose``: the pullback, where ``forward`` is linear in the unknowns."""
        adapter = self.adapter
        plan = plan_of(adapter, args)
        linear = set(adapter.linear_in)
        for name, arg in zip(plan.names, args):
            if isinstance(arg, Linear) and name not in linear:
                raise TypeError(
                    f"{plan.owner} is not declared linear in argument '{name}', so it cannot be "
                    f"transposed in it (jax.linear_transpose). If forward is linear in "
                    f"'{name}' with the other arguments fixed, add it to `linear_in`; "
                    f"declared: linear_in = {tuple(adapter.linear_in)!r}."
                )
        # The transpose of a linear map does not depend on where it is taken: at zero.
        known = [jnp.zeros(a.shape, a.dtype) if isinstance(a, Linear) else a for a in args]
        results = bind(Forward(adapter, residuals=True), known)
        res = (*known, *results)
        g = [
            jnp.zeros(out.shape, out.dtype) if ct is None else ct
            for ct, out in zip(cts, results[: len(plan.outputs)])
        ]
        got = pullback(adapter, plan, res, g, [isinstance(a, Linear) for a in args])
        return [
            shaped(plan, name, ct, arg) if isinstance(arg, Linear) else None
            for name, ct, arg in zip(plan.names, got, args)
        ]


@dataclass(frozen=True)
class ForwardCall:
    """``adapter.forward`` on one call's inputs (one element's, for a looped adapter), as a
    host function runs it: a value, not a closure, so that a worker process can run it too
    (``processes``). ``told``: its keyword arguments (``residuals``); ``keep``: the results
    the call takes, of ``n_all``; ``unread``: residuals computed in buffers no one reads;
    ``checks``: the adapter defines ``check``, run first."""

    adapter: AdapterLike
    writes: bool  # (takes `out`)
    told: dict[str, Any]
    keep: int
    n_out: int
    n_all: int
    unread: bool
    checks: bool

    def __call__(self, values: Sequence[np.ndarray], outs: Sequence[np.ndarray] | None):
        if self.checks:
            run_check(self.adapter, values)
        if self.writes:
            got = self.adapter.forward(
                *values, out=None if outs is None else tuple(outs), **self.told
            )
        else:
            got = self.adapter.forward(*values, **self.told)
        keep, n_all = self.keep, self.n_all
        # a tuple holds several results; a list for one result is that result's values
        if not isinstance(got, tuple) and not (isinstance(got, list) and keep > 1):
            return (got,)
        if self.writes and outs is not None and len(outs) > 1:
            got = set_aside(got, outs)
        if self.unread and outs is not None and len(got) == n_all:
            return (*got[: self.n_out], *outs[self.n_out :])  # not copied into their buffers
        # residuals the primal call does not need are dropped here, on the host
        return got[:keep] if keep < n_all and len(got) == n_all else got
