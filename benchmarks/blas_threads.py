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
all (where BLAS threads may pay). Then the audit (#47): adapters whose host work calls
BLAS or LAPACK, each compiled once and timed three ways in the same rounds: as shipped
(their own ``blas_threads``), with every hold off (``blas_threads = None`` everywhere: the
bridge's hold switched off at run time) and with OpenBLAS held to one thread around the
whole call (what a hold on every host call would give): the interpolants that hold it
since #47 (``RegularGridInterpolator("cubic")`` 40 x 40 at 1e4 queries, ``value_and_grad``
in the values; a periodic ``CubicSpline`` of 200 knots at 1e4 queries in ``y``;
``RBFInterpolator``, 300 sites, 2,000 queries, its value and ``value_and_grad`` in the
sites), ``solve_continuous_are``'s gradient (20 x 20) and ``LinearSolve``'s (200 x 200)
and value (1000 x 1000), held since; and those that leave it (``sqrtm``'s gradient,
50 x 50; ``SylvesterSolve``'s, 50 x 50); then those held since the audit's second part:
``LsqLinear`` (trf and bvls, 200 x 50) and ``Nnls`` (1000 x 200), ``value_and_grad`` in
``A`` and ``b``; ``Linprog``'s (200 unknowns, 300 rows: its rules' dense solves);
``Eigsh``'s with its vectors (sigma = 0, 10,000 unknowns: the bordered solves of the
vectors' rule); ``ExpmMultiply``'s in ``data`` (n = 500, 16 columns: the data cotangent)
and its value (no BLAS: a control); ``SplineFilter``'s (200 x 200: its transpose); the
values of ``OperatorEigsh`` (2,000 springs) and ``Svds`` (3000 x 2000, k = 6); and one
left: ``Cdist("mahalanobis")``'s value (3000 x 100 in 50-D, SciPy's default ``VI``).
Medians of interleaved rounds; ratios to the first row of each table. Not a test: nothing
is asserted.

    python benchmarks/blas_threads.py           # 9 rounds
    python benchmarks/blas_threads.py --quick   # 2 rounds: a smoke run
    python benchmarks/blas_threads.py --audit-only --match LinearSolve  # those rows alone
    python benchmarks/blas_threads.py --audit-only --match "Nnls|Linprog"  # rows of either
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
import scipy.sparse
from _timing import medians
from solvers import Rosenbrock  # (64-bit mode on)
from sparse import expm_matrix, laplacian
from threadpoolctl import threadpool_limits

import jaxbridge as jb
import jaxbridge._blas as blas
from jaxbridge.adapters.interpolate import (
    CubicSpline,
    LinearNDInterpolator,
    RBFInterpolator,
    RegularGridInterpolator,
)
from jaxbridge.adapters.linalg import (
    LinearSolve,
    MatrixLog,
    SylvesterSolve,
    solve_continuous_are,
    sqrtm,
)
from jaxbridge.adapters.ndimage import SplineFilter
from jaxbridge.adapters.optimize import Linprog, LsqLinear, Minimize, Nnls
from jaxbridge.adapters.sparse import Eigsh, ExpmMultiply, OperatorEigsh, Svds
from jaxbridge.adapters.spatial import Cdist

CORES = os.cpu_count() or 1


class FreeMinimize(Minimize):
    blas_threads = None


class FreeMatrixLog(MatrixLog):
    blas_threads = None


class FreeLinearND(LinearNDInterpolator):
    blas_threads = None


class Springs(jb.Adapter):
    """A chain of springs of stiffness ``theta`` between two walls: ``OperatorEigsh``'s
    operator (its host forward alone is called)."""

    signature = "(n),(p)->(n)"
    vectorized = True

    def forward(self, x, theta):
        forces = theta * np.diff(np.pad(x, [(0, 0)] * (x.ndim - 1) + [(1, 1)]), axis=-1)
        return forces[..., :-1] - forces[..., 1:]


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


def unheld(run: Callable[[], object]) -> Callable[[], object]:
    """``run`` with every adapter's hold off (``blas_threads = None`` everywhere)."""

    def call() -> object:
        hold, release = blas._hold, blas._release
        blas._hold, blas._release = (lambda threads: None), (lambda: None)
        try:
            return jax.block_until_ready(run())
        finally:
            blas._hold, blas._release = hold, release

    return call


def held(run: Callable[[], object]) -> Callable[[], object]:
    """``run`` with OpenBLAS held to one thread around the whole call."""

    def call() -> object:
        blas._hold(1)
        try:
            return jax.block_until_ready(run())
        finally:
            blas._release()

    return call


def audited() -> dict[str, tuple[Callable[[], object], int]]:
    """The audit's workloads, compiled: (the call, calls per timing)."""
    rng = np.random.default_rng(2)
    side, m = 40, 10_000
    axes = (np.linspace(0.0, 1.0, side), np.linspace(0.0, 2.0, side))
    values = jnp.asarray(np.sin(3 * axes[0])[:, None] * np.cos(axes[1])[None, :])
    xi = jnp.asarray(np.stack([rng.uniform(0, 1, m), rng.uniform(0, 2, m)], -1))
    w = jnp.asarray(rng.normal(size=m))
    grid = RegularGridInterpolator("cubic")
    grid_grad = jax.jit(jax.value_and_grad(lambda v: jnp.vdot(w, grid(axes, v, xi))))
    x = jnp.asarray(np.linspace(0.0, 2 * np.pi, 200))
    y = jnp.sin(x)
    xq = jnp.asarray(rng.uniform(0.0, 2 * np.pi, m))
    periodic = CubicSpline("periodic")
    spline_grad = jax.jit(jax.value_and_grad(lambda y: jnp.vdot(w, periodic(x, y, xq))))
    sites = jnp.asarray(rng.uniform(0, 1, (300, 2)))
    data = jnp.sin(4 * sites[:, 0]) * sites[:, 1]
    queries = jnp.asarray(rng.uniform(0.1, 0.9, (2000, 2)))
    rbf = RBFInterpolator()
    rbf_value = jax.jit(rbf)
    rbf_grad = jax.jit(jax.value_and_grad(lambda s: rbf(s, data, queries).sum()))
    a50 = jnp.asarray(np.eye(50) * 3 + rng.normal(size=(50, 50)) / 7)
    sqrtm_grad = jax.jit(jax.grad(lambda a: (sqrtm(a) ** 2).sum()))
    b50 = jnp.asarray(np.eye(50) * 2 + rng.normal(size=(50, 50)) / 7)
    q50 = jnp.asarray(rng.normal(size=(50, 50)))
    sylvester = SylvesterSolve()
    sylvester_grad = jax.jit(jax.grad(lambda a, b: (sylvester(a, b, q50) ** 2).sum(), (0, 1)))
    a20 = jnp.asarray(rng.normal(size=(20, 20)) / 5 - np.eye(20))
    b20 = jnp.asarray(rng.normal(size=(20, 3)))
    eye20, eye3 = jnp.eye(20), jnp.eye(3)
    care_grad = jax.jit(jax.grad(lambda a: solve_continuous_are(a, b20, eye20, eye3).sum()))
    m200 = jnp.asarray(np.eye(200) * 20 + rng.normal(size=(200, 200)))
    r200 = jnp.asarray(rng.normal(size=200))
    solve_grad = jax.jit(jax.grad(lambda m: LinearSolve()(m, r200).sum()))
    m1000 = jnp.asarray(np.eye(1000) * 40 + rng.normal(size=(1000, 1000)))
    r1000 = jnp.asarray(rng.normal(size=1000))
    solve_big = jax.jit(LinearSolve())
    a_lsq = jnp.asarray(rng.normal(size=(200, 50)))
    b_lsq = jnp.asarray(rng.normal(size=200))
    box = jnp.full(50, -0.2), jnp.full(50, 0.2)

    def lsq(method):
        adapter = LsqLinear(method)
        return jax.jit(jax.value_and_grad(lambda a, b: adapter(a, b, *box)[0].sum(), (0, 1)))

    lsq_trf, lsq_bvls = lsq("trf"), lsq("bvls")
    a_nnls = jnp.asarray(rng.normal(size=(1000, 200)))
    b_nnls = jnp.asarray(rng.normal(size=1000))
    nnls = Nnls()
    nnls_grad = jax.jit(jax.value_and_grad(lambda a, b: nnls(a, b)[0].sum(), (0, 1)))
    a_lp = jnp.asarray(rng.uniform(0.1, 1.0, (300, 200)))
    b_lp, c_lp = a_lp.sum(1) * 2, jnp.asarray(-rng.uniform(0.5, 1.5, 200))
    linprog = Linprog()
    upper = jnp.full(200, 3.0)
    lp_grad = jax.jit(jax.value_and_grad(lambda c, a: linprog(c, a, b_lp, upper=upper)[1], (0, 1)))
    lap = laplacian(100)
    eigsh = Eigsh(lap.indices, lap.indptr, lap.shape, k=4, sigma=0.0)
    lap_data = jnp.asarray(lap.data * (1 + 0.01 * rng.uniform(size=lap.nnz)))
    w_eigsh = jnp.asarray(rng.normal(size=(100**2, 4)))
    eigsh_grad = jax.jit(
        jax.value_and_grad(lambda d: (lambda w, v: w.sum() + jnp.vdot(w_eigsh, v))(*eigsh(d)))
    )
    expm_a = expm_matrix(500)
    expm = ExpmMultiply(expm_a.indices, expm_a.indptr, expm_a.shape)
    b_expm = jnp.asarray(rng.normal(size=(500, 16)))
    w_expm = jnp.asarray(rng.normal(size=(500, 16)))
    expm_data = jnp.asarray(expm_a.data)
    expm_value = jax.jit(expm)
    expm_grad = jax.jit(jax.value_and_grad(lambda d: jnp.vdot(w_expm, expm(d, b_expm, 1.0))))
    image = jnp.asarray(rng.normal(size=(200, 200)))
    spline_filter = SplineFilter()
    filter_grad = jax.jit(jax.value_and_grad(lambda i: (spline_filter(i) ** 2).sum()))
    springs = OperatorEigsh(Springs(), k=6, which="LA", n=2000)
    stiffness = jnp.asarray(1 + 0.5 * rng.uniform(size=2001))
    springs_value = jax.jit(springs)
    sv = scipy.sparse.random_array((3000, 2000), density=0.003, rng=rng, format="csr")
    sv = scipy.sparse.csr_array(sv + scipy.sparse.eye_array(3000, 2000, format="csr"))
    sv.sort_indices()
    svds_value = jax.jit(Svds(sv.indices, sv.indptr, sv.shape, k=6))
    sv_data = jnp.asarray(sv.data)
    xa_50, xb_50 = jnp.asarray(rng.normal(size=(3000, 50))), jnp.asarray(rng.normal(size=(100, 50)))
    mahalanobis = jax.jit(Cdist("mahalanobis"))
    return {
        'RegularGridInterpolator("cubic") 40x40, 1e4 queries, v_and_g in values': (
            lambda: grid_grad(values),
            1,
        ),
        'CubicSpline("periodic"), 200 knots, 1e4 queries, v_and_g in y': (
            lambda: spline_grad(y),
            1,
        ),
        "RBFInterpolator, 300 sites, 2000 queries, value": (
            lambda: rbf_value(sites, data, queries),
            1,
        ),
        "RBFInterpolator, the same, v_and_g in the sites": (lambda: rbf_grad(sites), 1),
        "sqrtm, 50 x 50, grad": (lambda: sqrtm_grad(a50), 3),
        "SylvesterSolve, 50 x 50, grad in a and b": (lambda: sylvester_grad(a50, b50), 5),
        "solve_continuous_are, 20 x 20, grad in a": (lambda: care_grad(a20), 5),
        "LinearSolve, 200 x 200, grad in the matrix": (lambda: solve_grad(m200), 10),
        "LinearSolve, 1000 x 1000, value": (lambda: solve_big(m1000, r1000), 1),
        'LsqLinear("trf"), 200 x 50, v_and_g in A and b': (lambda: lsq_trf(a_lsq, b_lsq), 1),
        'LsqLinear("bvls"), 200 x 50, v_and_g in A and b': (lambda: lsq_bvls(a_lsq, b_lsq), 5),
        "Nnls, 1000 x 200, v_and_g in A and b": (lambda: nnls_grad(a_nnls, b_nnls), 1),
        "Linprog, 200 unknowns, 300 rows, v_and_g in c and A_ub": (
            lambda: lp_grad(c_lp, a_lp),
            1,
        ),
        "Eigsh(sigma=0), 10,000 Laplacian, k=4, v_and_g (vectors)": (
            lambda: eigsh_grad(lap_data),
            1,
        ),
        "ExpmMultiply, n = 500, 16 columns, v_and_g in data": (lambda: expm_grad(expm_data), 1),
        "ExpmMultiply, the same, value": (lambda: expm_value(expm_data, b_expm, 1.0), 3),
        "SplineFilter, 200 x 200, v_and_g": (lambda: filter_grad(image), 3),
        "OperatorEigsh, 2,000 springs, k=6, value": (lambda: springs_value(stiffness), 3),
        "Svds, 3000 x 2000 (19,900 entries), k=6, value": (lambda: svds_value(sv_data), 1),
        'Cdist("mahalanobis"), 3000 x 100 in 50-D, value (VI by default)': (
            lambda: mahalanobis(xa_50, xb_50),
            1,
        ),
    }


def table(title: str, times: dict[str, float], base: str) -> None:
    print(f"\n{title}")
    for name, seconds in times.items():
        print(f"  {name:58} {seconds * 1e3:>8.2f} ms {seconds / times[base]:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds: a smoke run")
    parser.add_argument("--audit-only", action="store_true", help="the audit's tables alone")
    parser.add_argument(
        "--match",
        default="",
        help="only the audit's rows whose name has this (or one of a|b|...)",
    )
    options = parser.parse_args()
    rounds = 2 if options.quick else 9

    rng = np.random.default_rng(1)
    b = jnp.asarray(rng.normal(size=200))
    m = jnp.asarray(np.eye(200) * 20 + rng.normal(size=(200, 200)))
    solve = jax.jit(lambda m, b: jnp.linalg.solve(m, b))
    solve_grad = jax.jit(jax.grad(lambda m, b: jnp.linalg.solve(m, b).sum()))
    big = rng.normal(size=(1000, 1000))

    with threadpool_limits(CORES, user_api="blas"):  # OpenBLAS's default, whatever the env
        loads = workloads()
        audit = audited()
        busy = max(1, CORES // 2)
        for label, spinners in (("quiet", 0), (f"beside {busy} busy process(es)", busy)):
            context = multiprocessing.get_context("spawn")
            others = [context.Process(target=spin, daemon=True) for _ in range(spinners)]
            for process in others:
                process.start()
            try:
                for name, (run, inner) in audit.items():
                    if not any(part in name for part in options.match.split("|")):
                        continue
                    contenders = {
                        "as shipped": run,
                        "every hold off": unheld(run),
                        "one thread around the call": held(run),
                    }
                    table(
                        f"{name}, {label}, OpenBLAS at {CORES} threads",
                        medians(contenders, rounds, inner),
                        "as shipped",
                    )
                if options.audit_only:
                    continue
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
