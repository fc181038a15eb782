"""The three operations of a bridged call, each bound as a primitive (see ``_primitives``).

- ``Forward``: ``adapter.forward`` on the host; with ``residuals``, the residuals too.
- ``TangentMap``: J·t, ``adapter.pushforward`` (by default ``jvp`` on the host, in one
  callback: ``host_tangents``); linear in the tangents, its transpose is ``adapter.pullback``.
- ``Backward``: Jᵀ·g, ``adapter.backward`` on the host (the default ``pullback``); linear in
  the cotangents, its transpose is the tangent map.
- ``Check``: ``adapter.check`` on the host, for a rule written in JAX: its zeros are added
  to the rule's results, so that XLA cannot drop the refusal with the forward call.

Arguments reach an operation padded to a common number of leading (loop) axes, size 1
where an argument is broadcast: the host sees them as gufunc batch axes. ``res`` is always
``(*inputs, *outputs, *residuals)``, what ``backward`` gets.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ._blas import HeldBlas
from ._caches import per_object
from ._host import (
    Compute,
    HostFunction,
    Repair,
    cotangent,
    run_batched,
    set_aside,
    whole,
)
from ._plan import (
    Plan,
    arg_names,
    floating,
    fully_linear,
    overrides,
    plan_of,
    told_residuals,
    writes_out,
)
from ._primitives import Linear, bind, vary_like
from ._refusals import RefusedType
from ._residuals import refuse_differentiated_residuals
from ._transport import gives_buffers, host_call

if TYPE_CHECKING:
    from ._adapter import Adapter


@dataclass(frozen=True)
class Forward:
    """The forward call: outputs, and the residuals too if ``residuals``."""

    adapter: Adapter
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
        every = self.residuals or (writes and bool(plan.residuals) and gives_buffers(args))
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
        results = host_call(on_host, specs, args)
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
class TangentMap:
    """J·t: arguments ``(*res, *tangents)``, one tangent per input where ``which`` says so;
    results, one tangent per floating output."""

    adapter: Adapter
    which: tuple[bool, ...]

    primitive: ClassVar[str] = "jaxbridge_jvp"

    def split(self, args: Sequence[Any]) -> tuple[Sequence[Any], list[Any]]:
        """``(res, tangents)``, the latter one per input with ``None`` where not given."""
        n_res = len(args) - sum(self.which)
        given = iter(args[n_res:])
        return args[:n_res], [next(given) if w else None for w in self.which]

    def _plan(self, args: Sequence[Any]) -> Plan:
        return plan_of(self.adapter, args[: len(self.which)])

    def _specs(self, plan: Plan, args: Sequence[Any]) -> tuple[jax.ShapeDtypeStruct, ...]:
        res, tangents = self.split(args)
        cores = (*plan.args, *plan.outputs, *plan.residuals)
        loop = loop_of(
            [*res, *(t for t in tangents if t is not None)],
            [
                *(len(s.shape) for s in cores),
                *(len(s.shape) for s, t in zip(plan.args, tangents) if t is not None),
            ],
        )
        return tuple(
            jax.ShapeDtypeStruct(loop + o.shape, o.dtype) for o in plan.outputs if floating(o.dtype)
        )

    def specs(self, args):
        return self._specs(self._plan(args), args)

    def run(self, args):
        plan = self._plan(args)
        specs = self._specs(plan, args)
        res, tangents = self.split(args)
        got = self.adapter.pushforward(tuple(res), tuple(tangents))
        n_out = len(plan.outputs)
        items = output_tangents(plan.owner, "pushforward", got, n_out)
        if overrides(self.adapter, "pushforward"):  # (the host jvp runs the check)
            items = checked(self.adapter, plan, res, items, [len(o.shape) for o in plan.outputs])
        wanted = [(i, t) for i, (t, o) in enumerate(zip(items, plan.outputs)) if floating(o.dtype)]
        return [
            jnp.zeros(s.shape, s.dtype) if t is None else _tangent(plan, i, t, s)
            for (i, t), s in zip(wanted, specs)
        ]

    def jvp(self, primals, tangents):
        res, ts = self.split(primals)
        res_dots, t_dots = self.split(tangents)
        nonlinear = [i for i, (r, d) in enumerate(zip(res, res_dots)) if d is not None]
        plan = self._plan(primals)
        if nonlinear and not fully_linear(self.adapter, plan):
            if not overrides(self.adapter, "pushforward"):
                raise TypeError(_HOST_RULE_AGAIN.format(owner=type(self.adapter).__name__))

            def through_res(*moving: jax.Array) -> Sequence[jax.Array]:
                values = list(res)
                for i, value in zip(nonlinear, moving):
                    values[i] = value
                return self.run([*values, *(t for t in ts if t is not None)])

            outs, out_dots = jax.jvp(
                through_res, [res[i] for i in nonlinear], [res_dots[i] for i in nonlinear]
            )
            outs, out_dots = list(outs), list(out_dots)
        else:
            outs, out_dots = bind(self, primals), [None] * len(self.specs(primals))
        if any(d is not None for d in t_dots):
            # linear in the tangents: the derivative along them is the map itself
            filled = [
                jnp.zeros_like(t) if d is None else d for t, d in zip(ts, t_dots) if t is not None
            ]
            along = bind(self, (*res, *filled))
            out_dots = [a if d is None else d + a for d, a in zip(out_dots, along)]
        return outs, out_dots

    def transpose(self, cts, args):
        res, tangents = self.split(args)
        plan = self._plan(args)
        if any(isinstance(r, Linear) for r in res):
            raise TypeError(
                f"{plan.owner}: its tangent map is linear in the tangents only, not in the "
                "inputs, outputs or residuals it was built from."
            )
        specs = self._specs(plan, args)  # one per floating output
        first = next((o for o in plan.outputs if floating(o.dtype)), None)
        loop = specs[0].shape[: len(specs[0].shape) - len(first.shape)] if first is not None else ()
        given = iter(cts)
        # integer outputs have no tangent; their cotangents reach the host as zeros
        g = [(next(given) if floating(o.dtype) else None) for o in plan.outputs]
        g = [
            jnp.zeros(loop + o.shape, o.dtype) if x is None else x for x, o in zip(g, plan.outputs)
        ]
        if fully_linear(self.adapter, plan) and not plan.residuals:
            # J does not depend on where it is taken: without the forward's results, the
            # forward call is left unused, and a gradient makes one host call, not two
            # (integer inputs, held fixed, keep their values)
            res = [
                jnp.zeros((1,) * (r.ndim - len(c.shape)) + c.shape, c.dtype)
                if floating(c.dtype) or i >= len(plan.args)
                else r
                for i, (r, c) in enumerate(zip(res, (*plan.args, *plan.outputs)))
            ]
        # (a tangent given as a known array, e.g. zeros filled in for one without a
        # derivative, is a constant of the transposed map: it gets no cotangent)
        moving = [isinstance(t, Linear) for t in tangents]
        got = pullback(self.adapter, plan, res, g, moving)
        cotangents = [
            shaped(plan, name, ct, t) if m else None
            for name, ct, t, m in zip(plan.names, got, tangents, moving)
        ]
        return [None] * len(res) + [c for c, t in zip(cotangents, tangents) if t is not None]


@dataclass(frozen=True)
class Backward:
    """Jᵀ·g on the host: arguments ``(*res, *g)``, one cotangent per output; results, one
    cotangent per floating input."""

    adapter: Adapter

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
        return host_call(on_host, specs, args)

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


def host_tangents(adapter: Adapter, plan: Plan, res: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """J·t by ``adapter.jvp`` in one host callback: the default ``pushforward``'s host call,
    as ``Backward`` is the default ``pullback``'s. ``tangents`` has one entry per input,
    ``None`` where zero; the result is one tangent per output (``None`` for integer ones),
    the tangent itself for one output."""
    given = [i for i, t in enumerate(tangents) if t is not None]
    n_res, n_out = len(res), len(plan.outputs)
    cores = (*plan.args, *plan.outputs, *plan.residuals)
    ranks = [len(s.shape) for s in cores] + [len(plan.args[i].shape) for i in given]

    outputs = tuple((tuple(o.shape), np.dtype(o.dtype)) for o in plan.outputs)
    count, checks = len(plan.names), overrides(adapter, "check")
    compute = TangentCall(adapter, plan.owner, count, tuple(given), n_res, outputs, checks)
    results = [o for o in plan.outputs if floating(o.dtype)]
    args = (*res, *(tangents[i] for i in given))
    loop = loop_of(args, ranks)
    specs = [jax.ShapeDtypeStruct(loop + s.shape, s.dtype) for s in results]
    on_host = host_function(adapter, "jvp", compute, ranks, results, specs)
    computed = iter(host_call(on_host, specs, args))
    out = [next(computed) if floating(o.dtype) else None for o in plan.outputs]
    return out[0] if n_out == 1 else tuple(out)


# --- what the operations share --------------------------------------------------------------


def loop_of(args: Sequence[Any], core_ranks: Sequence[int]) -> tuple[int, ...]:
    """The broadcast of the leading (non-core) axes of ``args``."""
    return tuple(
        np.broadcast_shapes(*(tuple(a.shape)[: len(a.shape) - r] for a, r in zip(args, core_ranks)))
    )


def pullback(
    adapter: Adapter,
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
    return checked(adapter, plan, res, list(got), plan.ranks)


def checked(
    adapter: Adapter, plan: Plan, res: Sequence[Any], got: list, ranks: Sequence[int]
) -> list:
    """The results ``got`` (core ranks ``ranks``) of a rule written in JAX, made to depend
    on ``adapter.check`` of the inputs (the first of ``res``) where the adapter defines one:
    a host rule runs it itself, but a rule in JAX may not call the host at all."""
    if not overrides(adapter, "check") or all(x is None for x in got):
        return got
    (zeros,) = bind(Check(adapter), res[: len(plan.args)])  # of the call's batch shape
    return [
        None if x is None else x + zeros.reshape(zeros.shape + (1,) * r).astype(x.dtype)
        for x, r in zip(got, ranks)
    ]


@dataclass(frozen=True)
class Check:
    """``adapter.check`` of the inputs on the host: arguments the inputs; one result, zeros
    of their batch shape (float32), that a rule in JAX adds to its results (``checked``)."""

    adapter: Adapter

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
        return host_call(on_host, specs, args)

    def jvp(self, primals, tangents):
        outs = bind(self, primals)
        return outs, [None]  # (zeros wherever the inputs move)

    def transpose(self, cts, args):
        raise TypeError(f"{type(self.adapter).__name__}.check is not linear in its inputs.")


@per_object  # (weakly: adapter classes made at run time must be freed)
def _takes_wanted(cls: type) -> bool:
    return "wanted" in inspect.signature(cls.pullback).parameters


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


def _tangent(plan: Plan, index: int, t: Any, spec: jax.ShapeDtypeStruct) -> jax.Array:
    """Output ``index``'s tangent from ``pushforward``, as ``spec``: leading batch axes may
    broadcast (size 1 or missing), core axes must match, and it must be floating."""
    t = jnp.asarray(t)
    core = plan.outputs[index].shape
    lead = len(spec.shape) - len(core)
    padded = (1,) * (len(spec.shape) - t.ndim) + t.shape
    if (
        len(padded) != len(spec.shape)
        or padded[lead:] != tuple(core)
        or any(p not in (1, full) for p, full in zip(padded[:lead], spec.shape))
    ):
        raise ValueError(
            f"{plan.owner}.pushforward: the tangent of output {index} has shape {t.shape}, "
            f"expected {spec.shape}."
        )
    if not jnp.issubdtype(t.dtype, jnp.inexact):
        raise TypeError(
            f"{plan.owner}.pushforward: the tangent of output {index} has dtype {t.dtype}, "
            f"expected a floating one ({spec.dtype})."
        )
    return jnp.broadcast_to(t, spec.shape).astype(spec.dtype)


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


@dataclass(frozen=True)
class ForwardCall:
    """``adapter.forward`` on one call's inputs (one element's, for a looped adapter), as a
    host function runs it: a value, not a closure, so that a worker process can run it too
    (``processes``). ``told``: its keyword arguments (``residuals``); ``keep``: the results
    the call takes, of ``n_all``; ``unread``: residuals computed in buffers no one reads;
    ``checks``: the adapter defines ``check``, run first."""

    adapter: Adapter
    writes: bool  # (takes `out`)
    told: dict[str, Any]
    keep: int
    n_out: int
    n_all: int
    unread: bool
    checks: bool

    def __call__(self, values: Sequence[np.ndarray], outs: Sequence[np.ndarray] | None):
        if self.checks:
            self.adapter.check(*values)
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


@dataclass(frozen=True)
class BackwardCall:
    """``adapter.backward`` on ``(*res, *cotangents)`` (see ``ForwardCall``): the cotangents
    of the ``wanted`` inputs (None: all ``count``)."""

    adapter: Adapter
    owner: str
    n_res: int
    several: bool  # outputs, so a tuple of cotangents
    count: int
    wanted: tuple[int, ...] | None
    checks: bool

    def __call__(self, values: Sequence[np.ndarray], _outs: object) -> Sequence[object]:
        n_res = self.n_res
        if self.checks:  # (res begins with the inputs)
            self.adapter.check(*values[: self.count])
        g = tuple(values[n_res:]) if self.several else values[n_res]
        got = self.adapter.backward(tuple(values[:n_res]), g)
        if not isinstance(got, (tuple, list)) or len(got) != self.count:
            raise RefusedType(
                f"{self.owner}.backward must return a tuple of {self.count} cotangents "
                f"(one per input, None for zero), got {describe(got)}."
            )
        return got if self.wanted is None else [got[i] for i in self.wanted]


@dataclass(frozen=True)
class CheckCall:
    """``adapter.check`` on one call's inputs (see ``ForwardCall``): a zero when it passes."""

    adapter: Adapter

    def __call__(self, values: Sequence[np.ndarray], _outs: object) -> list[object]:
        self.adapter.check(*values)
        return [np.zeros((), np.float32)]


@dataclass(frozen=True)
class TangentCall:
    """``adapter.jvp`` on ``(*res, *tangents)``, the tangents of the ``given`` inputs of
    ``count`` (see ``ForwardCall``): the tangents of the floating ``outputs`` (core shapes
    and dtypes), zeros for None."""

    adapter: Adapter
    owner: str
    count: int
    given: tuple[int, ...]
    n_res: int
    outputs: tuple[tuple[tuple[int, ...], np.dtype], ...]
    checks: bool

    def __call__(self, values: Sequence[np.ndarray], _outs: object) -> list[object]:
        if self.checks:
            self.adapter.check(*values[: self.count])
        on_host: list[np.ndarray | None] = [None] * self.count
        for i, value in zip(self.given, values[self.n_res :]):
            on_host[i] = value
        got = self.adapter.jvp(tuple(values[: self.n_res]), tuple(on_host))
        items = output_tangents(self.owner, "jvp", got, len(self.outputs))
        return [
            np.zeros(shape, dtype) if t is None else t
            for t, (shape, dtype) in zip(items, self.outputs)
            if floating(dtype)
        ]


def host_function(
    adapter: Adapter,
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


def describe(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


_HOST_BACKWARD_AGAIN = (
    "{owner}.backward runs on the host, so it cannot be differentiated again (hessian, "
    "jacrev of jacrev, grad of grad). Override `pullback` with bridged calls that have "
    "derivative rules of their own (or with jnp code) to get derivatives of every order."
)
_HOST_RULE_AGAIN = (
    "{owner}.jvp runs on the host, so it cannot be differentiated again (forward over "
    "forward mode, jacfwd of jacfwd). Override `pushforward` with bridged calls that have "
    "derivative rules of their own to get derivatives of every order."
)
