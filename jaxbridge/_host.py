"""What runs on the host: an adapter's method over a batch, with its results checked.

Everything here sees plain NumPy arrays and never calls into JAX (a host callback that
calls JAX can deadlock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def host_error(owner: str, method: str, error: Exception) -> Exception:
    """The error to raise when an adapter's own code raised ``error``.

    Keeps the original type (a ``ValueError`` stays a ``ValueError``) and puts the adapter,
    the method and the original message first.
    """
    message = f"{owner}.{method} raised {type(error).__name__} on the host: {error}"
    try:
        wrapped = type(error)(message)
    except Exception:  # an exception type whose constructor takes other arguments
        error.add_note(message)
        return error
    wrapped.__cause__ = error
    return wrapped


def conform(
    owner: str, what: str, value: object, shape: tuple[int, ...], core_rank: int, dtype: np.dtype
) -> np.ndarray:
    """Check one host result against its declared shape and dtype, casting within a kind.

    Leading batch axes may broadcast (gufunc semantics); core axes must match exactly.
    """
    array = np.asarray(value)
    if array.dtype.kind != dtype.kind:
        raise TypeError(
            f"{owner}: {what} has dtype {array.dtype}, but {dtype} was declared; the bridge "
            f"casts only within a kind (float64 to float32, say), not {array.dtype.kind!r} to "
            f"{dtype.kind!r}."
        )
    core = shape[len(shape) - core_rank :]
    fits = array.shape[array.ndim - core_rank :] == core and array.ndim >= core_rank
    if fits and array.shape != shape:
        try:
            array = np.broadcast_to(array, shape)
        except ValueError:
            fits = False
    if not fits:
        raise ValueError(f"{owner}: {what} has shape {array.shape}, expected {shape}.")
    return array.astype(dtype, copy=False)


def run_batched(
    owner: str,
    method: str,
    compute: Callable[[Sequence[np.ndarray]], Sequence[object]],
    arrays: Sequence[np.ndarray],
    core_ranks: Sequence[int],
    results: Sequence[tuple[tuple[int, ...], np.dtype]],
    vectorized: bool,
) -> tuple[np.ndarray, ...]:
    """Run ``compute`` over the broadcast batch of ``arrays`` in one host call.

    ``arrays`` carry leading batch axes before their ``core_ranks`` core axes; ``results``
    gives each result's core shape and dtype. A vectorized adapter sees the whole batch at
    once; any other sees one core-shaped element at a time, looped here.
    """
    batches = [a.shape[: a.ndim - r] for a, r in zip(arrays, core_ranks)]
    batch = np.broadcast_shapes(*batches)

    def checked(values: Sequence[np.ndarray], shape_of: Callable[[tuple[int, ...]], tuple]):
        try:
            got = compute(values)
        except Exception as error:
            raise host_error(owner, method, error) from error
        if len(got) != len(results):
            raise TypeError(
                f"{owner}: {method} returned {len(got)} values, expected {len(results)}."
            )
        return [
            conform(owner, f"result {i} of {method}", v, shape_of(core), len(core), dtype)
            for i, (v, (core, dtype)) in enumerate(zip(got, results))
        ]

    if vectorized or not batch:
        return tuple(checked(arrays, lambda core: batch + core))

    outs = tuple(np.empty(batch + core, dtype) for core, dtype in results)
    for index in np.ndindex(*batch):
        elements = [a[_element(index, b)] for a, b in zip(arrays, batches)]
        for out, value in zip(outs, checked(elements, lambda core: core)):
            out[index] = value
    return outs


def _element(index: tuple[int, ...], batch: tuple[int, ...]) -> tuple[int, ...]:
    """The index of one batch element in an array whose batch axes may be broadcast."""
    index = index[len(index) - len(batch) :]
    return tuple(0 if size == 1 else i for i, size in zip(index, batch))
