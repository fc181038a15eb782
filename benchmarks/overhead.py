"""What a bridged call costs, measured side by side in one process.

Prints one table per question: NumPy/SciPy called directly, the hand-written
``pure_callback`` + ``custom_vjp`` that the JAX tutorials teach, jaxbridge with each
transport, native ``jnp``, and jaxbind when it is installed. Contenders are timed in
interleaved rounds (A, B, C, A, B, C, ...) and compared by their medians, so the machine's
noise hits them alike; read the ratios, not the absolute times.

    python benchmarks/overhead.py           # the full run, a few minutes on 2 cores
    python benchmarks/overhead.py --quick   # a smoke run of every table, seconds
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
from collections.abc import Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.linalg  # noqa: E402
from _timing import medians  # noqa: E402

import jaxbridge as jb  # noqa: E402
from jaxbridge.adapters import Doubling, LinearSolve  # noqa: E402

Timed = dict[str, Callable[[], object]]


def table(title: str, times: dict[str, float], baseline: str, target: str = "") -> None:
    print(f"\n{title}" + (f"  (target: {target})" if target else ""))
    print(f"  {'':44} {'median':>10} {'× ' + baseline:>22}")
    for name, t in times.items():
        print(f"  {name:44} {_duration(t):>10} {t / times[baseline]:>22.2f}")


def _duration(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def with_transport(name: str, function: Callable, *args: object) -> Callable:
    """``function``, jitted and traced on ``args`` under transport ``name`` (the transport is
    chosen when a call is traced, and the jitted function keeps its trace)."""
    jb.set_transport(name)
    try:
        jax.block_until_ready(function(*args))
        return function
    finally:
        jb.set_transport("auto")


def hand_written_doubling() -> Callable:
    """The seed articles' recipe: ``pure_callback`` forward, ``custom_vjp`` with a host backward."""

    def host(x):
        return np.asarray(x) * 2

    @jax.custom_vjp
    def double(x):
        return jax.pure_callback(
            host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims"
        )

    def fwd(x):
        return double(x), None

    def bwd(_, g):
        return (
            jax.pure_callback(
                host, jax.ShapeDtypeStruct(g.shape, g.dtype), g, vmap_method="expand_dims"
            ),
        )

    double.defvjp(fwd, bwd)
    return double


def bare_buffer_doubling() -> Callable:
    """The floor for any Python callback: ``buffer_callback`` with no checks at all, saving
    ``(x, y)`` for the backward as jaxbridge does (so the forward runs under ``grad`` too)."""
    from jax.experimental.buffer_callback import buffer_callback

    def host(_, out, x):
        np.asarray(out)[...] = np.asarray(x) * 2

    def call(x):
        spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return buffer_callback(host, spec, vmap_method="expand_dims")(x)

    double = jax.custom_vjp(call)

    def fwd(x):
        y = call(x)
        return y, (x, y)

    def bwd(res, g):
        return (call(g) + 0 * res[1],)  # reads the saved output, as a backward would

    double.defvjp(fwd, bwd)
    return double


def doubling(rounds: int, inner: int) -> None:
    x = jnp.asarray(np.random.default_rng(0).normal(size=1000))
    xh = np.asarray(x)
    hand, bare = hand_written_doubling(), bare_buffer_doubling()
    bridged = {
        t: with_transport(t, jax.jit(lambda x: Doubling()(x)), x)
        for t in ("buffer_callback", "pure_callback")
    }
    contenders: Timed = {
        "native jnp, jitted": (lambda f: lambda: f(x))(jax.jit(lambda x: 2 * x)),
        "NumPy directly (no JAX)": lambda: xh * 2,
        "hand-written pure_callback": (lambda f: lambda: f(x))(jax.jit(hand)),
        "bare buffer_callback, no checks (floor)": (lambda f: lambda: f(x))(jax.jit(bare)),
        "jaxbridge, buffer_callback": lambda: bridged["buffer_callback"](x),
        "jaxbridge, pure_callback": lambda: bridged["pure_callback"](x),
    }
    contenders.update(_jaxbind_doubling(x))
    table(
        "1. Doubling forward under jit, 1000 float64",
        medians(contenders, rounds, inner),
        "native jnp, jitted",
        "jaxbridge ≤ 1.15×",
    )

    def loss(f):
        return jax.jit(jax.grad(lambda x: f(x).sum()))

    grads = {
        t: with_transport(t, loss(Doubling()), x) for t in ("buffer_callback", "pure_callback")
    }
    native, hand_grad, bare_grad = loss(lambda x: 2 * x), loss(hand), loss(bare)
    contenders = {
        "native jnp, jit(grad)": lambda: native(x),
        "hand-written pure_callback + custom_vjp": lambda: hand_grad(x),
        "bare buffer_callback, no checks (floor)": lambda: bare_grad(x),
        "jaxbridge, buffer_callback": lambda: grads["buffer_callback"](x),
        "jaxbridge, pure_callback": lambda: grads["pure_callback"](x),
    }
    table(
        "2. jit(grad(sum(Doubling(x)))), 1000 float64",
        medians(contenders, rounds, inner),
        "native jnp, jit(grad)",
        "jaxbridge ≤ 2.2×",
    )


def _jaxbind_doubling(x: jax.Array) -> Timed:
    try:
        import jaxbind  # noqa: F401
    except ImportError:
        print("(jaxbind is not installed: its rows are left out)")
        return {}
    print("(jaxbind is installed, but no jaxbind contender is written yet: left out)")
    return {}


class CountingDoubling(jb.Adapter):
    """Doubling that counts its host calls."""

    signature = "()->()"
    vectorized = True
    calls = [0]

    def forward(self, x):
        self.calls[0] += 1
        return 2 * x

    def backward(self, res, g):
        self.calls[0] += 1
        return (2 * g,)


def batched(rounds: int, inner: int) -> None:
    xs = jnp.asarray(np.random.default_rng(1).normal(size=(64, 1000)))
    x1, xsh = xs[0], np.asarray(xs)
    counting = CountingDoubling()
    grad = jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(counting(x))))))
    CountingDoubling.calls[0] = 0
    jax.block_until_ready(grad(xs))
    print(
        f"\n3. vmap over 64 rows: {CountingDoubling.calls[0]} host calls for forward + backward"
        " (target: exactly 2)"
    )
    one = jax.jit(lambda x: Doubling()(x))
    many = jax.jit(jax.vmap(lambda x: Doubling()(x)))
    times = medians(
        {
            "NumPy on the stacked (64, 1000) array": lambda: xsh * 2,
            "NumPy on one row": lambda: xsh[0] * 2,
            "jaxbridge, one row": lambda: one(x1),
            "jaxbridge, vmap over 64 rows": lambda: many(xs),
        },
        rounds,
        inner,
    )
    overhead = times["jaxbridge, one row"] - times["NumPy on one row"]
    stacked = times["NumPy on the stacked (64, 1000) array"]
    times["NumPy stacked + per-call overhead"] = stacked + overhead
    table(
        "   vmap of Doubling, batch 64 × 1000 float64",
        times,
        "NumPy stacked + per-call overhead",
        "vmap ≤ 2×",
    )


class LoopSolve(jb.Adapter):
    """``a x = b`` one system at a time: the bridge loops over a batch on the host.

    ``lu_factor`` + ``lu_solve``, not ``scipy.linalg.solve``: measured here (SciPy 1.17),
    ``solve`` holds the GIL, so threads cannot overlap it, while these two release it.
    """

    signature = "(n,n),(n)->(n)"

    def forward(self, a, b):
        return scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b)


class ThreadedLoopSolve(LoopSolve):
    threads = 2


def solves(sizes: list[int], rounds: int) -> None:
    rng = np.random.default_rng(2)
    for n in sizes:
        a = rng.normal(size=(n, n)) + n**0.5 * np.eye(n)
        b = rng.normal(size=n)
        aj, bj = jnp.asarray(a), jnp.asarray(b)
        forward = jax.jit(lambda a, b: LinearSolve()(a, b))
        table(
            f"4. LinearSolve forward, n = {n}",
            medians(
                {
                    "scipy.linalg.solve directly": lambda: scipy.linalg.solve(a, b),
                    "jaxbridge LinearSolve, jit": lambda: forward(aj, bj),
                    "jnp.linalg.solve, jit": (lambda f: lambda: f(aj, bj))(
                        jax.jit(jnp.linalg.solve)
                    ),
                },
                rounds,
                1,
            ),
            "scipy.linalg.solve directly",
            "jaxbridge ≤ 1.10×",
        )

        def by_hand():
            lu = scipy.linalg.lu_factor(a)
            x = scipy.linalg.lu_solve(lu, b)
            lam = scipy.linalg.lu_solve(lu, np.cos(x), trans=1)
            return -np.outer(lam, x), lam

        def loss(solve):
            return jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.sin(solve(a, b))), (0, 1)))

        bridged, native = loss(LinearSolve()), loss(jnp.linalg.solve)
        table(
            f"   jit(grad) of LinearSolve w.r.t. a and b, n = {n}",
            medians(
                {
                    "by hand: lu_factor + 2 lu_solve + outer": by_hand,
                    "jaxbridge LinearSolve": lambda: bridged(aj, bj),
                    "jnp.linalg.solve": lambda: native(aj, bj),
                },
                rounds,
                1,
            ),
            "by hand: lu_factor + 2 lu_solve + outer",
            "≤ 1.15× by hand, and ≤ the jnp gradient",
        )


def threads(n: int, batch: int, rounds: int) -> None:
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.normal(size=(batch, n, n)) + n**0.5 * np.eye(n))
    b = jnp.asarray(rng.normal(size=(batch, n)))
    one, two = jax.jit(LoopSolve()), jax.jit(ThreadedLoopSolve())
    np.testing.assert_allclose(one(a, b), two(a, b), rtol=1e-10)
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset, so OpenBLAS threads each call")
    table(
        f"5. {batch} solves of n = {n} looped on the host; OPENBLAS_NUM_THREADS {blas}",
        medians(
            {
                "threads = 1 (the default)": lambda: one(a, b),
                "threads = 2": lambda: two(a, b),
            },
            rounds,
            1,
        ),
        "threads = 1 (the default)",
        "threads = 2 ≥ 1.6× faster, i.e. ≤ 0.63×",
    )


def memory(calls: int) -> None:
    x = jnp.asarray(np.random.default_rng(4).normal(size=1000))
    grad = jax.jit(jax.grad(lambda x: jnp.sum(jnp.sin(Doubling()(x)))))
    for _ in range(1000):
        grad(x).block_until_ready()
    gc.collect()
    before = _resident_mb()
    for _ in range(calls):
        grad(x).block_until_ready()
    gc.collect()
    growth = _resident_mb() - before
    print(
        f"\n6. {calls:,} calls of a jitted gradient: resident memory grew {growth:+.1f} MB "
        "(target: < 20 MB)"
    )


def _resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small sizes")
    quick = parser.parse_args().quick
    print(
        f"jaxbridge benchmark on {platform.machine()} {platform.processor() or ''}, "
        f"{os.cpu_count()} cores; Python {platform.python_version()}, jax {jax.__version__}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}; default transport "
        f"{jb.transport()}; maximum RSS so far "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    doubling(rounds=20 if quick else 100, inner=5 if quick else 100)
    batched(rounds=10 if quick else 100, inner=5 if quick else 10)
    solves([20] if quick else [200, 500, 1000], rounds=5 if quick else 30)
    threads(n=20 if quick else 200, batch=64, rounds=5 if quick else 30)
    memory(calls=1000 if quick else 100_000)


if __name__ == "__main__":
    main()
