"""What runs on the host: an adapter's method over a batch, with its results checked.

Everything here sees plain NumPy arrays and never calls into JAX (a host callback that
calls JAX can deadlock).
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._host_errors import remember
from ._processes import in_processes
from ._refusals import Refusal, RefusedType, RefusedValue


def host_error(owner: str, method: str, error: Exception) -> Exception:
    """The error to raise when an adapter's own code raised ``error``.

    Keeps the original type (a ``ValueError`` stays a ``ValueError``), puts the adapter,
    the method and the original message first, and has the original as its cause.
    """
    if isinstance(error, Refusal):
        remember(error)
        return error
    message = f"{owner}.{method} raised {type(error).__name__} on the host: {error}"
    try:
        wrapped = type(error)(message)
    except Exception:  # an exception type whose constructor takes other arguments
        error.add_note(message)
        remember(error)
        return error
    wrapped.__cause__ = error
    remember(wrapped)
    return wrapped


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
    array = np.asarray(value)
    if kind(array.dtype) != kind(dtype):
        raise TypeError(
            f"{owner}: {what} has dtype {array.dtype}, but {dtype} was declared; the bridge "
            f"casts only within a kind (float64 to float32, say), not {kind(array.dtype)!r} "
            f"to {kind(dtype)!r}."
        )
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
    return array.astype(dtype, copy=False)


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
    array = np.asarray(value)
    if kind(array.dtype) != "f":
        raise RefusedType(
            f"{owner}.backward: the cotangent of '{name}' has dtype {array.dtype}, expected a "
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
            f"{owner}.backward: the cotangent of '{name}' has shape {array.shape}, expected "
            f"{shape}."
        )
    summed = [k for k in range(lead) if padded[k] == 1 < g_batch[k]]
    if summed and array.any():
        raise RefusedValue(
            f"{owner}.backward: the cotangent of '{name}' has shape {array.shape}, expected "
            f"{shape}: size 1 on batch axis {summed[0]}, where the output's cotangent has "
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


def whole(
    owner: str,
    method: str,
    compute: Compute,
    expected: Sequence[tuple[tuple[int, ...], np.dtype, int]],
    repair: Repair | None = None,
    per_element: bool = False,
) -> HostFunction:
    """The host function that runs ``compute`` on the whole batch at once (a vectorized
    adapter), in one host call; ``outs`` are handed to it as they are.

    ``expected`` holds each result's shape, dtype and core rank, worked out once when the
    call was traced: ``run`` is the hot path of every call, so it does no shape arithmetic
    and hands back results that conform as they are; the others are repaired (if
    ``repair``) and conformed.
    """
    count = len(expected)
    if count == 1:
        ((shape, dtype, _),) = expected

        def run_one(
            arrays: Sequence[np.ndarray], outs: Sequence[np.ndarray] | None
        ) -> Sequence[np.ndarray]:
            # the common case, spelled out: a loop over one result costs a microsecond
            try:
                got = compute(arrays, outs)
            except Exception as error:
                raise host_error(owner, method, error)
            if len(got) == 1:
                value = got[0]
                if type(value) is np.ndarray and value.shape == shape and value.dtype is dtype:
                    return got  # type: ignore[return-value]
            return _conformed(owner, method, _repaired(repair, arrays, got), expected, per_element)

        return run_one

    def run(
        arrays: Sequence[np.ndarray], outs: Sequence[np.ndarray] | None
    ) -> Sequence[np.ndarray]:
        try:
            got = compute(arrays, outs)
        except Exception as error:
            raise host_error(owner, method, error)
        if len(got) == count:
            for value, (shape, dtype, _) in zip(got, expected):
                # conform's own first test, inlined
                if not (type(value) is np.ndarray and value.shape == shape):
                    break
                if value.dtype is not dtype:
                    break
            else:
                return got  # type: ignore[return-value]  # each value passed the ndarray test
        return _conformed(owner, method, _repaired(repair, arrays, got), expected, per_element)

    return run


def write_back(outs: Sequence[np.ndarray], results: Sequence[np.ndarray]) -> None:
    """Copy each result into its out array, unless it is that array."""
    for out, result in zip(outs, results):
        if result is not out:
            out[...] = result


def set_aside(results: Sequence[object], outs: Sequence[np.ndarray]) -> list[object]:
    """``results`` of a forward that was handed ``outs``, each one that overlaps another out
    array (used as workspace, or returned in another place) copied: ``write_back`` writes
    into that array before it would read the result."""
    return [
        np.array(result)
        if isinstance(result, np.ndarray)
        and any(other is not own and np.may_share_memory(result, other) for other in outs)
        else result
        for result, own in zip(results, outs)
    ]


def _repaired(repair: Repair | None, arrays: Sequence[np.ndarray], got: Sequence[object]):
    return got if repair is None else repair(arrays, got)


def _conformed(
    owner: str,
    method: str,
    got: Sequence[object],
    expected: Sequence[tuple[tuple[int, ...], np.dtype, int]],
    per_element: bool,
) -> tuple[np.ndarray, ...]:
    if len(got) != len(expected):
        raise TypeError(f"{owner}: {method} returned {len(got)} values, expected {len(expected)}.")
    return tuple(
        conform(owner, method, i, value, shape, rank, dtype, per_element)
        for i, (value, (shape, dtype, rank)) in enumerate(zip(got, expected))
    )


def run_batched(
    owner: str,
    method: str,
    compute: Compute,
    core_ranks: Sequence[int],
    results: Sequence[tuple[tuple[int, ...], np.dtype]],
    sources: Sequence[Sequence[int] | None],
    threads: int,
    processes: int,
    arrays: Sequence[np.ndarray],
    outs: Sequence[np.ndarray] | None,
    repair: Repair | None = None,
) -> Sequence[np.ndarray]:
    """Run ``compute`` over the broadcast batch of ``arrays`` in one host call, one
    core-shaped element at a time (an adapter that is not vectorized).

    ``arrays`` carry leading batch axes before their ``core_ranks`` core axes; ``results``
    gives each result's core shape and dtype, and ``sources`` the arguments whose batch it
    has (``None``: the batch of all). Results go into ``outs`` if given (and each element's
    ``compute`` gets its views of them), else into new arrays. The loop runs over up to
    ``threads`` threads (worth it for routines that release the GIL, as SciPy's do), or in
    up to ``processes`` worker processes (for work that holds it: ``_processes``).
    """
    batches = [a.shape[: a.ndim - r] for a, r in zip(arrays, core_ranks)]
    same = batches.count(batches[0]) == len(batches)
    batch = batches[0] if same else np.broadcast_shapes(*batches)
    own = [
        batch if src is None or same else np.broadcast_shapes(*(batches[i] for i in src))
        for src in sources
    ]
    if not batch:
        return _checked(owner, method, compute, arrays, outs, results, own, repair)

    indices = list(np.ndindex(*batch))
    elsewhere = processes > 1 and len(indices) > 1
    # each element's compute may write into its views of outs, unless threads share one (a
    # residual with a smaller batch) or it runs in another process: forward may use its out
    # arrays as workspace
    given = outs is not None and not elsewhere and (threads == 1 or all(b == batch for b in own))
    if outs is None:
        outs = [np.empty(b + core, dtype) for b, (core, dtype) in zip(own, results)]
    unbatched = [()] * len(results)

    def run(indices: Sequence[tuple[int, ...]], stop: threading.Event | None = None) -> None:
        for index in indices:
            if stop is not None and stop.is_set():
                return  # another element failed: the call raises its error
            elements = [a[batch_element(index, b)] for a, b in zip(arrays, batches)]
            # (the Ellipsis keeps a scalar element a writeable 0-d view)
            views = [out[(*batch_element(index, b), ...)] for out, b in zip(outs, own)]
            element_outs = views if given else None
            values = _checked(
                owner, method, compute, elements, element_outs, results, unbatched, repair
            )
            # each thread writes its own elements (a result with a smaller batch gets the
            # same value from every element that shares it): no lock needed
            write_back(views, values)

    if elsewhere:
        chunks = [indices[i::processes] for i in range(min(processes, len(indices)))]
        arguments = [
            [[a[batch_element(index, b)] for a, b in zip(arrays, batches)] for index in chunk]
            for chunk in chunks
        ]
        try:
            computed = in_processes(owner, compute, processes, arguments)
        except Exception as error:
            raise host_error(owner, method, error)
        for chunk, elements, gots in zip(chunks, arguments, computed):
            for index, values, got in zip(chunk, elements, gots):
                views = [out[(*batch_element(index, b), ...)] for out, b in zip(outs, own)]
                write_back(views, _accepted(owner, method, values, got, results, unbatched, repair))
    elif threads > 1 and len(indices) > 1:
        share(run, [indices[i::threads] for i in range(threads)])
    else:
        run(indices)
    return outs


def share(
    run: Callable[[Sequence[tuple[int, ...]], threading.Event], None],
    chunks: Sequence[Sequence[tuple[int, ...]]],
) -> None:
    """``run`` each chunk on its own thread (the first on this one); return only when every
    one has stopped, then raise the first error.

    The workers write into XLA's result buffers, which XLA frees (or hands to other arrays)
    as soon as the host call returns: returning at the first error while another worker is
    still computing would let it write into freed memory. So an error stops the others at
    their next element and waits for them. A chunk no thread has started yet runs here: a
    wait on a pool whose threads are all waiting (nested calls) would never end.
    """
    stop = threading.Event()
    errors: list[BaseException | None] = [None] * len(chunks)

    def work(i: int) -> None:
        try:
            run(chunks[i], stop)
        except BaseException as error:
            errors[i] = error
            stop.set()

    futures = [_pool().submit(work, i) for i in range(1, len(chunks))]
    work(0)
    for i, future in enumerate(futures, start=1):
        if future.cancel():
            work(i)
    concurrent.futures.wait(futures)
    error = next((e for e in errors if e is not None), None)
    if error is not None:
        raise error


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(thread_name_prefix="jaxbridge-host")


# A child forked after the pool was used inherits it without its threads: a host call
# there would wait forever for work they never take. The child starts a pool of its own.
os.register_at_fork(after_in_child=_pool.cache_clear)


def _checked(
    owner: str,
    method: str,
    compute: Compute,
    values: Sequence[np.ndarray],
    outs: Sequence[np.ndarray] | None,
    results: Sequence[tuple[tuple[int, ...], np.dtype]],
    batches: Sequence[tuple[int, ...]],
    repair: Repair | None,
) -> tuple[np.ndarray, ...]:
    """``compute(values, outs)``, its errors attributed to the adapter and its results
    repaired (if ``repair``) and checked against their core shapes and dtypes with the
    leading ``batches``."""
    try:
        got = compute(values, outs)
    except Exception as error:
        raise host_error(owner, method, error)
    return _accepted(owner, method, values, got, results, batches, repair)


def _accepted(
    owner: str,
    method: str,
    values: Sequence[np.ndarray],
    got: Sequence[object],
    results: Sequence[tuple[tuple[int, ...], np.dtype]],
    batches: Sequence[tuple[int, ...]],
    repair: Repair | None,
) -> tuple[np.ndarray, ...]:
    """What ``compute(values, ...)`` returned, ``got``, repaired and checked (see
    ``_checked``)."""
    try:
        if repair is not None and not all(
            type(value) is np.ndarray and value.shape == batch + core and value.dtype is dtype
            for value, batch, (core, dtype) in zip(got, batches, results)
        ):
            got = repair(values, got)
    except Exception as error:
        raise host_error(owner, method, error)
    if len(got) != len(results):
        raise TypeError(f"{owner}: {method} returned {len(got)} values, expected {len(results)}.")
    return tuple(
        [
            conform(owner, method, i, value, batch + core, len(core), dtype)
            for i, (value, batch, (core, dtype)) in enumerate(zip(got, batches, results))
        ]
    )


def batch_element(index: tuple[int, ...], batch: tuple[int, ...]) -> tuple[int, ...]:
    """The index of one batch element in an array whose batch axes may be broadcast."""
    index = index[len(index) - len(batch) :]
    return tuple(0 if size == 1 else i for i, size in zip(index, batch))
