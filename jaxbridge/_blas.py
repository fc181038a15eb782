"""OpenBLAS held to fewer threads while an adapter's host code runs (``Adapter.blas_threads``).

OpenBLAS's worker threads, once handed work, busy-wait for more (about 0.1 s) before they
sleep, and some of SciPy's small routines hand them work at every call: a loop of L-BFGS-B
solves of two unknowns kept one worker at a whole core for the whole loop. Where the cores
are wanted (XLA's threads, other processes) that made such loops 2 to 70 times slower.

Thread counts are per process. Only OpenBLAS's own thread server (its ``pthreads`` builds,
those of NumPy's and SciPy's wheels) is touched: setting its count while other threads run
BLAS was tried here (1.7 million changes against products and LU factorisations on another
thread: no result changed), while OpenMP builds are reported to race. A count lowered by the
main thread cannot be raised again from another one, so a host call holds and gives back on
the thread that runs it, and overlapping calls share one hold: the last to leave restores.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController

Result = TypeVar("Result")

_lock = threading.Lock()
_holders = 0
_saved: list[tuple[Any, int]] = []
_owed: list[tuple[Any, int]] = []  # counts a restore could not set (see _release)
_found: tuple[int, list[Any]] = (-1, [])


@dataclass(frozen=True)
class HeldBlas(Generic[Result]):
    """``function(values, outs)`` (a host function, or an element's ``compute`` in a worker
    process: picklable as it is) run with at most ``threads`` OpenBLAS threads."""

    function: Callable[[Sequence[np.ndarray], Sequence[np.ndarray] | None], Result]
    threads: int

    def __call__(self, values: Sequence[np.ndarray], outs: Sequence[np.ndarray] | None) -> Result:
        _hold(self.threads)
        try:
            return self.function(values, outs)
        finally:
            _release()


def _hold(threads: int) -> None:
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = _owed or [(library, library.num_threads) for library in _libraries()]
        _holders += 1
        for library, _ in _saved:
            if library.num_threads > threads:  # the fewest that any holder asks for
                library.set_num_threads(threads)


def _release() -> None:
    global _holders, _owed
    with _lock:
        _holders -= 1
        if _holders == 0:
            for library, threads in _saved:
                library.set_num_threads(threads)
            # lowered on the main thread and given back on another (overlapping calls):
            # OpenBLAS keeps the lower count, so the next hold keeps these counts to restore
            _owed = _saved if any(lib.num_threads != n for lib, n in _saved) else []


def _libraries() -> list[Any]:
    """The OpenBLAS thread servers loaded in this process: looked for again (1-2 ms) only
    when modules were imported since the last look, as one may have loaded another."""
    global _found
    imported = len(sys.modules)
    if _found[0] != imported:
        libraries = ThreadpoolController().select(internal_api="openblas").lib_controllers
        _found = (imported, [lib for lib in libraries if lib.threading_layer == "pthreads"])
    return _found[1]


def _after_fork() -> None:
    # a child forked while a host call held the libraries starts with none held
    global _lock, _holders
    _lock, _holders = threading.Lock(), 0


os.register_at_fork(after_in_child=_after_fork)
