"""Worker processes for a looped adapter whose host work holds the GIL (``processes > 1``).

Threads take turns on such work (SciPy's optimisers and ODE solvers loop in Python); worker
processes each have their own interpreter. A batch's elements are split into one task per
worker, always the same share to the same worker: the adapter's method (``compute``,
pickled once per task) and the elements' arguments go out, its results come back and are
checked here. Workers are started with ``spawn`` (a fork of a process running XLA's
threads is unsafe), so they import the adapter's class anew: it must be importable, as
pickled classes are.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import pickle
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ._refusals import Refusal


class Unpicklable(Refusal, TypeError):
    """An adapter a worker process cannot receive: the message says why."""


def in_processes(
    owner: str, compute: Any, processes: int, chunks: Sequence[Sequence[Sequence[Any]]]
) -> list[list[Any]]:
    """``compute(arguments, None)`` for each element's arguments of each chunk, a chunk per
    worker process (at most ``processes``): the results in the same nesting. An error raised
    by ``compute`` in a worker is raised here, as it was raised (the first chunk's first)."""
    try:
        payload = pickle.dumps(compute)
    except Exception as error:
        raise Unpicklable(_why(owner, processes, error)) from None
    workers = _workers(processes)
    futures = [workers[i].submit(_run, payload, chunk) for i, chunk in enumerate(chunks)]
    done: list[list[Any]] = []
    first: BaseException | None = None
    for future in futures:  # every one waited for: none left running on a failed call
        try:
            done.append(future.result())
        except _NotReceived as error:
            first = first or Unpicklable(_why(owner, processes, error.cause))
        except BrokenProcessPool as error:  # a worker died: the next call starts new ones
            _workers.cache_clear()
            first = first or error
        except BaseException as error:
            first = first or error
    if first is not None:
        raise first
    return done


class _NotReceived(Exception):
    """A worker could not unpickle the adapter (its class is not importable there)."""

    def __init__(self, cause: str):
        super().__init__(cause)
        self.cause = cause


def _run(payload: bytes, chunk: Sequence[Sequence[Any]]) -> list[Any]:
    try:
        compute = pickle.loads(payload)
    except Exception as error:
        raise _NotReceived(f"{type(error).__name__}: {error}") from None
    return [compute(arguments, None) for arguments in chunk]


def _why(owner: str, processes: int, error: object) -> str:
    return (
        f"{owner}: processes = {processes} runs its host methods in worker processes, which "
        f"receive the adapter pickled, but it cannot be sent ({error}). Define its class, "
        "and any class or function among its parameters, at the top level of a module that "
        "a new interpreter can import (not in a function or a notebook cell)."
    )


@functools.cache
def _workers(processes: int) -> tuple[ProcessPoolExecutor, ...]:
    """One executor per worker process, so that chunk ``i`` of every call goes to worker
    ``i``: a backward meets the host state its forward left for the same elements (the
    solutions ``OdeSolve`` keeps for its derivatives), as long as the batch is the same."""
    context = multiprocessing.get_context("spawn")
    return tuple(ProcessPoolExecutor(1, mp_context=context) for _ in range(processes))


# A forked child inherits the workers without their processes: it starts its own.
os.register_at_fork(after_in_child=_workers.cache_clear)
