"""How one adapter call is wired into JAX: host callbacks inside a ``jax.custom_vjp``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from ._host import run_batched
from ._plan import Plan, arg_names, make_plan
from ._transport import host_call

if TYPE_CHECKING:
    from ._adapter import Adapter


def call(adapter: Adapter, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``adapter(*args, **kwargs)``: validate at trace time, then run on the host."""
    names = arg_names(type(adapter))
    arrays = _bind(adapter, names, args, kwargs)
    plan = make_plan(adapter, names, arrays)
    padded = [jnp.reshape(a, shape) for a, shape in zip(arrays, plan.padded)]
    outputs = _differentiable(adapter, plan)(*padded)
    return outputs[0] if len(outputs) == 1 else outputs


def host_pullback(adapter: Adapter, res: tuple[jax.Array, ...], g: Any) -> tuple[Any, ...]:
    """The default ``Adapter.pullback``: ``adapter.backward`` in one host callback."""
    names = arg_names(type(adapter))
    inputs = res[: len(names)]
    plan = make_plan(adapter, names, inputs)
    cotangents = tuple(g) if isinstance(g, (tuple, list)) else (g,)
    wanted = [i for i, a in enumerate(plan.args) if _differentiable_dtype(a.dtype)]
    n_res = len(res)
    ranks = [len(s.shape) for s in (*plan.args, *plan.outputs, *plan.residuals, *plan.outputs)]

    def compute(values: Sequence[np.ndarray]) -> list[object]:
        g_host = list(values[n_res:])
        got = adapter.backward(
            tuple(values[:n_res]), tuple(g_host) if len(g_host) > 1 else g_host[0]
        )
        if not isinstance(got, (tuple, list)) or len(got) != len(names):
            raise TypeError(
                f"{plan.owner}.backward must return a tuple of {len(names)} cotangents (one "
                f"per input, None for zero), got {_describe(got)}."
            )
        return [
            np.zeros(values[i].shape[values[i].ndim - ranks[i] :], plan.args[i].dtype)
            if got[i] is None
            else got[i]
            for i in wanted
        ]

    on_host = _on_host(adapter, "backward", compute, ranks, [plan.args[i] for i in wanted])

    specs = plan.batched([plan.args[i] for i in wanted])
    computed = iter(host_call(on_host, specs, (*res, *cotangents), plan.owner, "backward"))
    return tuple(next(computed) if i in wanted else None for i in range(len(names)))


def _differentiable(adapter: Adapter, plan: Plan) -> Any:
    n_out = len(plan.outputs)
    ranks = [len(s.shape) for s in plan.args]

    def forward(args: Sequence[jax.Array], residuals: tuple) -> tuple[jax.Array, ...]:
        declared = (*plan.outputs, *residuals)

        def compute(values: Sequence[np.ndarray]) -> list[object]:
            got = adapter.forward(*values)
            items = list(got) if isinstance(got, (tuple, list)) else [got]
            # residuals the primal call does not need are dropped here, on the host
            return items[: len(declared)] if len(items) == n_out + len(plan.residuals) else items

        on_host = _on_host(adapter, "forward", compute, ranks, declared)

        return host_call(on_host, plan.batched(declared), args, plan.owner, "forward")

    def backward(res: tuple, g: tuple) -> tuple[Any, ...]:
        # integer outputs' cotangents arrive as float0, which no host routine can read
        g = tuple(
            jnp.zeros(ct.shape, out.dtype) if ct.dtype == jax.dtypes.float0 else ct
            for ct, out in zip(g[:n_out], res[len(plan.args) :])
        )
        got = adapter.pullback(res, g[0] if n_out == 1 else g)
        if not isinstance(got, (tuple, list)) or len(got) != len(plan.args):
            raise TypeError(
                f"{plan.owner}.pullback must return a tuple of {len(plan.args)} cotangents "
                f"(one per input, None for zero), got {_describe(got)}."
            )
        return tuple(
            _cotangent(plan, name, ct, arg, shape)
            for name, ct, arg, shape in zip(plan.names, got, res, plan.padded)
        )

    # Outputs and residuals together, differentiable in turn (residuals count as constants),
    # so that a differentiable pullback gives derivatives of any order. Its forward rule
    # calls it again: each order of differentiation peels off one level.
    with_residuals = jax.custom_vjp(lambda *args: forward(args, plan.residuals))

    def saving(*args: jax.Array) -> tuple[tuple[jax.Array, ...], tuple]:
        results = with_residuals(*args)
        return results, (*args, *results)

    with_residuals.defvjp(saving, backward)

    def bridged_fwd(*args: jax.Array) -> tuple[tuple[jax.Array, ...], tuple]:
        results, res = saving(*args)
        return results[:n_out], res

    # The primal call alone skips the residuals: nothing extra crosses from the host.
    bridged = jax.custom_vjp(lambda *args: forward(args, ()))
    bridged.defvjp(bridged_fwd, backward)
    return bridged


def _on_host(
    adapter: Adapter,
    method: str,
    compute: Callable[[Sequence[np.ndarray]], Sequence[object]],
    ranks: Sequence[int],
    results: Sequence[jax.ShapeDtypeStruct],
) -> Callable[[list[np.ndarray]], tuple[np.ndarray, ...]]:
    """The host function of one callback: ``compute`` run over the batch, results checked."""
    cls = type(adapter)
    cores = [(s.shape, np.dtype(s.dtype)) for s in results]
    return functools.partial(
        run_batched, cls.__name__, method, compute, ranks, cores, cls.vectorized, cls.threads
    )


def _cotangent(plan: Plan, name: str, ct: Any, arg: jax.Array, shape: tuple[int, ...]) -> Any:
    """Shape a cotangent like its argument: sum over axes the argument was broadcast along."""
    if not _differentiable_dtype(arg.dtype):
        return None
    if ct is None:
        return jnp.zeros(shape, arg.dtype)
    ct = jnp.asarray(ct)
    lead = ct.ndim - len(shape)
    if lead < 0 or any(s != 1 and s != c for s, c in zip(shape, ct.shape[lead:])):
        raise ValueError(
            f"{plan.owner}: the cotangent of argument '{name}' has shape {ct.shape}, which "
            f"does not reduce to the argument's shape {shape}."
        )
    axes = tuple(range(lead)) + tuple(
        lead + i for i, (s, c) in enumerate(zip(shape, ct.shape[lead:])) if s == 1 and c != 1
    )
    return jnp.sum(ct, axis=axes).reshape(shape).astype(arg.dtype) if axes else ct.astype(arg.dtype)


def _differentiable_dtype(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.inexact))


def _bind(adapter: Adapter, names: tuple[str, ...], args: tuple, kwargs: dict) -> list[jax.Array]:
    """Match arguments to ``forward``'s parameters by position or name, as JAX arrays."""
    owner = type(adapter).__name__
    parameters = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    try:
        bound = inspect.Signature(parameters).bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(
            f"{owner} takes {len(names)} array arguments ({', '.join(names)}) for signature "
            f"{adapter.signature!r}: {error}."
        ) from None
    arrays = []
    for name in names:
        value = bound.arguments[name]
        try:
            arrays.append(jnp.asarray(value))
        except TypeError as error:
            raise TypeError(
                f"{owner}: argument '{name}' must be an array, got {type(value).__name__} "
                f"({error})."
            ) from None
    return arrays


def _describe(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__
