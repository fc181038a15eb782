"""``TangentMap``, J·t: ``adapter.pushforward`` (by default ``jvp`` on the host, in one
callback: ``host_tangents``); linear in the tangents, its transpose is ``adapter.pullback``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._plan import (
    Plan,
    floating,
    fully_linear,
    overrides,
    plan_of,
)
from .._primitives import Linear, bind, held_weakly
from .._protocol import AdapterLike
from .._transport import host_call
from ._rules import checked, pullback
from ._shared import host_function, loop_of, output_tangents, run_check, shaped


@held_weakly  # (by JAX's caches: see held_weakly)
@dataclass(frozen=True)
class TangentMap:
    """J·t: arguments ``(*res, *tangents)``, one tangent per input where ``which`` says so;
    results, one tangent per floating output."""

    adapter: AdapterLike
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
            items = checked(self.adapter, plan, res, items)
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


def host_tangents(
    adapter: AdapterLike, plan: Plan, res: Sequence[Any], tangents: Sequence[Any]
) -> Any:
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
    computed = iter(
        host_call(on_host, specs, args, type(adapter).arrays, f"{type(adapter).__name__}.jvp")
    )
    out = [next(computed) if floating(o.dtype) else None for o in plan.outputs]
    return out[0] if n_out == 1 else tuple(out)


@dataclass(frozen=True)
class TangentCall:
    """``adapter.jvp`` on ``(*res, *tangents)``, the tangents of the ``given`` inputs of
    ``count`` (see ``ForwardCall``): the tangents of the floating ``outputs`` (core shapes
    and dtypes), zeros for None."""

    adapter: AdapterLike
    owner: str
    count: int
    given: tuple[int, ...]
    n_res: int
    outputs: tuple[tuple[tuple[int, ...], np.dtype], ...]
    checks: bool

    def __call__(self, values: Sequence[np.ndarray], _outs: object) -> list[object]:
        if self.checks:
            run_check(self.adapter, values[: self.count])
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


_HOST_RULE_AGAIN = (
    "{owner}.jvp runs on the host, so it cannot be differentiated again (forward over "
    "forward mode, jacfwd of jacfwd). Override `pushforward` with bridged calls that have "
    "derivative rules of their own to get derivatives of every order."
)
