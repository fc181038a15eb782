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
ON_CPU = jax.default_backend() == "cpu"
TRANSPORTS = ("buffer_callback", "pure_callback") if ON_CPU else ("pure_callback",)
"""The transports to compare: buffer_callback runs on the CPU only."""


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
    bridged = {t: with_transport(t, jax.jit(lambda x: Doubling()(x)), x) for t in TRANSPORTS}
    contenders: Timed = {
        "native jnp, jitted": (lambda f: lambda: f(x))(jax.jit(lambda x: 2 * x)),
        "NumPy directly (no JAX)": lambda: xh * 2,
        "hand-written pure_callback": (lambda f: lambda: f(x))(jax.jit(hand)),
    }
    if ON_CPU:
        contenders["bare buffer_callback, no checks (floor)"] = (lambda f: lambda: f(x))(
            jax.jit(bare)
        )
    for t in TRANSPORTS:
        contenders[f"jaxbridge, {t}"] = (lambda f: lambda: f(x))(bridged[t])
    peer = jaxbind_doubling()
    if peer is not None:
        contenders["jaxbind (compiled peer)"] = (lambda f: lambda: f(x))(jax.jit(peer))
    times = medians(contenders, rounds, inner)
    table(
        "1. Doubling forward under jit, 1000 float64",
        times,
        "native jnp, jitted",
        "jaxbridge ≤ 1.0× jaxbind",
    )
    versus_peer(times)

    def loss(f):
        return jax.jit(jax.grad(lambda x: f(x).sum()))

    grads = {t: with_transport(t, loss(Doubling()), x) for t in TRANSPORTS}
    native, hand_grad = loss(lambda x: 2 * x), loss(hand)
    contenders = {
        "native jnp, jit(grad)": lambda: native(x),
        "hand-written pure_callback + custom_vjp": lambda: hand_grad(x),
    }
    if ON_CPU:
        contenders["bare buffer_callback, no checks (floor)"] = (lambda f: lambda: f(x))(loss(bare))
    for t in TRANSPORTS:
        contenders[f"jaxbridge, {t}"] = (lambda f: lambda: f(x))(grads[t])
    if peer is not None:
        contenders["jaxbind (compiled peer)"] = (lambda f: lambda: f(x))(loss(peer))
    times = medians(contenders, rounds, inner)
    table(
        "2. jit(grad(sum(Doubling(x)))), 1000 float64",
        times,
        "native jnp, jit(grad)",
        "jaxbridge ≤ 1.0× jaxbind; one host call",
    )
    versus_peer(times)

    def tangent(f):
        return jax.jit(lambda x, t: jax.jvp(f, (x,), (t,)))

    t = jnp.ones_like(x)
    jvps = {name: with_transport(name, tangent(Doubling()), x, t) for name in TRANSPORTS}
    native_jvp = tangent(lambda x: 2 * x)
    contenders = {"native jnp, jit(jvp)": lambda: native_jvp(x, t)}
    for name in TRANSPORTS:
        contenders[f"jaxbridge, {name}"] = (lambda f: lambda: f(x, t))(jvps[name])
    if peer is not None:
        contenders["jaxbind (compiled peer)"] = (lambda f: lambda: f(x, t))(tangent(peer))
    times = medians(contenders, rounds, inner)
    table(
        "2b. jit(jvp(Doubling)), 1000 float64: value and tangent",
        times,
        "native jnp, jit(jvp)",
        "jaxbridge ≤ 1.0× jaxbind",
    )
    versus_peer(times)


def jaxbind_doubling() -> Callable | None:
    """``2 * x`` through jaxbind, the compiled peer (an FFI handler in C++ calling Python),
    with its forward, jvp and vjp rules on the host; None, with a note, if not installed."""
    if not ON_CPU:
        print("(jaxbind runs on the CPU only: its rows are left out)")
        return None
    try:
        import jaxbind
    except ImportError:
        print("(jaxbind is not installed: its rows are left out; pip install -e '.[bench]')")
        return None

    def double(out, args, kwargs_dump):
        out[0][()] = args[0] * 2

    def derivative(out, args, kwargs_dump):  # jvp gets (x, t), vjp (x, g): both 2 * second
        out[0][()] = args[1] * 2

    def abstract(*args, batch_axes=None, **kwargs):
        # the last argument (x, or the tangent or cotangent) has the result's shape
        out = (args[-1].shape, args[-1].dtype)
        if not batch_axes or not batch_axes[-1]:
            return (out,)
        return ((*out, batch_axes[-1][-1]),)  # elementwise: batched where the input is

    call = jaxbind.get_nonlinear_call(
        double, (derivative, derivative), abstract, abstract, func_can_batch=True
    )
    return lambda x: call(x)[0]


def versus_peer(times: dict[str, float]) -> None:
    if "jaxbind (compiled peer)" in times and "jaxbridge, buffer_callback" in times:
        ratio = times["jaxbridge, buffer_callback"] / times["jaxbind (compiled peer)"]
        print(f"  {'jaxbridge (buffer_callback) ÷ jaxbind':44} {ratio:>33.2f}")


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
    contenders = {
        "NumPy on the stacked (64, 1000) array": lambda: xsh * 2,
        "NumPy on one row": lambda: xsh[0] * 2,
        "jaxbridge, one row": lambda: one(x1),
        "jaxbridge, the vmap": lambda: many(xs),
    }
    peer = jaxbind_doubling()
    if peer is not None:
        contenders["jaxbind (compiled peer)"] = (lambda f: lambda: f(xs))(jax.jit(jax.vmap(peer)))
    times = medians(contenders, rounds, inner)
    overhead = times["jaxbridge, one row"] - times["NumPy on one row"]
    stacked = times["NumPy on the stacked (64, 1000) array"]
    times["NumPy stacked + per-call overhead"] = stacked + overhead
    table(
        "   vmap of Doubling over 64 rows × 1000 float64 (jaxbridge's default transport)",
        times,
        "NumPy stacked + per-call overhead",
        "vmap ≤ 2×; ≤ 1.0× jaxbind",
    )
    versus_peer(times)


def many_small(sizes: list[tuple[int, int]], rounds: int) -> None:
    """Many small systems in one vmap: batched LAPACK on the host against XLA's own."""
    rng = np.random.default_rng(5)
    for count, n in sizes:
        a = jnp.asarray(rng.normal(size=(count, n, n)) + n * np.eye(n))
        b = jnp.asarray(rng.normal(size=(count, n)))

        def loss(solve):
            return jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.sin(jax.vmap(solve)(a, b))), (0, 1)))

        forward = {s: jax.jit(jax.vmap(s)) for s in (LinearSolve(), jnp.linalg.solve)}
        gradient = {s: loss(s) for s in (LinearSolve(), jnp.linalg.solve)}
        times = medians(
            {
                f"{label} {kind}": (lambda f: lambda: f(a, b))(table_[solve])
                for kind, table_ in (("forward", forward), ("jit(grad)", gradient))
                for label, solve in (("jnp.linalg.solve", jnp.linalg.solve),)
                + (("jaxbridge LinearSolve", next(iter(table_))),)
            },
            rounds,
            1,
        )
        for kind in ("forward", "jit(grad)"):
            table(
                f"7. vmap over {count:,} systems of {n}×{n}, {kind}",
                {k: v for k, v in times.items() if k.endswith(kind)},
                f"jnp.linalg.solve {kind}",
                "jaxbridge ≤ 2×",
            )


def shared_matrix(n: int, count: int) -> None:
    """One matrix, many right-hand sides: what a compiled gradient keeps in temporaries."""
    rng = np.random.default_rng(6)
    a = jnp.asarray(rng.normal(size=(n, n)) + n**0.5 * np.eye(n))
    b = jnp.asarray(rng.normal(size=(count, n)))
    matrix = n * n * 8
    print(
        f"\n8. jit(grad) of vmap(solve, (None, 0)), one {n}×{n} matrix, {count} right-hand "
        "sides: compiled temporaries (target: jaxbridge within 10 matrix sizes)"
    )
    for label, solve in (
        ("jaxbridge LinearSolve", LinearSolve()),
        ("jnp.linalg.solve", jnp.linalg.solve),
    ):
        loss = lambda a, b, s=solve: jnp.sum(jnp.sin(jax.vmap(s, (None, 0))(a, b)))  # noqa: E731
        compiled = jax.jit(jax.grad(loss, (0, 1))).lower(a, b).compile()
        temp = compiled.memory_analysis().temp_size_in_bytes
        print(f"  {label:44} {temp / 2**20:>8.1f} MB = {temp / matrix:>6.1f} matrix sizes")


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


class ThreadedLinearSolve(LinearSolve):
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
            "jaxbridge ≤ 1.05×",
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
            "≤ 1.2× by hand, and ≤ the jnp gradient",
        )


def threads(n: int, batch: int, rounds: int) -> None:
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.normal(size=(batch, n, n)) + n**0.5 * np.eye(n))
    b = jnp.asarray(rng.normal(size=(batch, n)))
    one, two = jax.jit(LoopSolve()), jax.jit(ThreadedLoopSolve())
    solve_one, solve_two = jax.jit(LinearSolve()), jax.jit(ThreadedLinearSolve())
    np.testing.assert_allclose(one(a, b), two(a, b), rtol=1e-10)
    np.testing.assert_allclose(solve_one(a, b), solve_two(a, b), rtol=1e-10)
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset, so OpenBLAS threads each call")
    table(
        f"5. {batch} solves of n = {n} looped on the host; OPENBLAS_NUM_THREADS {blas}",
        medians(
            {
                "threads = 1 (the default)": lambda: one(a, b),
                "threads = 2": lambda: two(a, b),
                "LinearSolve, threads = 1 (the default)": lambda: solve_one(a, b),
                "LinearSolve, threads = 2": lambda: solve_two(a, b),
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
    many_small([(200, 4)] if quick else [(20000, 4), (2000, 16)], rounds=3 if quick else 20)
    shared_matrix(n=50 if quick else 500, count=16 if quick else 128)


if __name__ == "__main__":
    main()
