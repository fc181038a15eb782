"""The "specs" check: what the adapter's host methods return, called directly, against what it
declares (before the bridge would cast or refuse it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxbridge.internal import on_numpy, overrides, told_residuals

from . import _host
from ._arguments import listing
from ._subject import Subject
from ._transforms import floating

Declared = Sequence[tuple[str, str, jax.ShapeDtypeStruct]]  # (label, declared by, spec)


def check_specs(s: Subject) -> None:
    specs = [jax.ShapeDtypeStruct(a.shape[a.ndim - r :], a.dtype) for a, r in zip(s.args, s.ranks)]
    declared = [
        (f"output {i}", "output_specs", spec)
        for i, spec in enumerate(_specs(s.adapter.output_specs(*specs)))
    ] + [
        (f"residual {i}", "residual_specs", spec)
        for i, spec in enumerate(_specs(s.adapter.residual_specs(*specs)))
    ]
    n_out = len(s.signature.outputs)
    n_specs = sum(source == "output_specs" for _, source, _ in declared)
    if n_specs != n_out:
        raise s.failure(
            "specs",
            f"output_specs gives {n_specs} specs for the {n_out} outputs of signature "
            f"{s.signature.text!r}",
        )
    with_jvp = overrides(s.adapter, "jvp") and bool(s.wrt)
    tangents = s.tangents if with_jvp else None
    # (where, arguments, loop shape, cotangents, tangents)
    calls: list[tuple[str, tuple[np.ndarray, ...], tuple[int, ...], Any, Any]] = []
    if all(0 not in a.shape[: a.ndim - r] for a, r in zip(s.args, s.ranks)):
        # (an empty batch has no element to call alone)
        core = tuple(a[(0,) * (a.ndim - r)] for a, r in zip(s.args, s.ranks))
        out_ranks = [r for r, o in zip(s.output_ranks, s.outputs) if floating(o.dtype)]
        core_cts = _core(s.cts, out_ranks)
        core_tangents = _core(tangents, [s.ranks[i] for i in s.wrt])
        calls.append(("one unbatched call", core, (), core_cts, core_tangents))
    if type(s.adapter).vectorized:
        loop = np.broadcast_shapes(*(a.shape[: a.ndim - r] for a, r in zip(s.stacked, s.ranks)))
        mask = s.layout.broadcast
        mixed = tuple(b if m else f for m, b, f in zip(mask, s.stacked, s.first))
        mixed_tangents = (
            None
            if tangents is None
            else tuple(t if mask[i] else t[0] for i, t in zip(s.wrt, tangents))
        )
        calls.append((f"a call on a batch of shape {loop}", s.stacked, loop, s.cts, tangents))
        calls.append(
            (f"a call broadcasting to a batch of shape {loop}", mixed, loop, s.cts, mixed_tangents)
        )
    for where, args, loop, cts, ts in calls:
        inputs = listing(s.names, args)
        items = _host.forward_items(s.adapter, args, s.ranks)
        if len(items) != len(declared):
            raise s.failure(
                "specs",
                f"forward returned {len(items)} values on {where}, but it should return "
                f"{len(declared)}: the {n_out} outputs of signature {s.signature.text!r}, "
                f"then the {len(declared) - n_out} residuals that residual_specs declares",
                inputs,
            )
        for value, (label, source, spec) in zip(items, declared):
            _expect_result(s, f"{label} of forward on {where}", value, spec, source, loop, inputs)
        if len(declared) > n_out and told_residuals(type(s.adapter)):
            _check_without_residuals(s, where, args, items[:n_out], len(declared), inputs)
        res = (
            *_host.padded(args, s.ranks),
            *(np.asarray(v).astype(spec.dtype) for v, (_, _, spec) in zip(items, declared)),
        )
        if cts is not None and overrides(s.adapter, "backward"):
            _check_backward(s, where, args, res, declared, loop, cts, inputs)
        if ts is not None:
            _check_jvp(s, where, res, declared, loop, ts, inputs)


def _check_without_residuals(
    s: Subject,
    where: str,
    args: Sequence[np.ndarray],
    outputs: Sequence[Any],
    n_all: int,
    inputs: str,
) -> None:
    """``forward(residuals=False)``, what a call that is not differentiated gets, returns
    the same outputs as the full call (alone, or followed by its residuals)."""
    items = _host.forward_items(s.adapter, args, s.ranks, residuals=False)
    if len(items) not in (len(outputs), n_all):
        raise s.failure(
            "specs",
            f"forward(residuals=False) returned {len(items)} values on {where}, but it should "
            f"return the {len(outputs)} outputs (its residuals may follow)",
            inputs,
        )
    for i, (alone, full) in enumerate(zip(items, outputs)):
        if not np.array_equal(np.asarray(alone), np.asarray(full), equal_nan=True):
            raise s.failure(
                "specs",
                f"output {i} of forward(residuals=False) on {where} differs from forward's: "
                "telling it that the residuals go unused must not change the outputs",
                inputs,
            )


def _specs(declared: Any) -> list[jax.ShapeDtypeStruct]:
    items = declared if isinstance(declared, (tuple, list)) else (declared,)
    return [jax.ShapeDtypeStruct(tuple(d.shape), np.dtype(d.dtype)) for d in items]


def _core(stacked: Sequence[np.ndarray] | None, ranks: Sequence[int]) -> Any:
    """The first element of ``stacked`` arrays, without the leading axes of ``args``."""
    if stacked is None:
        return None
    return tuple(c[0][(0,) * (c.ndim - 1 - r)] for c, r in zip(stacked, ranks))


def _expect_result(
    s: Subject,
    what: str,
    value: Any,
    spec: jax.ShapeDtypeStruct,
    source: str | None,
    loop: tuple[int, ...],
    inputs: str,
) -> None:
    """One host result against its spec, declared by ``source`` (``None``: a cotangent or a
    tangent, whose spec is its argument's or output's). Leading axes may broadcast to
    ``loop``, as in a gufunc."""
    array = np.asarray(value)
    if array.dtype != spec.dtype:
        fate = (
            f"cast it to {spec.dtype} without a word"
            if array.dtype.kind == np.dtype(spec.dtype).kind
            else "refuse it"
        )
        declared = f"{source} declares" if source else "its argument is"
        fix = f", or declare {array.dtype}" if source else ""
        raise s.failure(
            "specs",
            f"{what} has dtype {array.dtype}, but {declared} {spec.dtype}. The bridge would "
            f"{fate}: return {spec.dtype} (with `.astype`, say){fix}",
            inputs,
        )
    core = tuple(spec.shape)
    lead = array.shape[: array.ndim - len(core)]
    if (
        array.ndim < len(core)
        or array.shape[array.ndim - len(core) :] != core
        or not _broadcasts(lead, loop)
    ):
        declared = f"{source} declares" if source else "its argument has"
        raise s.failure(
            "specs",
            f"{what} has shape {array.shape}, but {declared} the core shape {core}, so it "
            f"should have shape {loop + core}",
            inputs,
        )


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _check_backward(
    s: Subject,
    where: str,
    args: Sequence[np.ndarray],
    res: tuple[np.ndarray, ...],
    declared: Declared,
    loop: tuple[int, ...],
    cts: Sequence[np.ndarray],
    inputs: str,
) -> None:
    """``backward`` on the host, given what the bridge would give it."""
    given = iter(cts)
    g: tuple[Any, ...] = tuple(
        next(given)
        if floating(spec.dtype)
        else np.zeros(loop + tuple(spec.shape), spec.dtype)  # as the bridge passes them
        for _, _, spec in declared[: len(s.signature.outputs)]
    )
    got = on_numpy(s.adapter, "backward")(res, g[0] if len(g) == 1 else g)
    if not isinstance(got, (tuple, list)) or len(got) != len(s.names):
        raise s.failure(
            "specs",
            f"backward returned {type(got).__name__}"
            + (f" of {len(got)}" if isinstance(got, (tuple, list)) else "")
            + f" on {where}; it must return a tuple of {len(s.names)} cotangents, one per "
            "input (None for zero)",
            inputs,
        )
    for i in s.wrt:
        if got[i] is not None:
            arg = args[i]
            core = arg.shape[arg.ndim - s.ranks[i] :]
            spec = jax.ShapeDtypeStruct(core, arg.dtype)
            what = f"the cotangent of {s.names[i]!r} from backward on {where}"
            _expect_result(s, what, got[i], spec, None, loop, inputs)


def _check_jvp(
    s: Subject,
    where: str,
    res: tuple[np.ndarray, ...],
    declared: Declared,
    loop: tuple[int, ...],
    tangents: Sequence[np.ndarray],
    inputs: str,
) -> None:
    """``jvp`` on the host, given a tangent for every floating argument, as the bridge would
    give them: one tangent per output, shaped and typed like it."""
    given: list[np.ndarray | None] = [None] * len(s.names)
    for i, t in zip(s.wrt, tangents):
        given[i] = t
    got = on_numpy(s.adapter, "jvp")(res, tuple(given))
    n_out = len(s.signature.outputs)
    if n_out > 1 and (not isinstance(got, (tuple, list)) or len(got) != n_out):
        raise s.failure(
            "specs",
            f"jvp returned {type(got).__name__}"
            + (f" of {len(got)}" if isinstance(got, (tuple, list)) else "")
            + f" on {where}; it must return a tuple of {n_out} tangents, one per output "
            "(None for zero)",
            inputs,
        )
    items = got if n_out > 1 else (got,)
    for o, (value, (_, _, spec)) in enumerate(zip(items, declared)):
        if value is not None and floating(spec.dtype):
            what = f"the tangent of output {o} from jvp on {where}"
            _expect_result(s, what, value, spec, "output_specs", loop, inputs)
