"""Does a process pool over a batch beat the bridge's one host thread for solver adapters?

A batch of independent SciPy solves, each holding the GIL for its whole Python loop (an
``OdeSolve`` with BDF: 20-50 ms each), timed side by side: SciPy called directly in a loop,
``jit(vmap(OdeSolve))`` (the bridge loops over the batch on one thread, on two with
``threads = 2``, or in worker processes with ``processes`` set to the number of cores, for
the value and for ``value_and_grad``), and the same ``solve_ivp`` calls sent to a pool of
worker processes of this script's own (``spawn``: forking a process that runs JAX's
threads is unsafe), one task per element and one task per worker. Then the same with cheap
solves (~1 ms), where shipping the work costs more. The pools' start-up (new interpreters
importing this script, with JAX) is timed apart. Not a test: nothing is asserted.

    python benchmarks/host_parallelism.py           # 7 rounds
    python benchmarks/host_parallelism.py --quick   # 2 rounds: a smoke run
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate
from _timing import medians
from solvers import Robertson, robertson, robertson_jacobian  # (64-bit mode on)

from jaxbridge.adapters.integrate import OdeSolve

BATCH = 64
TIMES = np.array([0.0, 40.0])
WORKERS = os.cpu_count() or 1


class InWorkers(OdeSolve):
    """``OdeSolve`` with its batch shared by one worker process per core."""

    processes = WORKERS


def solve_one(theta: np.ndarray, end: float) -> np.ndarray:
    """One element's work: what ``OdeSolve``'s forward asks of SciPy."""
    return scipy.integrate.solve_ivp(
        robertson,
        (0.0, end),
        np.array([1.0, 0.0, 0.0]),
        method="BDF",
        t_eval=np.array([0.0, end]),
        args=(theta,),
        jac=robertson_jacobian,
        rtol=1e-6,
        atol=1e-10,
    ).y.T


def solve_many(thetas: np.ndarray, end: float) -> list[np.ndarray]:
    return [solve_one(theta, end) for theta in thetas]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, a smaller batch")
    options = parser.parse_args()
    rounds, batch = (2, 4) if options.quick else (7, BATCH)

    class TwoThreads(OdeSolve):
        threads = 2

    workers = WORKERS
    rng = np.random.default_rng(0)
    thetas = np.log([0.04, 3.0e7, 1.0e4]) + 0.1 * rng.normal(size=(batch, 3))
    context = multiprocessing.get_context("spawn")
    start = time.perf_counter()
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context)
    list(pool.map(solve_many, np.array_split(thetas, workers), [1e-3] * workers))
    started = time.perf_counter() - start
    print(
        f"float64, medians of {rounds} interleaved rounds, a batch of {batch}, {workers} "
        f"worker processes (started and warmed up in {started:.2f} s)"
    )
    y0 = jnp.array([1.0, 0.0, 0.0])
    tolerances = {"rtol": 1e-6, "atol": 1e-10}
    start = time.perf_counter()
    warm = jax.jit(jax.vmap(InWorkers(Robertson(), **tolerances), in_axes=(None, 0, None)))
    jax.block_until_ready(warm(y0, jnp.asarray(thetas[:workers]), jnp.array([0.0, 1e-3])))
    print(f"(processes = {workers}: its workers started in {time.perf_counter() - start:.2f} s)")
    for end, label in ((40.0, "Robertson over [0, 40], BDF"), (1e-3, "over [0, 1e-3]")):
        ts = jnp.array([0.0, end])

        def bridged(adapter):
            solve = jax.jit(jax.vmap(adapter, in_axes=(None, 0, None)))
            return lambda: solve(y0, jnp.asarray(thetas), ts)

        def gradient(adapter):
            def loss(theta):  # (y₁ + y₂ + y₃ is conserved: weights that are not all equal)
                solved = jax.vmap(adapter, in_axes=(None, 0, None))(y0, theta, ts)
                return (solved[:, -1] @ jnp.array([1.0, 1e4, 1.0])).sum()

            value_and_grad = jax.jit(jax.value_and_grad(loss))
            return lambda: value_and_grad(jnp.asarray(thetas))

        chunks = np.array_split(thetas, workers)
        contenders = {
            "scipy loop, one process": lambda end=end: solve_many(thetas, end),
            "jit(vmap(OdeSolve)) value": bridged(OdeSolve(Robertson(), **tolerances)),
            "  the same, threads = 2": bridged(TwoThreads(Robertson(), **tolerances)),
            f"  the same, processes = {workers}": bridged(InWorkers(Robertson(), **tolerances)),
            "jit(value_and_grad), adjoint": gradient(
                OdeSolve(Robertson(), sensitivity="adjoint", **tolerances)
            ),
            f"  its value_and_grad, processes = {workers}": gradient(
                InWorkers(Robertson(), sensitivity="adjoint", **tolerances)
            ),
            "process pool, a task per element": lambda end=end: list(
                pool.map(solve_one, thetas, [end] * len(thetas))
            ),
            "process pool, a task per worker": lambda end=end: list(
                pool.map(solve_many, chunks, [end] * len(chunks))
            ),
        }
        times = medians(contenders, rounds)
        print(f"\n{batch} solves of {label}")
        print(f"  {'':40} {'median':>10} {'÷ first':>8}")
        first = next(iter(times.values()))
        for name, seconds in times.items():
            print(f"  {name:40} {seconds * 1e3:8.2f} ms {seconds / first:8.2f}")
    pool.shutdown()


if __name__ == "__main__":
    main()
