"""The guard that keeps a second derivative from differentiating through a residual.

Residuals are constants to the derivative rules: the bridge cannot know their derivative (the
host computed them), so when a bridged call is differentiated twice, the forward that
computes them gives them a zero tangent. That is right where a rule written in JAX
(``pullback``, ``pushforward``) passes them only to bridged calls whose own rules take the
derivative through the call's inputs and outputs (``LinearSolve`` hands its factors to a
solve together with ``a``), or wraps them in ``jax.lax.stop_gradient`` because it supplies
their derivative otherwise (``Sigmoid``); and silently wrong where the rule computes with a
residual in JAX, as if it were an input (a saved slope multiplied into the cotangent loses
its own derivative: ``jax.hessian`` gave 0.0 for 4.02).

``refuse_differentiated_residuals`` tells these apart when the forward with residuals is
differentiated with a tangent in an argument the residuals are computed from: it traces each
JAX rule once (per adapter and shapes) and follows every floating residual through it. A
residual that reaches the rule's results other than through a bridged call,
``stop_gradient`` or a comparison is an error naming the adapter, the rule and the
residual. Higher-order primitives other than ``jit`` and ``custom_jvp_call`` are followed
as a whole (any tainted input taints every output). A bridged call's own rules are not
looked into: where they use the tangent of a residual passed to them,
``jaxbridge.testing.check_adapter``'s "hessian" check catches the error by finite
differences.

JAX structures used: ``jax.make_jaxpr`` and the jaxpr it returns (``jaxpr.eqns``, each
equation's ``primitive.name``, ``invars``, ``outvars`` and the ``jaxpr``/``call_jaxpr``
parameter of ``jit`` and ``custom_jvp_call``), ``jax.extend.core.Var``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.extend.core import Var

from ._caches import per_object
from ._plan import Plan, floating, overrides, plan_of
from ._protocol import AdapterLike

_BARRIERS = frozenset(
    {"jaxbridge_forward", "jaxbridge_jvp", "jaxbridge_vjp", "jaxbridge_check", "stop_gradient"}
    | {"sign", "floor", "ceil", "round"}
)
"""Where a residual may go: a bridged call (its own rules answer for the derivative),
``stop_gradient`` (the rule says that the residual's derivative is accounted for), or a
function whose derivative is zero. (Comparisons too: their results are not floating.)"""

_FOLLOWED = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr"}
_FOLLOWED_CUSTOM = {"custom_jvp_call": "call_jaxpr"}


def refuse_differentiated_residuals(
    adapter: AdapterLike, plan: Plan, primals: Sequence[Any], tangents: Sequence[Any]
) -> None:
    """Raise ``TypeError`` if the forward with residuals, differentiated along ``tangents``,
    hands its residuals to a JAX rule that would differentiate through them."""
    floating_residuals = [k for k, r in enumerate(plan.residuals) if floating(r.dtype)]
    if not floating_residuals:
        return
    sources = set(plan.names if adapter.residuals_from is None else adapter.residuals_from)
    if all(t is None for name, t in zip(plan.names, tangents) if name in sources):
        return  # the residuals' own arguments are constants: so are they, exactly
    rules = tuple(rule for rule in ("pullback", "pushforward") if overrides(adapter, rule))
    if not rules:
        return  # host rules: differentiating them again is refused on its own
    key = tuple((tuple(jax.typeof(p).shape), np.dtype(jax.typeof(p).dtype)) for p in primals)
    reads = _reads(adapter)
    for rule in rules:
        if (rule, key) not in reads:
            reads[rule, key] = _residual_read(adapter, rule, key)
        found = reads[rule, key]
        if found is not None:
            raise TypeError(_READS_RESIDUAL.format(owner=plan.owner, rule=rule, index=found))


@per_object
def _reads(adapter: AdapterLike) -> dict[tuple, int | None]:
    """``_residual_read``'s answers for ``adapter``, by rule and argument shapes: kept while
    the adapter is (tracing a rule is the costly part)."""
    return {}


def _residual_read(adapter: AdapterLike, rule: str, key: tuple) -> int | None:
    """The first floating residual that ``adapter``'s JAX ``rule`` computes with, on
    arguments of shapes and dtypes ``key``; ``None`` if none (or if the rule cannot be traced
    here: the call itself then raises its own error)."""
    args = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in key]
    plan = plan_of(adapter, args)
    results = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in plan.results(True)]
    n_out = len(plan.outputs)
    res = (*args, *results)
    if rule == "pullback":
        g = tuple(results[:n_out])
        second: Any = g if n_out > 1 else g[0]
    else:
        second = tuple(a if floating(a.dtype) else None for a in args)
    try:
        closed = jax.make_jaxpr(lambda r, s: getattr(adapter, rule)(r, s))(res, second)
    except Exception:  # the call itself raises it, where it belongs
        return None
    jaxpr = closed.jaxpr
    start = len(args) + n_out
    watched = {
        jaxpr.invars[start + k]: k
        for k, r in enumerate(plan.residuals)
        if floating(r.dtype) and start + k < len(jaxpr.invars)
    }
    reached = _follow(jaxpr, {v: {k} for v, k in watched.items()})
    found = set().union(*(reached.get(v, set()) for v in jaxpr.outvars if isinstance(v, Var)))
    return min(found) if found else None


def _follow(jaxpr: Any, tainted: dict[Any, set[int]]) -> dict[Any, set[int]]:
    """``tainted`` (variable -> the residuals it depends on) extended through ``jaxpr``'s
    equations, stopping at ``_BARRIERS``."""
    tainted = dict(tainted)
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        ins = [tainted.get(v, set()) if isinstance(v, Var) else set() for v in eqn.invars]
        if name in _BARRIERS or not any(ins):
            continue
        inner_name = _FOLLOWED.get(name) or _FOLLOWED_CUSTOM.get(name)
        inner = eqn.params.get(inner_name) if inner_name else None
        inner = getattr(inner, "jaxpr", inner)
        if inner is not None and len(inner.invars) == len(eqn.invars):
            reached = _follow(inner, {v: s for v, s in zip(inner.invars, ins) if s})
            outs = [reached.get(v, set()) if isinstance(v, Var) else set() for v in inner.outvars]
        else:
            every = set().union(*ins)
            outs = [every] * len(eqn.outvars)
        for v, s in zip(eqn.outvars, outs):
            if s and _floating(v):  # a derivative travels in floating values only
                tainted[v] = s
    return tainted


def _floating(v: Any) -> bool:
    return bool(np.issubdtype(getattr(v.aval, "dtype", np.float64), np.inexact))


_READS_RESIDUAL = (
    "{owner}.{rule} computes with residual {index} (counting from 0 the values forward returns "
    "after the outputs) in JAX code, and it is being differentiated again here (a second "
    "derivative), along arguments the residual is computed from. Residuals are constants to "
    "the derivative rules: the bridge cannot know their derivative, so it would silently be "
    "taken as zero and the result would be wrong. Compute what {rule} needs from the inputs "
    "and outputs in `res` instead (JAX differentiates those), or pass the residual only to a "
    "bridged call whose own rules take the derivative through its inputs and outputs (as "
    "LinearSolve passes its factors, with `a`, to a solve); wrap it in "
    "jax.lax.stop_gradient only where {rule} accounts for its derivative otherwise."
)
