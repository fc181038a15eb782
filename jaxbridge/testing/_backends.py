"""``check_backends``: an adapter's values and derivatives on an accelerator against the CPU
backend of the same process.

The host part of a bridged call is the same code on the same numbers whichever backend runs
the program; what differs is everything that runs as JAX code on the device: the rules
written in JAX, the bridge's own glue, the batching. On a TPU that code meets float32
products at bf16 precision, emulated float64 and missing float64 decompositions, and a
difference there is a silently wrong derivative. So the same inputs go through one jitted
program on each backend, holding the value, the vjp, the jvp, ``vmap`` of each over a batch
of two, and second derivatives where the rules define them (one composition through the
pullback, one through the pushforward; see ``_hessian``), and the results must agree:

- float64 (64-bit mode on): to ``rtol`` (1e-10) relative to each result's largest entry;
- float32: within ``factor`` (4) times the CPU's own float32 error against a float64
  reference (the same program on the CPU in float64, on the same inputs), with a floor of
  a few float32 ulps of the result's size.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np

from jaxbridge import Adapter

from ._checks import (
    FORWARD_OVER_FORWARD,
    FORWARD_OVER_REVERSE,
    REVERSE_OVER_FORWARD,
    REVERSE_OVER_REVERSE,
)
from ._hessian import _second_derivatives
from ._subject import Subject
from ._transforms import _called, _pullback, floating, in_some

_ULPS = 8  # the float32 floor, in ulps of a result's largest entry


def accelerator() -> Any:
    """The first device of JAX's default backend when that is not the CPU, else None."""
    device = jax.devices()[0]
    return None if device.platform == "cpu" else device


def check_backends(
    adapter: Adapter,
    *args: Any,
    device: Any = None,
    seed: int = 0,
    rtol: float = 1e-10,
    factor: float = 4.0,
    second_order: bool = True,
) -> None:
    """Check that ``adapter`` gives the same values and derivatives on ``device`` (default:
    the accelerator JAX found) as on the CPU backend; raise ``AssertionError`` where not.

    One jitted program per backend holds the value, the vjp of a random cotangent and the
    jvp along a random tangent (where the adapter has those rules), ``vmap`` of each over
    a batch of two, and second derivatives (as the "hessian" check of ``check_adapter``: the
    first composition of modes through the pullback, and the first through the pushforward,
    that the adapter offers). float64 arguments (check under 64-bit mode) must
    agree to ``rtol`` of each result's largest entry; float32 ones to ``factor`` times the
    CPU's own error against the same program in float64 on the CPU (a few ulps at least).
    ``second_order=False`` leaves the second derivatives out (each composition compiles a
    program of its own: on a TPU, most of the check's time).

    Raises:
        AssertionError: a result differs; the message names it, the backend, where and by
            how much.
        ValueError: there is no accelerator to compare with.
    """
    device = device or accelerator()
    if device is None:
        raise ValueError(
            "check_backends compares an accelerator with the CPU backend, but JAX's default "
            f"backend is {jax.default_backend()!r}: pass device= or run where one is present."
        )
    subject = Subject.make(adapter, args, checks=("grad", "jvp", "hessian"), batch=2, seed=seed)
    inputs = _inputs(subject)
    wrt, modes = tuple(subject.wrt), _modes(subject)
    compositions = (
        _second_orders(subject, lambda c: _traces(adapter, wrt, modes, c, inputs))
        if second_order
        else ()
    )
    program = functools.partial(_program, adapter, wrt, modes, compositions)
    cpu = jax.devices("cpu")[0]
    on_cpu = _run(program, inputs, cpu)
    on_device = _run(program, inputs, device)
    where = f"on {device.platform} ({device.device_kind})"
    if subject.dtype == np.float64:
        for name in on_cpu:
            _agree64(subject, name, where, on_device[name], on_cpu[name], rtol)
        return
    with jax.enable_x64(True), _buffers():  # (pure_callback's threads ignore the context)
        reference = _run(program, _widened(inputs), cpu)
    for name in on_cpu:
        _agree32(subject, name, where, on_device[name], on_cpu[name], reference[name], factor)


def _second_orders(s: Subject, traces: Any) -> tuple[str, ...]:
    """At most two compositions, each of the program's compile time on a TPU: one that
    differentiates the pullback (forward or reverse over reverse) and one the pushforward
    (forward or reverse over forward), the first of each that the adapter does not refuse."""
    if not s.floating_outputs:  # (integer results alone, counts say: nothing to differentiate)
        return ()
    pullback = (FORWARD_OVER_REVERSE, REVERSE_OVER_REVERSE)
    pushforward = (FORWARD_OVER_FORWARD, REVERSE_OVER_FORWARD)
    chosen = []
    for group in (pullback, pushforward):
        found = [c for c in group if c in s.second_orders and traces(c)]
        chosen += found[:1]
    return tuple(chosen)


def _traces(adapter: Adapter, wrt: tuple, modes: tuple, composition: str, inputs: dict) -> bool:
    """Whether a composition of modes lowers: an adapter may refuse one by name when the
    program is built (a solver's forward over forward, say), as it should."""
    try:
        jax.jit(functools.partial(_program, adapter, wrt, modes, (composition,))).lower(inputs)
    except TypeError:
        return False
    return True


def _modes(s: Subject) -> tuple[str, ...]:
    has = ("vjp",) if s.with_grad else ()
    return has + (("jvp",) if s.forward_rule and "jvp" in s.checks else ())


def _inputs(s: Subject) -> dict[str, Any]:
    rng = s.generator("backends")
    stacked_cts = tuple(
        rng.standard_normal((2, *s.outputs[o].shape)).astype(s.outputs[o].dtype)
        for o in s.floating_outputs
    )
    return {
        "args": s.first,
        "stacked": s.stacked,
        "cts": s.probe_cts,
        "stacked_cts": stacked_cts,
        "tangents": tuple(t[0] for t in s.tangents),
        "stacked_tangents": s.tangents,
        "v": tuple(d[0] for d in s.directions("hessian", 1)),
    }


def _widened(inputs: dict[str, Any]) -> dict[str, Any]:
    def wide(x: np.ndarray) -> np.ndarray:
        return x.astype(np.float64) if floating(x.dtype) else x

    return jax.tree.map(wide, inputs)


def _run(program: Any, inputs: dict[str, Any], device: Any) -> dict[str, list[np.ndarray]]:
    placed = jax.device_put(inputs, device)
    got = jax.jit(program)(placed)
    return {name: [np.asarray(leaf) for leaf in jax.tree.leaves(v)] for name, v in got.items()}


def _program(
    adapter: Adapter,
    wrt: tuple[int, ...],
    modes: tuple[str, ...],
    compositions: tuple[str, ...],
    inputs: dict[str, Any],
) -> dict[str, Any]:
    call = _called(adapter)
    args, stacked = inputs["args"], inputs["stacked"]
    results: dict[str, Any] = {"value": call(*args), "vmap value": jax.vmap(call)(*stacked)}

    def vjp(a: tuple, cts: tuple) -> Any:
        return _pullback(call, a, cts)[1]

    def jvp(a: tuple, tangents: tuple) -> Any:
        return jax.jvp(in_some(adapter, a, wrt), tuple(a[i] for i in wrt), tangents)[1]

    if "vjp" in modes:
        results["vjp"] = vjp(args, inputs["cts"])
        results["vmap vjp"] = jax.vmap(vjp)(stacked, inputs["stacked_cts"])
    if "jvp" in modes:
        results["jvp"] = jvp(args, inputs["tangents"])
        results["vmap jvp"] = jax.vmap(jvp)(stacked, inputs["stacked_tangents"])
    if compositions:  # (the "hessian" check's program, inlined into this one)
        results |= _second_derivatives(adapter, wrt, compositions, args, inputs["cts"], inputs["v"])
    return results


@contextlib.contextmanager
def _buffers() -> Iterator[None]:
    """The CPU's buffer_callback transport for the traces inside: the float64 reference runs
    in a ``jax.enable_x64`` context, which pure_callback's worker threads do not see."""
    from jaxbridge import _transport

    before = _transport._transport
    _transport.set_transport("buffer_callback")
    try:
        yield
    finally:
        _transport._transport = before


def _agree64(s: Subject, name: str, where: str, got: list, cpu: list, rtol: float) -> None:
    for k, (g, c) in enumerate(zip(got, cpu, strict=True)):
        scale = _scale(c)
        error = _error(g, c)
        if error > rtol * scale:
            raise _failure(
                s, name, k, where, g, c, f"differs by {error:.3g} (allowed {rtol:g} x {scale:.3g})"
            )


def _agree32(
    s: Subject, name: str, where: str, got: list, cpu: list, reference: list, factor: float
) -> None:
    eps = float(np.finfo(np.float32).eps)
    for k, (g, c, r) in enumerate(zip(got, cpu, reference, strict=True)):
        own = _error(c, r)
        allowed = factor * max(own, _ULPS * eps * _scale(r))
        error = _error(g, r)
        if error > allowed:
            raise _failure(
                s,
                name,
                k,
                where,
                g,
                c,
                f"is {error:.3g} from the float64 reference where the CPU's float32 is "
                f"{own:.3g} (allowed {allowed:.3g})",
            )


def _scale(x: np.ndarray) -> float:
    finite = np.abs(x[np.isfinite(x)]) if x.size else x
    return float(np.max(finite, initial=np.finfo(np.float64).tiny))


def _error(a: np.ndarray, b: np.ndarray) -> float:
    """The largest |a - b|, where NaN against NaN (and the same infinity) count as equal and
    NaN against a number as infinitely far."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    gap = np.where(same, 0.0, np.abs(a - b))
    return float(np.max(np.nan_to_num(gap, nan=np.inf), initial=0.0))


def _failure(
    s: Subject, name: str, k: int, where: str, got: np.ndarray, cpu: np.ndarray, how: str
) -> AssertionError:
    a, b = np.asarray(got, np.float64).ravel(), np.asarray(cpu, np.float64).ravel()
    gap = np.where(np.isnan(a) & np.isnan(b), 0.0, np.nan_to_num(np.abs(a - b), nan=np.inf))
    i = int(np.argmax(gap)) if gap.size else 0
    at = f"; worst entry {i}: {a[i]!r} {where}, {b[i]!r} on the CPU" if gap.size else ""
    return AssertionError(
        f"{s.owner}: {name} (leaf {k}) {where} {how}{at}.\nInputs ({s.dtype}):\n{s.inputs()}"
    )
