"""The JAX primitives that carry every bridged call, and the only module that uses JAX internals.

Three primitives make the family: ``jaxbridge_forward`` (the host forward), ``jaxbridge_jvp``
(the tangent map J·t, linear in the tangents) and ``jaxbridge_vjp`` (the host backward Jᵀ·g,
linear in the cotangent). Each binding carries an *operation*, a hashable object defined in
``_operations``, that knows the shapes, runs the call and says how to differentiate it; the
rules here only translate between that plain description and JAX's interpreters:

- abstract evaluation: ``operation.specs(avals)``, typed under ``shard_map`` as varying over
  the union of the inputs' varying manual axes (the inputs are cast up to it before binding,
  as JAX's own primitives do);
- evaluation and lowering: ``operation.run(args)``, on concrete arrays (the host is called
  directly) or traced into the lowering (through a host callback);
- JVP: ``operation.jvp(primals, tangents)``, symbolic zeros as ``None``;
- transposition: ``operation.transpose(cts, args)``, undefined (linear) arguments as
  ``Linear`` markers, zero cotangents as ``None``;
- batching: every batch axis moved to the front (size 1 where an argument is not batched)
  and the same operation bound again, so one ``vmap``, nested or not, makes one host call.

Tested on jax 0.10.2 (Python 3.11), 0.12.0.1 and 0.12.1 (Python 3.12), the ends that CI
runs; everything below exists unchanged across that range, so nothing is chosen by version (when
JAX moves, this file changes, feature-detecting what differs, never parsing versions).
JAX internals used (``jax.extend`` has no compatibility promise): ``jax.extend.core.Primitive``;
``jax.interpreters.ad`` (``Zero``, ``UndefinedPrimal``, ``primitive_jvps``,
``primitive_transposes``); ``jax.interpreters.batching.primitive_batchers``;
``jax.interpreters.mlir`` (``lower_fun``, ``register_lowering``); avals' ``mat.varying``,
``update`` and ``to_tangent_aval``. For the buffer callback (``host_buffers``):
``jax._src.ffi.ffi_lowering``, the lowering context's ``module_context.add_host_callback``
and ``host_callbacks``, and XLA's custom-call targets ``xla_buffer_python_cpu_callback`` and
``xla_buffer_python_gpu_callback``: what ``jax.experimental.buffer_callback`` lowers to.
For tracebacks (``api_boundary``):
``jax._src.traceback_util``'s ``api_boundary`` and ``register_exclusion``. For the lifetime of
adapters (``held_weakly``): the set ``weakref_cache_key_types``, in ``jax._src.util`` or
``jax._src.multi_weakref_lru_cache`` (looked for in both; without it, as before).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import ffi, traceback_util
from jax._src import util as jax_util
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from ._wire import in_halves


class Operation(Protocol):
    """What a primitive's ``operation`` parameter provides (see ``_operations``)."""

    primitive: ClassVar[str]

    def specs(self, args: Sequence[Any]) -> tuple[jax.ShapeDtypeStruct, ...]: ...

    def run(self, args: Sequence[jax.Array]) -> Sequence[jax.Array]: ...

    def jvp(
        self, primals: Sequence[jax.Array], tangents: Sequence[jax.Array | None]
    ) -> tuple[Sequence[jax.Array], Sequence[jax.Array | None]]: ...

    def transpose(
        self, cts: Sequence[jax.Array | None], args: Sequence[Any]
    ) -> Sequence[jax.Array | None]: ...


def held_weakly(cls: type) -> type:
    """Class decorator for an operation type: JAX's caches keyed on a primitive's parameters
    hold its instances weakly, as they hold ``pure_callback``'s callback.

    Staging a primitive goes through ``_cached_abstract_eval``, a cache of 2,048 entries
    keyed on the parameters, which holds weakly only callables and the types listed in
    ``weakref_cache_key_types``. Held strongly, an operation kept its adapter (and what
    ``forward`` closes over) alive after the jitted function that traced it was dropped,
    until ``jax.clear_caches()`` or 2,048 later entries. (A type is registered once: a call
    does no more work.)"""
    weak_types = getattr(jax_util, "weakref_cache_key_types", None)
    if weak_types is None:  # (where some JAX versions keep it)
        try:
            module = importlib.import_module("jax._src.multi_weakref_lru_cache")
        except ImportError:
            module = None
        weak_types = getattr(module, "weakref_cache_key_types", None)
    if weak_types is not None:
        weak_types.add(cls)
    return cls


@dataclass(frozen=True)
class Linear:
    """An argument that transposition treats as unknown (linear): only its type is known."""

    shape: tuple[int, ...]
    dtype: Any
    varying: frozenset = frozenset()


def bind(operation: Operation, args: Sequence[Any]) -> list[jax.Array]:
    """Bind ``operation``'s primitive on ``args``; return its results."""
    return _PRIMITIVES[operation.primitive].bind(*_vary_together(args), operation=operation)


def varying(x: Any) -> frozenset:
    """The manual mesh axes (under ``shard_map``) over which ``x`` (or an aval) takes
    different values."""
    aval = x if isinstance(x, ShapedArray) else jax.typeof(x)
    mat = getattr(aval, "mat", None)
    return frozenset(mat.varying) if mat is not None else frozenset()


def vary_like(x: jax.Array, axes: frozenset) -> jax.Array:
    """``x`` cast to vary over ``axes`` too (the transpose of that cast sums over them)."""
    missing = tuple(sorted(axes - varying(x)))
    return jax.lax.pcast(x, missing, to="varying") if missing else x


def _vary_together(args: Sequence[Any]) -> list[Any]:
    axes = frozenset().union(*(varying(a) for a in args))
    return [vary_like(a, axes) for a in args] if axes else list(args)


def _abstract_eval(*avals: Any, operation: Operation) -> list[Any]:
    specs = operation.specs(avals)
    if not avals:
        return [ShapedArray(s.shape, s.dtype) for s in specs]
    reference = avals[0]
    mat = getattr(reference, "mat", None)
    if mat is None:
        return [ShapedArray(s.shape, s.dtype) for s in specs]
    # outputs vary wherever any input does: one host call per shard, typed like native code
    typed = mat.update(varying=frozenset().union(*(a.mat.varying for a in avals)))
    return [
        reference.update(shape=s.shape, dtype=s.dtype, weak_type=False, manual_axis_type=typed)
        for s in specs
    ]


def _run(*args: jax.Array, operation: Operation) -> list[jax.Array]:
    # on concrete arrays (the host is called directly), or traced into the lowering, where
    # a tangent or cotangent map's rules written in JAX are traced: at full precision too
    with _accurate_products():
        return list(operation.run(args))


def _jvp(primals: Sequence[Any], tangents: Sequence[Any], *, operation: Operation):
    given = [
        None if type(t) is ad.Zero or jnp.dtype(t.dtype) == jax.dtypes.float0 else t
        for t in tangents
    ]
    with _accurate_products():
        outs, out_tangents = operation.jvp(primals, given)
    return list(outs), [
        ad.Zero(jax.typeof(o).to_tangent_aval()) if t is None else t
        for o, t in zip(outs, out_tangents)
    ]


def _transpose(cts: Sequence[Any], *args: Any, operation: Operation) -> list[Any]:
    given = [None if type(ct) is ad.Zero else ct for ct in cts]
    known = [
        Linear(tuple(a.aval.shape), a.aval.dtype, varying(a.aval))
        if ad.is_undefined_primal(a)
        else a
        for a in args
    ]
    if all(ct is None for ct in given):
        got: Sequence[Any] = [None] * len(args)
    else:
        with _accurate_products():
            got = operation.transpose(given, known)
    return [
        (ad.Zero(a.aval.to_ct_aval()) if ct is None else ct) if ad.is_undefined_primal(a) else None
        for a, ct in zip(args, got)
    ]


def _accurate_products() -> Any:
    """Full float32 precision for the matrix products that rules written in JAX trace: a
    TPU multiplies float32 at bf16-pass precision by default (about 3 digits), where the
    CPU and the host are exact to rounding. (The CPU ignores the setting.)"""
    return jax.default_matmul_precision("highest")


def _batch(args: Sequence[jax.Array], dims: Sequence[int | None], *, operation: Operation):
    front = [
        jnp.expand_dims(a, 0) if d is None else jnp.moveaxis(a, d, 0) for a, d in zip(args, dims)
    ]
    outs = bind(operation, front)
    # a result with only the batch of unbatched arguments (residuals_from) is not batched:
    # its front axis has size 1 where the others have the vmap's size
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    shared = [size != 1 and o.shape[0] == 1 for o in outs]
    return (
        [o[0] if s else o for o, s in zip(outs, shared)],
        [None if s else 0 for s in shared],
    )


def _make(name: str) -> Primitive:
    primitive = Primitive(name)
    primitive.multiple_results = True
    primitive.def_impl(_run)
    primitive.def_abstract_eval(_abstract_eval)
    ad.primitive_jvps[primitive] = _jvp
    ad.primitive_transposes[primitive] = _transpose
    batching.primitive_batchers[primitive] = _batch
    # not cacheable, as JAX's own pure_callback: a cached lowering is one function called
    # from every equation alike (the same solve twice in a program), and on a TPU each of
    # its host transfers has one channel, which the calls then share and mix
    mlir.register_lowering(primitive, _lowered(halves=False), cacheable=False)
    # on a TPU 64-bit types cross in 32-bit halves: its float64 is a pair of float32s (``_wire``)
    mlir.register_lowering(primitive, _lowered(halves=True), "tpu", cacheable=False)
    return primitive


def _lowered(halves: bool) -> Callable[..., Any]:
    def run(*args: jax.Array, operation: Operation) -> list[jax.Array]:
        with in_halves(halves):
            return _run(*args, operation=operation)

    return mlir.lower_fun(run, multiple_results=True)


_PRIMITIVES = {
    name: _make(name)
    for name in ("jaxbridge_forward", "jaxbridge_jvp", "jaxbridge_vjp", "jaxbridge_check")
}


def host_buffers(
    on_host: Callable[..., object],
    specs: Sequence[jax.ShapeDtypeStruct],
    args: Sequence[jax.Array],
    anywhere: bool = False,
) -> list[jax.Array]:
    """Results of ``specs`` that ``on_host(context, *inputs, *outputs)`` writes into XLA's
    own buffers (DLPack-capable), in one call: CPU buffers, or with ``anywhere`` the
    buffers of the backend it runs on (a GPU's, where ``context.stream`` is XLA's stream).

    This is ``jax.experimental.buffer_callback`` without its Python wrapper, which unflattens
    two pytrees on every call: XLA calls ``on_host`` itself, through the same custom call.
    """
    return _HOST.bind(*args, on_host=on_host, specs=tuple(specs), anywhere=anywhere)


def _host_abstract_eval(
    *_avals: Any, on_host: Any, specs: Any, anywhere: bool
) -> list[ShapedArray]:
    return [ShapedArray(s.shape, s.dtype) for s in specs]


def _buffers_lowering(target: str) -> Callable[..., Any]:
    def lowering(ctx: Any, *args: Any, on_host: Any, specs: Any, anywhere: bool) -> Any:
        if target != _CPU_TARGET and not anywhere:
            _host_elsewhere(ctx)
        ctx.module_context.add_host_callback(on_host)
        index = np.uint64(len(ctx.module_context.host_callbacks) - 1)
        return ffi.ffi_lowering(target)(ctx, *args, index=index)

    return lowering


def _host_elsewhere(ctx: Any, *_args: Any, **_params: Any) -> Any:
    raise NotImplementedError(
        "jaxbridge's buffer_callback transport runs on the CPU only; on "
        f"{', '.join(ctx.module_context.platforms)} use jaxbridge.set_transport('pure_callback') "
        "(or 'auto', which chooses it there)."
    )


_CPU_TARGET = "xla_buffer_python_cpu_callback"
_HOST = Primitive("jaxbridge_host")
_HOST.multiple_results = True
_HOST.def_abstract_eval(_host_abstract_eval)
mlir.register_lowering(_HOST, _host_elsewhere)
mlir.register_lowering(_HOST, _buffers_lowering(_CPU_TARGET), platform="cpu")
for _platform in ("cuda", "rocm"):  # (one target for both)
    mlir.register_lowering(
        _HOST, _buffers_lowering("xla_buffer_python_gpu_callback"), platform=_platform
    )


# An error's traceback starts where the user called: JAX's filter (JAX_TRACEBACK_FILTERING)
# removes jaxbridge's own frames along with JAX's, from the exceptions that leave an API
# boundary (an adapter call, and JAX's transformations).
traceback_util.register_exclusion(str(Path(__file__).parent))
api_boundary = traceback_util.api_boundary
