"""A host function's batch: run whole (a vectorized adapter) or looped one element at a time,
over threads or worker processes, and the results checked against their declared shapes.

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

from ._arrays import handoff_of
from ._host import Compute, HostFunction, Repair, conform, host_error
from ._processes import in_processes


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
    """Copy each result into its out array, unless it is that array (an out array of
    another library, ``arrays``, through its hand-off: it may take a NumPy result too)."""
    for out, result in zip(outs, results):
        if result is not out:
            if type(out) is np.ndarray:
                out[...] = result
            else:
                handoff_of(out).write(out, result)  # type: ignore[union-attr]


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
