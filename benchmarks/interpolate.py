"""How close to SciPy called directly is a bridged cubic spline, under ``jit`` and ``grad``?

For a cubic spline (not-a-knot) through n = 1,000 knots evaluated at m = 100,000 query
points, in float64, side by side in one process (interleaved rounds, medians):

- evaluation: ``jit(make_interp_spline)(x, y, xq)`` against
  ``scipy.interpolate.make_interp_spline(x, y)(xq)``;
- ``jit(value_and_grad)`` of ``<w, s(xq)>`` in ``y`` against SciPy by hand: the spline's
  value, then ``ȳ`` = the transposed B-spline design matrix at ``xq`` times ``w`` and the
  transposed collocation system solved by sparse LU (what the adapter's rule does);
- ``jit(value_and_grad)`` in ``xq`` against SciPy by hand: ``s(xq)`` and ``s'(xq) * w``;
- ``jit(grad)`` in the sites ``x`` against ``jit(grad)`` in ``y`` (SciPy has no derivative
  in ``x``: the ratio says what differentiating the construction costs);

and the same three through interpax's native-JAX ``CubicSpline`` (the same function; if
``pip install -e ".[bench]"`` installed it). Then, against SciPy's objects built and
evaluated directly: ``RegularGridInterpolator("cubic")`` on a 40 x 40 grid at 10,000 queries
(evaluation; ``value_and_grad`` in ``xi`` against SciPy's value and its two ``nu=``
partials; in ``values`` against the value alone, SciPy having no such derivative: the same
data every call, so the host's built interpolant serves them all, where ``--fresh-only``'s
row gives new data every call), and
``RBFInterpolator()`` through 300 sites in the plane at 2,000 queries (evaluation;
``value_and_grad`` in ``x`` and in the sites ``y`` against SciPy's value alone). Last, the
grid's ``value_and_grad`` in ``values`` again, in a new process with OpenBLAS at its default
(``OPENBLAS_NUM_THREADS`` removed from the environment: one thread per core), on the quiet
machine and beside busy processes (one per two cores, spinning for that measurement only):
the skinny matrix product of its transpose had OpenBLAS's threads busy-wait, 4x SciPy's
value in some rounds and 118x in others before the adapter held OpenBLAS to one thread
(``blas_threads = 1``). Prints times and ratios to SciPy. Not a test: nothing is asserted.

    python benchmarks/interpolate.py           # n = 1,000, m = 100,000: about a minute
    python benchmarks/interpolate.py --quick   # n = 50, m = 1,000: a smoke run of seconds
    python benchmarks/interpolate.py --fresh-only  # the rows with new data every call alone
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.interpolate  # noqa: E402
import scipy.sparse.linalg  # noqa: E402
from _timing import medians  # noqa: E402

from jaxbridge.adapters.interpolate import (  # noqa: E402
    CubicSpline,
    RBFInterpolator,
    RegularGridInterpolator,
    make_interp_spline,
)

try:
    import interpax  # type: ignore[import-not-found]
except ImportError:  # the bench extra is not installed
    interpax = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 50, m = 1,000, few rounds")
    parser.add_argument("--n", type=int, help="knots (default 1,000)")
    parser.add_argument("--m", type=int, help="query points (default 100,000)")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 21, 3 with --quick)")
    parser.add_argument(
        "--fresh-only",
        action="store_true",
        help="only the rows with new data every call (splines of 100 knots, the 40 x 40 grid)",
    )
    parser.add_argument("--grid-under-load", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.grid_under_load:  # the child process of grid_with_default_blas
        grid_under_load(options.quick, options.rounds or (3 if options.quick else 21))
        return
    n = options.n or (50 if options.quick else 1000)
    m = options.m or (1000 if options.quick else 100_000)
    rounds = options.rounds or (3 if options.quick else 21)
    if options.fresh_only:
        fresh_data(options.quick, rounds)
        return

    rng = np.random.default_rng(0)
    x_host = np.sort(rng.uniform(0.0, 10.0, n))
    y_host = np.sin(x_host)
    xq_host = rng.uniform(0.0, 10.0, m)
    w_host = rng.normal(size=m)
    x, y, xq, w = (jnp.asarray(a) for a in (x_host, y_host, xq_host, w_host))

    def scipy_eval():
        return scipy.interpolate.make_interp_spline(x_host, y_host)(xq_host)

    def scipy_grad_y():
        spline = scipy.interpolate.make_interp_spline(x_host, y_host)
        value = spline(xq_host) @ w_host
        basis = scipy.interpolate.BSpline.design_matrix(xq_host, spline.t, 3, extrapolate=True)
        colloc = scipy.interpolate.BSpline.design_matrix(x_host, spline.t, 3)
        return value, scipy.sparse.linalg.splu(colloc.T.tocsc()).solve(basis.T @ w_host)

    def scipy_grad_xq():
        spline = scipy.interpolate.make_interp_spline(x_host, y_host)
        return spline(xq_host) @ w_host, spline(xq_host, 1) * w_host

    def objective(spline):
        return lambda y, q: jnp.vdot(w, spline(x, y, q))

    bridged = make_interp_spline
    contenders = {
        "eval": {
            "SciPy": scipy_eval,
            "jaxbridge": lambda f=jax.jit(bridged): f(x, y, xq),
        },
        "value_and_grad in y": {
            "SciPy": scipy_grad_y,
            "jaxbridge": lambda f=jax.jit(jax.value_and_grad(objective(bridged))): f(y, xq),
        },
        "value_and_grad in xq": {
            "SciPy": scipy_grad_xq,
            "jaxbridge": lambda f=jax.jit(jax.value_and_grad(objective(bridged), argnums=1)): f(
                y, xq
            ),
        },
    }
    if interpax is not None:

        def native(x, y, q):
            return interpax.CubicSpline(x, y, check=False)(q)

        contenders["eval"]["interpax"] = lambda f=jax.jit(native): f(x, y, xq)
        contenders["value_and_grad in y"]["interpax"] = (
            lambda f=jax.jit(jax.value_and_grad(objective(native))): f(y, xq)
        )
        contenders["value_and_grad in xq"]["interpax"] = (
            lambda f=jax.jit(jax.value_and_grad(objective(native), argnums=1)): f(y, xq)
        )

    print(f"cubic spline, n = {n} knots, m = {m} queries, float64, {rounds} rounds (medians)")
    print(f"{'question':<24}{'SciPy':>11}{'jaxbridge':>22}{'interpax':>22}")
    for question, runs in contenders.items():
        times = medians(runs, rounds)
        base = times["SciPy"]
        cells = [f"{base * 1e3:8.2f} ms"]
        for name in ("jaxbridge", "interpax"):
            t = times.get(name)
            cells.append("n/a" if t is None else f"{t * 1e3:8.2f} ms ({t / base:4.2f}x)")
        print(f"{question:<24}{cells[0]:>11}{cells[1]:>22}{cells[2]:>22}")
    sites_against_data(bridged, x, y, xq, w, rounds)
    fresh_data(options.quick, rounds)
    grid_and_scattered(options.quick, rounds)
    grid_with_default_blas(options.quick, rounds)


def sites_against_data(spline, x, y, xq, w, rounds: int) -> None:
    """``jit(grad)`` of ``<w, s(xq)>`` in the sites against the same in the data."""

    def objective(x, y):
        return jnp.vdot(w, spline(x, y, xq))

    in_x, in_y = jax.jit(jax.grad(objective, 0)), jax.jit(jax.grad(objective, 1))
    times = medians({"x": lambda: in_x(x, y), "y": lambda: in_y(x, y)}, rounds)
    print(
        f"grad in the sites x: {times['x'] * 1e3:8.2f} ms, in y: {times['y'] * 1e3:8.2f} ms "
        f"({times['x'] / times['y']:4.2f}x)"
    )


def cycling(calls: list) -> object:
    """One call after another from ``calls`` (each on its own data), round after round."""
    state = {"i": 0}

    def call():
        state["i"] = (state["i"] + 1) % len(calls)
        return calls[state["i"]]()

    return call


def fresh_data(quick: bool, rounds: int) -> None:
    """#47's rows: ``CubicSpline`` and ``make_interp_spline`` through 100 knots at 10,000
    queries, ``value_and_grad`` in ``y`` and in ``xq``, and the cubic grid's in ``xi`` and
    (#56) in ``values``, each against SciPy's value alone (built and evaluated), with
    interpax beside. Every call gets data of its own (5 sets in turn), so that nothing the
    host kept from the last call (the built interpolant, the queries' order:
    ``adapters/interpolate/_recent.py``) serves the next: what is reused is what the same
    gradient built."""
    n, m, sets = (20, 1000, 5) if quick else (100, 10_000, 5)
    rng = np.random.default_rng(2)
    x_host = np.sort(rng.uniform(0.0, 10.0, n))
    data = [(np.sin(x_host) + 0.01 * k, rng.uniform(0.0, 10.0, m)) for k in range(sets)]
    w = jnp.asarray(rng.normal(size=m))
    x = jnp.asarray(x_host)
    device = [(jnp.asarray(y), jnp.asarray(q)) for y, q in data]

    def scipy_value(make):
        return cycling([lambda y=y, q=q: make(x_host, y)(q) for y, q in data])

    def bridged(spline, argnum):
        f = jax.jit(jax.value_and_grad(lambda y, q: jnp.vdot(w, spline(x, y, q)), argnum))
        return cycling([lambda y=y, q=q: f(y, q) for y, q in device])

    rows = {}
    for name, spline, make in (
        ("CubicSpline", CubicSpline(), scipy.interpolate.CubicSpline),
        ("make_interp_spline", make_interp_spline, scipy.interpolate.make_interp_spline),
    ):
        for argnum, wrt in ((0, "y"), (1, "xq")):
            rows[f"{name} v_and_g in {wrt}"] = {
                "SciPy": scipy_value(make),
                "jaxbridge": bridged(spline, argnum),
            }
            if interpax is not None:
                rows[f"{name} v_and_g in {wrt}"]["interpax"] = bridged(
                    lambda x, y, q: interpax.CubicSpline(x, y, check=False)(q), argnum
                )

    side, m_grid = (10, 500) if quick else (40, 10_000)
    a, b = np.linspace(0.0, 1.0, side), np.linspace(0.0, 2.0, side)
    grids = [
        (
            np.sin(3 * a + 0.01 * k)[:, None] * np.cos(b)[None, :],
            np.stack([rng.uniform(0, 1, m_grid), rng.uniform(0, 2, m_grid)], axis=-1),
        )
        for k in range(sets)
    ]
    w_grid = jnp.asarray(rng.normal(size=m_grid))
    grid = RegularGridInterpolator("cubic")
    solver = scipy.sparse.linalg.spsolve
    on_device = [(jnp.asarray(v), jnp.asarray(q)) for v, q in grids]
    for argnum, wrt in ((1, "xi"), (0, "values")):  # (#56: in the values)
        bridged_grid = jax.jit(
            jax.value_and_grad(lambda v, q: jnp.vdot(w_grid, grid((a, b), v, q)), argnum)
        )
        rows[f"grid cubic v_and_g in {wrt}"] = {
            "SciPy": cycling(
                [
                    lambda v=v, q=q: scipy.interpolate.RegularGridInterpolator(
                        (a, b), v, method="cubic", solver=solver
                    )(q)
                    for v, q in grids
                ]
            ),
            "jaxbridge": cycling([lambda v=v, q=q, f=bridged_grid: f(v, q) for v, q in on_device]),
        }
        if interpax is not None:
            native = jax.jit(
                jax.value_and_grad(
                    lambda v, q: jnp.vdot(
                        w_grid,
                        interpax.interp2d(q[:, 0], q[:, 1], a, b, v, method="cubic2"),
                    ),
                    argnum,
                )
            )
            rows[f"grid cubic v_and_g in {wrt}"]["interpax"] = cycling(
                [lambda v=v, q=q, f=native: f(v, q) for v, q in on_device]
            )
    print(
        f"\n#47's rows: splines of {n} knots at {m} queries, a {side}x{side} grid at {m_grid}; "
        f"each ÷ SciPy's value alone (built and evaluated); new data every call; {rounds} "
        "rounds (medians)"
    )
    print(f"{'question':<34}{'SciPy':>11}{'jaxbridge':>22}{'interpax':>22}")
    for question, runs in rows.items():
        times = medians(runs, rounds)
        base = times["SciPy"]
        cells = [f"{base * 1e3:8.2f} ms"]
        for name in ("jaxbridge", "interpax"):
            t = times.get(name)
            cells.append("n/a" if t is None else f"{t * 1e3:8.2f} ms ({t / base:4.2f}x)")
        print(f"{question:<34}{cells[0]:>11}{cells[1]:>22}{cells[2]:>22}")


def grid_and_scattered(quick: bool, rounds: int) -> None:
    """The grid and RBF interpolants against SciPy's objects called directly."""
    rng = np.random.default_rng(1)
    side, m_grid = (10, 500) if quick else (40, 10_000)
    a, b = np.linspace(0.0, 1.0, side), np.linspace(0.0, 2.0, side)
    values_host = np.sin(3 * a)[:, None] * np.cos(b)[None, :]
    xi_host = np.stack([rng.uniform(0, 1, m_grid), rng.uniform(0, 2, m_grid)], axis=-1)
    w_grid = jnp.asarray(rng.normal(size=m_grid))
    grid = RegularGridInterpolator("cubic")
    solver = scipy.sparse.linalg.spsolve

    def scipy_grid(nus=()):
        interpolant = scipy.interpolate.RegularGridInterpolator(
            (a, b), values_host, method="cubic", solver=solver
        )
        return [interpolant(xi_host)] + [interpolant(xi_host, nu=nu) for nu in nus]

    def grid_objective(v, q):
        return jnp.vdot(w_grid, grid((a, b), v, q))

    values, xi = jnp.asarray(values_host), jnp.asarray(xi_host)
    p, m_rbf = (60, 200) if quick else (300, 2000)
    sites_host = rng.uniform(0, 1, (p, 2))
    data_host = np.sin(4 * sites_host[:, 0]) * sites_host[:, 1]
    x_host = rng.uniform(0.1, 0.9, (m_rbf, 2))
    w_rbf = jnp.asarray(rng.normal(size=m_rbf))
    rbf = RBFInterpolator()

    def scipy_rbf():
        return scipy.interpolate.RBFInterpolator(sites_host, data_host)(x_host)

    def rbf_objective(y, d, x):
        return jnp.vdot(w_rbf, rbf(y, d, x))

    sites, data, x = (jnp.asarray(v) for v in (sites_host, data_host, x_host))
    contenders = {
        f"grid {side}x{side} eval": {
            "SciPy": scipy_grid,
            "jaxbridge": lambda f=jax.jit(grid): f((a, b), values, xi),
        },
        "grid v_and_g in xi": {
            "SciPy": lambda: scipy_grid(((1, 0), (0, 1))),
            "jaxbridge": lambda f=jax.jit(jax.value_and_grad(grid_objective, 1)): f(values, xi),
        },
        "grid v_and_g in values": {
            "SciPy": scipy_grid,
            "jaxbridge": lambda f=jax.jit(jax.value_and_grad(grid_objective)): f(values, xi),
        },
        f"RBF p={p} eval": {
            "SciPy": scipy_rbf,
            "jaxbridge": lambda f=jax.jit(rbf): f(sites, data, x),
        },
        "RBF v_and_g in x": {
            "SciPy": scipy_rbf,
            "jaxbridge": lambda f=jax.jit(jax.value_and_grad(rbf_objective, 2)): f(sites, data, x),
        },
        "RBF v_and_g in sites": {
            "SciPy": scipy_rbf,
            "jaxbridge": lambda f=jax.jit(jax.value_and_grad(rbf_objective)): f(sites, data, x),
        },
    }
    print(
        f"\ngrid: cubic, {m_grid} queries; RBF: thin-plate spline, {m_rbf} queries; float64, "
        f"{rounds} rounds (medians). SciPy: its object built and evaluated (with the nu= "
        "partials for the grid's xi; its value alone where it has no derivative)"
    )
    print(f"{'question':<26}{'SciPy':>11}{'jaxbridge':>22}")
    for question, runs in contenders.items():
        times = medians(runs, rounds)
        base, t = times["SciPy"], times["jaxbridge"]
        print(f"{question:<26}{base * 1e3:8.2f} ms{t * 1e3:11.2f} ms ({t / base:5.2f}x)")


def spin() -> None:
    """A busy process: another program's work on the cores."""
    while True:
        pass


def grid_with_default_blas(quick: bool, rounds: int) -> None:
    """``grid_under_load`` in a new process without ``OPENBLAS_NUM_THREADS``."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    command = [sys.executable, os.path.abspath(__file__), "--grid-under-load"]
    command += ["--rounds", str(rounds)] + (["--quick"] if quick else [])
    sys.stdout.flush()
    subprocess.run(command, env=env, check=True)


def grid_under_load(quick: bool, rounds: int) -> None:
    """The cubic grid's ``value_and_grad`` in ``values`` against SciPy's value, quiet and
    beside busy processes, with OpenBLAS's threads as this process has them."""
    from threadpoolctl import threadpool_info

    rng = np.random.default_rng(1)
    side, m_grid = (10, 500) if quick else (40, 10_000)
    a, b = np.linspace(0.0, 1.0, side), np.linspace(0.0, 2.0, side)
    values_host = np.sin(3 * a)[:, None] * np.cos(b)[None, :]
    xi_host = np.stack([rng.uniform(0, 1, m_grid), rng.uniform(0, 2, m_grid)], axis=-1)
    w_grid = jnp.asarray(rng.normal(size=m_grid))
    grid = RegularGridInterpolator("cubic")
    values, xi = jnp.asarray(values_host), jnp.asarray(xi_host)

    def scipy_grid():
        return scipy.interpolate.RegularGridInterpolator(
            (a, b), values_host, method="cubic", solver=scipy.sparse.linalg.spsolve
        )(xi_host)

    value_and_grad = jax.jit(jax.value_and_grad(lambda v, q: jnp.vdot(w_grid, grid((a, b), v, q))))
    threads = [i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openblas"]
    cores = os.cpu_count() or 1
    busy = max(1, cores // 2)
    print(
        f"\ngrid {side}x{side} cubic, v_and_g in values, {m_grid} queries, OpenBLAS's "
        f"default ({threads[0] if threads else '?'} threads, OPENBLAS_NUM_THREADS unset), "
        f"{cores} cores, {rounds} rounds (medians)"
    )
    print(f"{'machine':<26}{'SciPy':>11}{'jaxbridge':>22}")
    for label, spinners in (("quiet", 0), (f"beside {busy} busy process(es)", busy)):
        context = multiprocessing.get_context("spawn")
        others = [context.Process(target=spin, daemon=True) for _ in range(spinners)]
        for process in others:
            process.start()
        try:
            times = medians(
                {"SciPy": scipy_grid, "jaxbridge": lambda: value_and_grad(values, xi)}, rounds
            )
        finally:
            for process in others:
                process.terminate()
        base, t = times["SciPy"], times["jaxbridge"]
        print(f"{label:<26}{base * 1e3:8.2f} ms{t * 1e3:11.2f} ms ({t / base:5.2f}x)")


if __name__ == "__main__":
    main()
