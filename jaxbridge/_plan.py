"""The shape of one adapter call, worked out once per trace from the argument shapes."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._caches import per_object
from ._protocol import AdapterLike
from ._signature import bind_dims, parse
from ._transport import x64_mode


@dataclass(frozen=True)
class Plan:
    """Everything a call needs to know about its arguments and results.

    ``loop`` is the broadcast of the arguments' leading (non-core) axes. Each argument is
    reshaped to ``padded`` (its loop axes padded with 1s to the same rank) so that the host
    can broadcast them like a gufunc. ``args``, ``outputs`` and ``residuals`` hold core
    shapes and dtypes. Residuals have the loop of the arguments they are computed from
    (``sources``, indices into ``args``): ``residual_loop``.
    """

    owner: str
    names: tuple[str, ...]
    loop: tuple[int, ...]
    padded: tuple[tuple[int, ...], ...]
    args: tuple[jax.ShapeDtypeStruct, ...]
    outputs: tuple[jax.ShapeDtypeStruct, ...]
    residuals: tuple[jax.ShapeDtypeStruct, ...]
    sources: tuple[int, ...]
    residual_loop: tuple[int, ...]

    @property
    def ranks(self) -> list[int]:
        """The core ranks of the arguments."""
        return [len(s.shape) for s in self.args]

    def batched(self, specs: Sequence[jax.ShapeDtypeStruct]) -> tuple[jax.ShapeDtypeStruct, ...]:
        """``specs`` with the loop axes in front."""
        return tuple(jax.ShapeDtypeStruct(self.loop + s.shape, s.dtype) for s in specs)

    def results(self, residuals: bool) -> tuple[jax.ShapeDtypeStruct, ...]:
        """The forward's results with their loop axes: outputs, then residuals if asked."""
        saved = tuple(
            jax.ShapeDtypeStruct(self.residual_loop + s.shape, s.dtype) for s in self.residuals
        )
        return self.batched(self.outputs) + (saved if residuals else ())


def make_plan(adapter: AdapterLike, names: tuple[str, ...], args: Sequence[Any]) -> Plan:
    """Check ``args`` (arrays or anything with ``shape`` and ``dtype``) against the
    adapter's signature and work out the shapes of the call."""
    owner = type(adapter).__name__
    signature = parse(adapter.signature)
    shapes = tuple(tuple(a.shape) for a in args)
    for name, arg in zip(names, args):
        if np.issubdtype(arg.dtype, np.complexfloating):
            raise TypeError(
                f"{owner}: argument '{name}' is complex ({arg.dtype}); jaxbridge supports real "
                "and integer arguments only. Pass the real and imaginary parts separately."
            )
    bind_dims(owner, names, signature.inputs, shapes)  # raises on shapes that contradict it
    ranks = [len(core) for core in signature.inputs]
    loops = [shape[: len(shape) - r] for shape, r in zip(shapes, ranks)]
    try:
        loop = np.broadcast_shapes(*loops)
    except ValueError:
        described = ", ".join(f"'{n}': {s}" for n, s in zip(names, loops))
        raise ValueError(
            f"{owner}: the leading (batch) axes of the arguments do not broadcast together "
            f"({described}); signature {signature.text!r} says which axes are core."
        ) from None
    padded = tuple((1,) * (len(loop) - len(lp)) + shape for lp, shape in zip(loops, shapes))
    core_args = tuple(
        jax.ShapeDtypeStruct(shape[len(shape) - r :], arg.dtype)
        for shape, r, arg in zip(shapes, ranks, args)
    )
    outputs = _declared(owner, "output_specs", adapter.output_specs(*core_args))
    if len(outputs) != len(signature.outputs):
        raise TypeError(
            f"{owner}: output_specs gave {len(outputs)} specs, but signature "
            f"{signature.text!r} has {len(signature.outputs)} outputs."
        )
    residuals = _declared(owner, "residual_specs", adapter.residual_specs(*core_args))
    sources = _sources(adapter, owner, names)
    residual_loop = np.broadcast_shapes(*(padded[i][: len(loop)] for i in sources))
    return Plan(owner, names, loop, padded, core_args, outputs, residuals, sources, residual_loop)


def _sources(adapter: AdapterLike, owner: str, names: tuple[str, ...]) -> tuple[int, ...]:
    """The indices of the arguments named by ``adapter.residuals_from`` (all by default)."""
    if adapter.residuals_from is None:
        return tuple(range(len(names)))
    unknown = [n for n in adapter.residuals_from if n not in names]
    if unknown or not adapter.residuals_from:
        raise TypeError(
            f"{owner}.residuals_from must name some of the arguments {names}; got "
            f"{tuple(adapter.residuals_from)!r}."
        )
    return tuple(i for i, n in enumerate(names) if n in adapter.residuals_from)


def _declared(owner: str, method: str, specs: object) -> tuple[jax.ShapeDtypeStruct, ...]:
    """Normalise what an adapter declared: a tuple of specs with JAX's canonical dtypes."""
    items = specs if isinstance(specs, (tuple, list)) else (specs,)
    out = []
    for spec in items:
        if not isinstance(spec, jax.ShapeDtypeStruct):
            raise TypeError(
                f"{owner}.{method} must return jax.ShapeDtypeStruct objects, got {spec!r}."
            )
        dtype = jax.dtypes.canonicalize_dtype(spec.dtype)
        out.append(jax.ShapeDtypeStruct(tuple(spec.shape), dtype))
    return tuple(out)


@per_object
def arg_names(cls: type) -> tuple[str, ...]:
    """The names of ``cls.forward``'s arguments, checked against its signature."""
    owner = cls.__name__
    if not hasattr(cls, "signature"):
        raise TypeError(f"{owner} must set `signature`, e.g. signature = '(n,n),(n)->(n)'.")
    count = len(parse(cls.signature).inputs)
    params = list(inspect.signature(cls.forward).parameters.values())[1:]
    keywords = [p for p in params if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD)]
    allowed = {"out": None, "residuals": True}
    if any(
        p.kind is p.VAR_KEYWORD or p.name not in allowed or p.default is not allowed[p.name]
        for p in keywords
    ):
        raise TypeError(
            f"{owner}.forward may take the keyword-only parameters `out=None` (the arrays to "
            f"write results into, where the bridge has them) and `residuals=True` (whether "
            f"the residuals will be used); got {', '.join(str(p) for p in keywords)}. Static "
            "parameters are annotated class attributes."
        )
    params = [p for p in params if p.kind is not p.KEYWORD_ONLY]
    declared = getattr(cls, "argument_names", None)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        names = tuple(f"x{i}" for i in range(count)) if declared is None else tuple(declared)
    elif declared is not None:
        raise TypeError(
            f"{owner} declares `argument_names`, which names the arguments of a forward that "
            f"takes them as *args; its forward names them itself."
        )
    else:
        names = tuple(p.name for p in params)
    if len(names) != count:
        raise TypeError(
            f"{owner}.forward takes {len(names)} arguments {names}, but signature "
            f"{cls.signature!r} has {count} inputs."
        )
    return names


def writes_out(cls: type) -> bool:
    """Whether ``cls.forward`` takes the keyword-only ``out=None``: the arrays to write its
    results into, XLA's own buffers where the transport has them."""
    return _takes_out(cls.forward)  # (per function: a forward replaced later is read anew)


def told_residuals(cls: type) -> bool:
    """Whether ``cls.forward`` takes the keyword-only ``residuals=True``: told False in a
    call whose residuals no rule will read, it may return its outputs alone."""
    return _takes_keyword(cls.forward, "residuals")


def _takes_out(forward: Callable[..., Any]) -> bool:
    return _takes_keyword(forward, "out")


@per_object
def _keywords(forward: Callable[..., Any]) -> frozenset[str]:
    parameters = inspect.signature(forward).parameters.values()
    return frozenset(p.name for p in parameters if p.kind is p.KEYWORD_ONLY)


def _takes_keyword(forward: Callable[..., Any], name: str) -> bool:
    return name in _keywords(forward)


def plan_of(adapter: AdapterLike, args: Sequence[Any]) -> Plan:
    """The plan of a call on ``args`` (avals, arrays or ``Linear`` markers), cached."""
    # (the 64-bit mode is part of the key: declared dtypes are canonicalized in it)
    key = (tuple((tuple(a.shape), np.dtype(a.dtype)) for a in args), x64_mode())
    plans = _plans(adapter)
    try:
        return plans[key]
    except KeyError:
        specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in key[0]]
        plan = plans[key] = make_plan(adapter, arg_names(type(adapter)), specs)
        return plan


@per_object
def _plans(adapter: AdapterLike) -> dict[tuple, Plan]:
    """The plans of ``adapter``'s calls, by argument shapes and dtypes: kept while the
    adapter is (a large parameter, as ``SparseSolve``'s pattern, goes with it)."""
    return {}


def floating(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.inexact))


def fully_linear(adapter: AdapterLike, plan: Plan) -> bool:
    """Whether ``forward`` is linear in all its floating arguments together: then its
    derivative rules do not depend on where they are taken, and differentiate to zero."""
    names = {n for n, a in zip(plan.names, plan.args) if floating(a.dtype)}
    return bool(adapter.linear_in) and set(adapter.linear_in) >= names


def linear_in_all(adapter: AdapterLike, args: Sequence[Any]) -> bool:
    """``fully_linear`` for a call on ``args`` (arrays, or their shapes and dtypes)."""
    return fully_linear(adapter, plan_of(adapter, args))


def default_rule(method: Callable[..., Any]) -> Callable[..., Any]:
    """Marks one of ``Adapter``'s default methods, so that ``overrides`` tells a subclass's
    own from it without importing ``Adapter`` (whose module imports this one)."""
    method.adapter_default = True  # type: ignore[attr-defined]
    return method


def host_routed(method: Callable[..., Any]) -> Callable[..., Any]:
    """Marks an override of ``pullback`` (or ``pushforward``) that only chooses what to ask
    the host rule and calls ``Adapter``'s default for it: it counts as the default (the
    host rule's checks ran, and it is first order), not as a rule written in JAX."""
    return default_rule(method)


def overrides(adapter: AdapterLike, method: str) -> bool:
    """Whether ``adapter``'s class defines ``method`` instead of inheriting the default."""
    return not getattr(getattr(type(adapter), method), "adapter_default", False)
