"""The default derivative rules, which run an adapter's host methods: ``host_pullback``
(``backward`` in one callback) beside its forward-mode twin ``host_pushforward`` (``jvp``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from .._plan import arg_names, floating, fully_linear, overrides, plan_of
from .._primitives import bind
from .._protocol import AdapterLike
from ._backward import Backward
from ._forward import Forward
from ._tangent import host_tangents


def host_pullback(adapter: AdapterLike, res: tuple[jax.Array, ...], g: Any) -> tuple[Any, ...]:
    """The default ``Adapter.pullback``: ``adapter.backward`` in one host callback."""
    cotangents = tuple(g) if isinstance(g, (tuple, list)) else (g,)
    computed = iter(bind(Backward(adapter), (*res, *cotangents)))
    plan = plan_of(adapter, res[: len(arg_names(type(adapter)))])
    return tuple(next(computed) if floating(a.dtype) else None for a in plan.args)


def host_pushforward(adapter: AdapterLike, res: tuple[jax.Array, ...], tangents: tuple) -> Any:
    """The default ``Adapter.pushforward``: ``adapter.jvp`` in one host callback, or for an
    adapter linear in all its arguments, the forward applied to the tangents."""
    names = arg_names(type(adapter))
    plan = plan_of(adapter, res[: len(names)])
    if not overrides(adapter, "jvp"):
        if fully_linear(adapter, plan):
            # integer arguments are held fixed: they keep their values
            filled = [
                t if t is not None else jnp.zeros(a.shape, a.dtype) if floating(a.dtype) else a
                for a, t in zip(res, tangents)
            ]
            outs = bind(Forward(adapter), filled)
            return outs[0] if len(outs) == 1 else tuple(outs)
        raise TypeError(
            f"{plan.owner} has no forward-mode rule, so jvp, jacfwd, hessian and linearize "
            f"cannot go through it (reverse mode, grad and jacrev, works). Define `jvp(self, "
            f"res, tangents)` on the host, or `pushforward(self, res, tangents)` in JAX."
        )
    return host_tangents(adapter, plan, res, tangents)
