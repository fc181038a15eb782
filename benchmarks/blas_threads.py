"""What do OpenBLAS's idle threads cost the adapters that hold them (``blas_threads = 1``)?

OpenBLAS at one thread per core (its default), each workload timed with the adapter as it
ships (OpenBLAS held to one thread during its host calls) and with the setting off
(``blas_threads = None``), on a quiet machine and beside one busy process per two cores
(what a test runner, a data loader or another job is to a real program). The workloads
are those whose host work was seen to wake OpenBLAS's threads: ``Minimize`` (L-BFGS-B)
over 8 Rosenbrock problems, the gradient of ``MatrixLog`` (50 x 50),
``LinearNDInterpolator`` (200 points, 400 queries); and, for what the setting cannot
reach, XLA's own ``jnp.linalg.solve`` (n = 200, forward and gradient: XLA calls SciPy's
OpenBLAS from its own threads) and SciPy's ``lu_factor`` at n = 1000 on one thread against
all (where BLAS threads may pay). Medians of interleaved rounds; ratios to the first row of
each table. Not a test: nothing is asserted.

    python benchmarks/blas_threads.py           # 9 rounds
    python benchmarks/blas_threads.py --quick   # 2 rounds: a smoke run
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from _timing import medians
from solvers import Rosenbrock  # (64-bit mode on)
from threadpoolctl import threadpool_limits

from jaxbridge.adapters.interpolate import LinearNDInterpolator
from jaxbridge.adapters.linalg import MatrixLog
from jaxbridge.adapters.optimize import Minimize

CORES = os.cpu_count() or 1


class FreeMinimize(Minimize):
    blas_threads = None


class FreeMatrixLog(MatrixLog):
    blas_threads = None


class FreeLinearND(LinearNDInterpolator):
    blas_threads = None


def spin() -> None:
    while True:
        pass


def workloads() -> dict[str, tuple[Callable[[], object], Callable[[], object], int]]:
    """Each workload: (as shipped, with the setting off, calls per timing), compiled."""
    rng = np.random.default_rng(0)
    thetas = jnp.asarray(np.stack([rng.uniform(0.5, 1.5, 8), rng.uniform(3.0, 7.0, 8)], -1))
    x0 = jnp.asarray(np.tile([-1.2, 1.0], (8, 1)))
    a = jnp.asarray(np.eye(50) * 3 + rng.normal(size=(50, 50)) / 7)
    points = jnp.asarray(rng.uniform(0, 1, (200, 2)))
    values = jnp.asarray(np.sin(3 * points[:, 0]) * points[:, 1])
    xi = jnp.asarray(rng.uniform(0.1, 0.9, (400, 2)))

    def pair(make, inner=1):
        return make(True), make(False), inner

    def minimize(held):
        solve = jax.jit(jax.vmap((Minimize if held else FreeMinimize)(Rosenbrock())))
        return lambda: solve(x0, thetas)

    def matrix_log(held):
        adapter = (MatrixLog if held else FreeMatrixLog)()
        grad = jax.jit(jax.grad(lambda a: (adapter(a) ** 2).sum()))
        return lambda: grad(a)

    def linear_nd(held):
        adapter = (LinearNDInterpolator if held else FreeLinearND)()
        call = jax.jit(adapter)
        return lambda: call(points, values, xi)

    return {
        "Minimize(L-BFGS-B), vmap over 8 Rosenbrock problems": pair(minimize),
        "grad of MatrixLog, 50 x 50": pair(matrix_log),
        "LinearNDInterpolator, 200 points, 400 queries": pair(linear_nd, inner=20),
    }


def table(title: str, times: dict[str, float], base: str) -> None:
    print(f"\n{title}")
    for name, seconds in times.items():
        print(f"  {name:58} {seconds * 1e3:>8.2f} ms {seconds / times[base]:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds: a smoke run")
    rounds = 2 if parser.parse_args().quick else 9

    rng = np.random.default_rng(1)
    b = jnp.asarray(rng.normal(size=200))
    m = jnp.asarray(np.eye(200) * 20 + rng.normal(size=(200, 200)))
    solve = jax.jit(lambda m, b: jnp.linalg.solve(m, b))
    solve_grad = jax.jit(jax.grad(lambda m, b: jnp.linalg.solve(m, b).sum()))
    big = rng.normal(size=(1000, 1000))

    with threadpool_limits(CORES, user_api="blas"):  # OpenBLAS's default, whatever the env
        loads = workloads()
        busy = max(1, CORES // 2)
        for label, spinners in (("quiet", 0), (f"beside {busy} busy process(es)", busy)):
            context = multiprocessing.get_context("spawn")
            others = [context.Process(target=spin, daemon=True) for _ in range(spinners)]
            for process in others:
                process.start()
            try:
                for name, (shipped, free, inner) in loads.items():
                    contenders = {"blas_threads = 1 (as shipped)": shipped, "None": free}
                    table(
                        f"{name}, {label}, OpenBLAS at {CORES} threads",
                        medians(contenders, rounds, inner),
                        "blas_threads = 1 (as shipped)",
                    )
                times = medians(
                    {"forward": lambda: solve(m, b), "gradient": lambda: solve_grad(m, b)},
                    rounds,
                    inner=20,
                )
                with threadpool_limits(1, user_api="blas"):
                    one = medians(
                        {"forward": lambda: solve(m, b), "gradient": lambda: solve_grad(m, b)},
                        rounds,
                        inner=20,
                    )
                table(
                    f"XLA's jnp.linalg.solve, n = 200, {label} (no adapter: out of reach)",
                    {
                        f"forward, {CORES} threads": times["forward"],
                        "forward, 1 thread": one["forward"],
                        f"gradient, {CORES} threads": times["gradient"],
                        "gradient, 1 thread": one["gradient"],
                    },
                    f"forward, {CORES} threads",
                )

                def lu(threads: int) -> Callable[[], object]:
                    def run():
                        with threadpool_limits(threads, user_api="blas"):
                            return scipy.linalg.lu_factor(big)

                    return run

                table(
                    f"scipy.linalg.lu_factor, n = 1000, {label}: where BLAS threads may pay",
                    medians({f"{CORES} threads": lu(CORES), "1 thread": lu(1)}, rounds),
                    f"{CORES} threads",
                )
            finally:
                for process in others:
                    process.terminate()


if __name__ == "__main__":
    main()
