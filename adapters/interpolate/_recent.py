"""What the host built for the last few calls (SciPy's interpolant, the queries' sort order),
kept so that the calls of one derivative build it once.

A gradient makes several host calls on the same data: the value, the next derivative in
the queries (``nu + 1``), the transpose in the data. Each built SciPy's interpolant anew (a
cubic spline of 100 knots: 0.3 ms, as long as evaluating it at 10,000 queries; a 40 x 40
cubic grid: its tensor-product system solved, 60 ms) and sorted the queries again. The
bridge's host methods are pure functions of their arguments, so what was built from equal
arrays is reused: looked up by a key and the arrays themselves (compared entry by entry,
about 1 µs per thousand entries; NaN never matches, so it is built again), kept as copies
(XLA reuses its buffers after a call).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import numpy as np

Built = TypeVar("Built")


class Recent:
    """The last ``size`` things built, each with the key and the arrays it was built from."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()  # (a batch's host threads may share one)
        self._entries: list[tuple[Hashable, tuple[np.ndarray, ...], Any]] = []

    def get(
        self, key: Hashable, arrays: Sequence[np.ndarray], build: Callable[..., Built]
    ) -> Built:
        """What ``build(*copies)`` gives, or gave for the same key and equal arrays, given
        the arrays' copies that are kept (what it builds may keep views of them: SciPy's
        linear spline keeps its ``y``)."""
        with self._lock:
            entries = list(self._entries)
        for i, (known, kept, built) in enumerate(entries):
            if known == key and all(map(_equal, kept, arrays)):
                if i:  # the most recent first
                    self._keep(known, kept, built)
                return built
        kept = tuple(np.array(a, copy=True) for a in arrays)
        built = build(*kept)
        self._keep(key, kept, built)
        return built

    def _keep(self, key: Hashable, kept: tuple[np.ndarray, ...], built: Any) -> None:
        with self._lock:
            rest = [e for e in self._entries if e[2] is not built]
            self._entries = [(key, kept, built), *rest][: self._size]


def _equal(kept: np.ndarray, given: np.ndarray) -> bool:
    return kept.shape == given.shape and kept.dtype == given.dtype and bool((kept == given).all())


_orders = Recent(2)


def sort_order(q: np.ndarray) -> np.ndarray:
    """``np.argsort(q)``, kept for the last two query arrays asked about."""
    return _orders.get(None, (q,), np.argsort)
