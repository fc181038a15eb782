"""``CoefficientGroups``: a gufunc batch of systems or filters, walked one set of coefficients
at a time. SciPy takes one set per call (a matrix factorized once, a filter applied once) but
many right-hand sides or signals, so each call gets every data element that shares it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class CoefficientGroups:
    """The data elements of a gufunc batch, grouped by the coefficients they use.

    ``coefficients`` (matrices, filter coefficients) each have leading batch axes before
    ``ranks`` core axes; ``data`` (right-hand sides, signals) has its own batch axes, before
    ``data_rank`` core axes, broadcast against theirs. ``coefficient_batch`` is the
    coefficients' own broadcast batch, one group per index; ``shape`` is a result's: the
    whole broadcast batch, then the data's core.
    """

    def __init__(
        self,
        coefficients: Sequence[np.ndarray],
        ranks: Sequence[int],
        data: np.ndarray,
        data_rank: int,
    ) -> None:
        core = data.shape[data.ndim - data_rank :]
        batches = [c.shape[: c.ndim - r] for c, r in zip(coefficients, ranks)]
        rank = max(len(b) for b in (*batches, data.shape[: data.ndim - data_rank]))
        self._batches = [(1,) * (rank - len(b)) + b for b in batches]
        self._coefficients = [
            c.reshape(b + c.shape[c.ndim - r :])
            for c, b, r in zip(coefficients, self._batches, ranks)
        ]
        self.coefficient_batch = np.broadcast_shapes(*self._batches)
        data = data.reshape((1,) * (rank + data_rank - data.ndim) + data.shape)
        self.shape = np.broadcast_shapes(self.coefficient_batch, data.shape[:rank]) + core
        self._data = np.broadcast_to(data, self.shape)
        self._core = core

    def apply(
        self,
        index: tuple[int, ...],
        function: Callable[..., Sequence[Any]],
        into: np.ndarray,
    ) -> list[Any]:
        """``function(*cores, stack)`` for the coefficients at ``index`` (in
        ``coefficient_batch``): their cores, and every data element that uses them stacked
        along a new first axis. Its first result, stacked the same way, is written into
        ``into`` (of ``shape``) at those elements; the rest are returned.
        """
        cores = [
            c[tuple(0 if size == 1 else i for i, size in zip(index, b))]
            for c, b in zip(self._coefficients, self._batches)
        ]
        # every data element that uses these coefficients: all of a broadcast (size-1) axis
        where = tuple(i if n != 1 else slice(None) for i, n in zip(index, self.coefficient_batch))
        block = self._data[where]
        elements = block.shape[: block.ndim - len(self._core)]
        first, *rest = function(*cores, block.reshape((math.prod(elements), *self._core)))
        into[where] = np.reshape(first, block.shape)
        return rest
