"""The checks of a CSR sparsity pattern given as static parameters (``indices``, ``indptr``,
``shape``, as in ``scipy.sparse.csr_array``), for every adapter that takes one."""

from __future__ import annotations

import numpy as np


def check_pattern(
    owner: str, indices: object, indptr: object, shape: object, square: bool = True
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, int]]:
    """``(indices, indptr, shape)`` as tuples of ints (hashable, so that an adapter holding
    them is), or a ``ValueError`` naming ``owner`` and the parameter at fault."""
    shape_ = int_tuple(owner, "shape", shape)
    if square and (len(shape_) != 2 or shape_[0] != shape_[1] or shape_[0] < 1):
        raise ValueError(
            f"{owner}: parameter 'shape' must be square, (n, n) with n >= 1; got {shape!r}."
        )
    if len(shape_) != 2 or min(shape_) < 1:
        raise ValueError(
            f"{owner}: parameter 'shape' must be (m, n) with m, n >= 1; got {shape!r}."
        )
    indices_, indptr_ = int_tuple(owner, "indices", indices), int_tuple(owner, "indptr", indptr)
    n, columns = shape_
    if len(indptr_) != n + 1:
        raise ValueError(
            f"{owner}: parameter 'indptr' must have n + 1 = {n + 1} entries for shape "
            f"{shape_}; got {len(indptr_)}."
        )
    steps = np.diff(indptr_)
    if indptr_[0] != 0 or (steps < 0).any() or indptr_[-1] != len(indices_):
        raise ValueError(
            f"{owner}: parameter 'indptr' must start at 0, never decrease, and end at "
            f"len(indices) = {len(indices_)}; got {indptr_[0]} ... {indptr_[-1]}"
            + (" with a decrease." if (steps < 0).any() else ".")
        )
    bad = [i for i in indices_ if not 0 <= i < columns]
    if bad:
        raise ValueError(
            f"{owner}: parameter 'indices' holds column {bad[0]}, outside [0, {columns}) "
            f"for shape {shape_}."
        )
    return indices_, indptr_, (n, columns)


def int_tuple(owner: str, name: str, value: object) -> tuple[int, ...]:
    """A 1-D sequence of integers as a tuple, or a ``ValueError`` naming ``owner`` and
    ``name``."""
    array = np.asarray(value)
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(
            f"{owner}: parameter '{name}' must be a 1-D sequence of integers; got {value!r:.80}."
        )
    return tuple(int(i) for i in array)
