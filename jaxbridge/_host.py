"""What runs on the host, checked: an adapter's error named after it, a result against its
declared shape and dtype, a cotangent against its argument's.

Everything here sees plain NumPy arrays and never calls into JAX (a host callback that
calls JAX can deadlock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from ._arrays import Handoff, handoff_of
from ._host_errors import remember
from ._refusals import Refusal, RefusedType, RefusedValue


def host_error(owner: str, method: str, error: Exception) -> Exception:
    """The error to raise when an adapter's own code raised ``error``.

    Keeps the original type (a ``ValueError`` stays a ``ValueError``), puts the adapter,
    the method and the original message first, and has the original as its cause.
    """
    if isinstance(error, Refusal) or getattr(error, _NAMED, False):
        remember(error)
        return error  # (named already: by the method inside the one that ran it, say)
    message = f"{owner}.{method} raised {type(error).__name__} on the host: {error}"
    try:
        wrapped = type(error)(message)
    except Exception:  # an exception type whose constructor takes other arguments
        error.add_note(message)
        wrapped = error
    else:
        wrapped.__cause__ = error
    setattr(wrapped, _NAMED, True)
    remember(wrapped)
    return wrapped


_NAMED = "_jaxbridge_named"
"""The attribute that marks an error ``host_error`` has named."""


def kind(dtype: np.dtype) -> str:
    """NumPy's kind of ``dtype``, also for the extension types of ml_dtypes (kind "V" to
    NumPy): "f" for bfloat16 and the float8s, "i" and "u" for int4 and uint4."""
    if dtype.kind != "V":
        return dtype.kind
    stem = dtype.name.split("_")[0].rstrip("0123456789")
    return {"bfloat": "f", "float": "f", "int": "i", "uint": "u"}.get(stem, "V")


def conform(
    owner: str,
    method: str,
    index: int,
    value: object,
    shape: tuple[int, ...],
    core_rank: int,
    dtype: np.dtype,
    per_element: bool = False,
) -> np.ndarray:
    """Check one host result against its declared shape and dtype, casting within a kind.

    Leading batch axes may broadcast (gufunc semantics), unless ``per_element``: a vectorized
    forward's results, which must have every batch axis (a forward that is not batch-aware
    returns one value for the whole batch, which broadcasting would copy to every element).
    Core axes must match exactly.
    """
    if type(value) is np.ndarray and value.shape == shape and value.dtype is dtype:
        return value  # the common case, kept cheap: this runs on every call
    what = f"result {index} of {method}"
    handoff = handoff_of(value)
    if handoff is not None:  # an adapter's result on its own library's arrays
        return _conform_in(handoff, owner, what, value, shape, core_rank, dtype, per_element)
    array = np.asarray(value)
    _same_kind(owner, what, array.dtype, dtype)
    core = shape[len(shape) - core_rank :]
    fits = array.shape[array.ndim - core_rank :] == core and array.ndim >= core_rank
    if fits and array.shape != shape and per_element:
        raise RefusedValue(
            f"{owner}: {what} has shape {array.shape}, but the call's batch needs {shape}: "
            f"with `vectorized = True`, forward must return one result per batch element. "
            f"If forward is not batch-aware, set `vectorized = False` (the bridge then loops "
            f"over the batch); if the result is the same for every element, broadcast it "
            f"(np.broadcast_to)."
        )
    if fits and array.shape != shape:
        try:
            array = np.broadcast_to(array, shape)
        except ValueError:
            fits = False
    if not fits:
        raise ValueError(f"{owner}: {what} has shape {array.shape}, expected {shape}.")
    return _narrowed(owner, what, array, dtype)


def _narrowed(owner: str, what: str, array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``array`` cast to ``dtype`` of its kind; an integer that does not fit, which NumPy's
    cast would wrap (300 to int8 as 44), refused. (A float beyond a narrower float's range
    becomes inf, as it does in JAX's own arithmetic.)"""
    if kind(dtype) in "iu" and array.dtype != dtype and array.size:
        info = ml_dtypes.iinfo(dtype)
        outside = (array < info.min) | (array > info.max)
        if outside.any():
            raise RefusedValue(
                f"{owner}: {what} holds {array[outside].flat[0].item()!r}, outside the range "
                f"of its declared dtype {dtype} ([{info.min}, {info.max}]): declare a wider one."
            )
    return array.astype(dtype, copy=False)


def _same_kind(owner: str, what: str, got: np.dtype, dtype: np.dtype) -> None:
    if kind(got) != kind(dtype):
        raise TypeError(
            f"{owner}: {what} has dtype {got}, but {dtype} was declared; the bridge "
            f"casts only within a kind (float64 to float32, say), not {kind(got)!r} "
            f"to {kind(dtype)!r}."
        )


def _conform_in(
    handoff: Handoff,
    owner: str,
    what: str,
    value: object,
    shape: tuple[int, ...],
    core_rank: int,
    dtype: np.dtype,
    per_element: bool,
) -> Any:
    """``conform`` for an array of another library (``arrays``): the same rules, in it."""
    got = handoff.dtype(value)
    _same_kind(owner, what, got, dtype)
    have = tuple(value.shape)  # type: ignore[attr-defined]
    core = shape[len(shape) - core_rank :]
    if have[len(have) - core_rank :] != core or len(have) < core_rank or len(have) > len(shape):
        raise ValueError(f"{owner}: {what} has shape {have}, expected {shape}.")
    if have != shape:
        if per_element:
            raise RefusedValue(
                f"{owner}: {what} has shape {have}, but the call's batch needs {shape}: "
                f"with `vectorized = True`, forward must return one result per batch element."
            )
        try:
            value = handoff.broadcast(value, shape)
        except (ValueError, RuntimeError):
            raise ValueError(f"{owner}: {what} has shape {have}, expected {shape}.") from None
    return value if got == dtype else handoff.cast(value, dtype)


def cotangent(
    owner: str,
    name: str,
    value: object,
    shape: tuple[int, ...],
    g_batch: tuple[int, ...],
    dtype: np.dtype,
) -> np.ndarray:
    """``backward``'s cotangent of argument ``name``, checked against ``shape`` (the call's
    batch, then the argument's core shape), zeros for None.

    One cotangent per batch element, as a gufunc's result: size 1 on a batch axis means the
    same for every element there, and the bridge sums them where the argument was broadcast.
    Size 1 where the output's cotangent (batch ``g_batch``) has more is a cotangent summed
    over the batch, which broadcasting would count once per element: an error, unless it is
    zero. So is any other shape; both errors name the argument.
    """
    if value is None:
        return np.zeros(shape, dtype)
    handoff = handoff_of(value)
    # (another library's array, ``arrays``, is checked as it is: the same attributes)
    array: Any = np.asarray(value) if handoff is None else value
    got = np.dtype(array.dtype) if handoff is None else handoff.dtype(array)
    if kind(got) != "f":
        raise RefusedType(
            f"{owner}.backward: the cotangent of '{name}' has dtype {got}, expected a "
            f"floating one ({dtype})."
        )
    lead = len(g_batch)
    padded = (1,) * (len(shape) - array.ndim) + array.shape
    if (
        len(padded) != len(shape)
        or padded[lead:] != shape[lead:]
        or any(p not in (1, full) for p, full in zip(padded, shape))
    ):
        raise RefusedValue(
            f"{owner}.backward: the cotangent of '{name}' has shape {tuple(array.shape)}, "
            f"expected {shape}."
        )
    summed = [k for k in range(lead) if padded[k] == 1 < g_batch[k]]
    if summed and array.any():
        raise RefusedValue(
            f"{owner}.backward: the cotangent of '{name}' has shape {tuple(array.shape)}, "
            f"expected {shape}: size 1 on batch axis {summed[0]}, where the output's cotangent has "
            f"{g_batch[summed[0]]}, as if summed over the batch. Return one per batch "
            f"element; the bridge sums them where '{name}' was broadcast."
        )
    return array


Compute = Callable[[Sequence[np.ndarray], Sequence[np.ndarray] | None], Sequence[object]]
"""``compute(inputs, outs)``: an adapter's method on the inputs, with the arrays to write
its results into (``None``: none given)."""

Repair = Callable[[Sequence[np.ndarray], Sequence[object]], Sequence[object]]
"""``repair(inputs, results)``: the results of a ``compute`` that failed the fast check,
made into what the bridge expects (or an error raised): ``backward``'s symbolic zeros and
broadcast cotangents (see ``cotangent``)."""

HostFunction = Callable[[Sequence[np.ndarray], Sequence[np.ndarray] | None], Sequence[np.ndarray]]
"""``function(inputs, outs)``: the checked results, from NumPy views of the inputs. ``outs``
are writeable views of XLA's result buffers (buffer_callback), or ``None`` where the
transport has none: a result returned as its own ``outs`` array is not copied."""
