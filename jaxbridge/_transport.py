"""The one seam between jaxbridge and JAX's callback machinery: every bridged call goes
through ``host_call``, which hands the call's arrays to its host function by one transport
and one array hand-off (``_arrays``).

Calls on concrete arrays run the host function directly: fastest, and the host's own
exception reaches the caller unchanged in type. Traced calls (under ``jit``, ``vmap``,
``grad``, ``scan``...) go through one of two transports:

- ``"buffer_callback"``: XLA hands the host zero-copy NumPy views of its CPU buffers and the
  results are written in place: the custom call of ``jax.experimental.buffer_callback``,
  bound directly (``_primitives.host_buffers``). CPU only.
- ``"pure_callback"``: ``jax.pure_callback``, portable (CPU, GPU, TPU) but it copies every
  argument with ``device_put`` on each call.

``"auto"`` (the default) takes ``buffer_callback`` when the default backend is the CPU.
Choose with ``jaxbridge.set_transport`` or the environment variable ``JAXBRIDGE_TRANSPORT``;
the choice is read when a call is traced, so jitted functions keep the transport they were
traced with.

An adapter on another library's arrays (``arrays = "torch"`` or ``"cupy"``) takes neither
choice: its calls get XLA's own buffers, on the CPU or the GPU, and run on XLA's stream
(``_through_handoff``); its eager calls hand over JAX's arrays through DLPack.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from ._arrays import HANDOFFS, NUMPY, Handoff
from ._batches import write_back
from ._host import HostFunction
from ._host_errors import raised_at, remember
from ._primitives import host_buffers
from ._wire import Wire

TRANSPORTS = ("auto", "buffer_callback", "pure_callback")

_transport = "auto"
_log = logging.getLogger("jaxbridge")


def set_transport(name: str) -> None:
    """Choose how traced calls reach the host: ``"auto"``, ``"buffer_callback"`` or
    ``"pure_callback"`` (see the module docstring). Affects calls traced from now on."""
    global _transport
    if name not in TRANSPORTS:
        raise ValueError(f"jaxbridge transport must be one of {TRANSPORTS}, got {name!r}.")
    if name == "buffer_callback" and _buffer_callback() is None:
        raise ValueError("the buffer_callback transport needs jax.experimental.buffer_callback.")
    _transport = name


def transport() -> str:
    """The transport that a call traced now would use."""
    if _transport == "pure_callback" or _buffer_callback() is None:
        return "pure_callback"
    if _transport == "buffer_callback" or jax.default_backend() == "cpu":
        return "buffer_callback"
    return "pure_callback"


def host_call(
    function: HostFunction,
    result_specs: Sequence[jax.ShapeDtypeStruct],
    args: Sequence[jax.Array],
    arrays: str = "numpy",
    name: str = "a host call",
) -> tuple[jax.Array, ...]:
    """Call ``function`` on views of ``args`` as arrays of the library ``arrays`` (and,
    where the transport has them, of the result buffers); return arrays of
    ``result_specs``. ``name`` (``"Adapter.forward"``) names the call in the transport's
    own refusals.

    The host sees every batch axis at the front of every argument (size 1 where an argument
    is broadcast) and makes one call for the whole batch.
    """
    traced = any(isinstance(a, Tracer) for a in args)
    if arrays != "numpy":
        handoff = HANDOFFS[arrays]
        handoff.library()  # (an ImportError naming it now, not from inside XLA's callback)
        if traced:
            return _through_handoff(function, result_specs, args, handoff)
        return _eager_handoff(function, result_specs, args, handoff)
    if not traced:
        return tuple(jnp.asarray(r) for r in function([np.asarray(a) for a in args], None))
    if transport() == "buffer_callback" and _dlpack_carries((*args, *result_specs)):
        return _through_buffers(function, result_specs, args)
    return _through_pure_callback(function, result_specs, args, name)


def gives_buffers(args: Sequence[jax.Array], arrays: str = "numpy") -> bool:
    """Whether a host call on ``args`` gets XLA's result buffers to write into: a traced
    call through buffer_callback, which every library but NumPy takes."""
    if not any(isinstance(a, Tracer) for a in args):
        return arrays != "numpy"
    return arrays != "numpy" or (transport() == "buffer_callback" and _dlpack_carries(args))


def _dlpack_carries(arrays: Sequence[Any]) -> bool:
    """Whether DLPack can hand the host every array: NumPy's own dtypes, not the extension
    types of ml_dtypes (bfloat16, float8, int4), which take pure_callback instead. (Not by
    kind: NumPy calls float8_e5m2 a kind "f".)"""
    return all(np.dtype(a.dtype).isbuiltin == 1 for a in arrays)


def _through_pure_callback(
    function: HostFunction,
    specs: Sequence[jax.ShapeDtypeStruct],
    args: Sequence[jax.Array],
    name: str,
) -> tuple[jax.Array, ...]:
    # one vector per type each way (``_wire``): on a TPU, arrays as themselves arrived in
    # each other's places or transposed, and its float64 crosses exactly as two float32s
    sent, received = Wire.of(args), Wire.of(specs)
    traced_x64 = x64_mode()
    wide = any(carrier.itemsize == 8 for carrier, _ in received.lanes)

    def on_host(*vectors: np.ndarray) -> tuple[np.ndarray, ...]:
        try:
            if wide and traced_x64 and not x64_mode():
                raise TypeError(_X64_ON_ANOTHER_THREAD)
            lead = np.shape(vectors[0])[:-1]
            return received.write(function(sent.read(vectors), None), lead, name)
        except Exception as error:
            _report(error)
            raise

    vectors = jax.pure_callback(
        on_host, received.specs(), *sent.pack(args), vmap_method="expand_dims"
    )
    return received.unpack(vectors)


def _through_buffers(
    function: HostFunction, specs: Sequence[jax.ShapeDtypeStruct], args: Sequence[jax.Array]
) -> tuple[jax.Array, ...]:
    inputs = len(args)

    # XLA's own buffers, inputs then outputs, as NumPy's hand-off makes them: the inputs
    # read-only, the outputs writeable. A result computed in its output buffer is not copied.
    def on_host(_context: object, *buffers: Any) -> tuple[()]:
        outs = NUMPY.outputs(buffers[inputs:])
        try:
            results = function(NUMPY.inputs(buffers[:inputs]), outs)
        except Exception as error:
            _report(error)
            raise
        write_back(outs, results)
        return ()

    def on_host_one(_context: object, *buffers: Any) -> tuple[()]:
        # one result, the common case, spelled out: the loop above costs a microsecond
        out = buffers[-1].__array__()
        try:
            (result,) = function([np.from_dlpack(b) for b in buffers[:-1]], [out])
        except Exception as error:
            _report(error)
            raise
        if result is not out:
            out[...] = result
        return ()

    return tuple(host_buffers(on_host_one if len(specs) == 1 else on_host, specs, args))


def _through_handoff(
    function: HostFunction,
    specs: Sequence[jax.ShapeDtypeStruct],
    args: Sequence[jax.Array],
    handoff: Handoff,
) -> tuple[jax.Array, ...]:
    inputs = len(args)

    def on_device(context: Any, *buffers: Any) -> tuple[()]:
        try:
            with handoff.on(context, buffers):
                outs = handoff.outputs(buffers[inputs:])
                results = function(handoff.inputs(buffers[:inputs]), outs)
                for out, result in zip(outs, results):
                    handoff.write(out, result)
        except Exception as error:
            _report(error)
            raise
        return ()

    return tuple(host_buffers(on_device, specs, args, anywhere=True))


def _eager_handoff(
    function: HostFunction,
    specs: Sequence[jax.ShapeDtypeStruct],
    args: Sequence[jax.Array],
    handoff: Handoff,
) -> tuple[jax.Array, ...]:
    """An eager call: JAX's arrays handed over through DLPack (no copy), results written
    into new arrays of the library on the arguments' device, handed back the same way."""
    values = [handoff.from_jax(jnp.asarray(a)) for a in args]
    like = values[0] if values else None
    outs = [handoff.empty(tuple(s.shape), np.dtype(s.dtype), like) for s in specs]
    for out, result in zip(outs, function(values, outs)):
        handoff.write(out, result)
    return tuple(handoff.to_jax(out) for out in outs)


def x64_mode() -> bool:
    """Whether 64-bit mode is on in this thread (a `jax.enable_x64` context is per thread)."""
    return jax.dtypes.canonicalize_dtype(np.float64) == np.float64


def _report(error: Exception) -> None:
    """Log a host error in one line as it happens, ending with the line of the user's code
    that raised it (``raised_at``): JAX re-raises it as a JaxRuntimeError whose message puts
    the original error last, after a long traceback. Kept for ``host_errors`` too (the
    bridge's own refusals of a result, say), which then raises it as itself: not logged,
    as an error the caller catches should not also reach stderr."""
    if remember(error):
        return
    where = raised_at(error)
    _log.error(
        "%s: %s%s", type(error).__name__, error, "" if where is None else f" (raised at {where})"
    )


def _buffer_callback() -> Callable[..., Callable[..., Sequence[jax.Array]]] | None:
    try:
        from jax.experimental.buffer_callback import buffer_callback
    except ImportError:  # older JAX: pure_callback only
        return None
    return buffer_callback


# JAX casts a pure_callback's results to the 64-bit mode of the thread that runs it, which
# for XLA's own worker threads is the global setting, not a `jax.enable_x64` context's.
_X64_ON_ANOTHER_THREAD = (
    "jaxbridge: this call was traced with 64-bit mode on (a `jax.enable_x64` context), but "
    "XLA runs its pure_callback on a thread where the context does not hold, and JAX would "
    "reject the 64-bit results. Turn 64-bit mode on globally, "
    "jax.config.update('jax_enable_x64', True), or use the buffer_callback transport (CPU)."
)

_environment = os.environ.get("JAXBRIDGE_TRANSPORT")
if _environment:
    set_transport(_environment)
