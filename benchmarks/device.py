"""What does an adapter on XLA's own buffers (``arrays = "cupy"`` or ``"torch"``) cost,
beside native ``jit`` and beside the host route (``arrays = "numpy"``)?

y = 2x, already on the backend's device, float32: the value and ``grad`` of ``sum(y * x)``
under ``jit``, per size, medians of interleaved rounds with the ratios to native ``jit``
printed beside; on a GPU also a 4096² matrix product through CuPy's cuBLAS against XLA's
at ``jax.default_matmul_precision("highest")`` (XLA's default takes TF32), and the peak
device memory of a bridged call against its inputs and outputs. Each row is also printed
as one JSON line. On the CPU backend only PyTorch's route runs (CuPy needs a GPU), which
measures the hand-off's own cost. Not a test: nothing is asserted.

On a TPU (no CuPy, no PyTorch there) the host route is the bridge's, beside raw
``jax.pure_callback`` of the same host function and beside the explicit transfers
(``np.asarray`` of a fresh device array, the host's ``2 * x``, ``jax.device_put`` back), at
1e4, 1e6 and 1e7; and ``vmap`` of ``LinearSolve`` over 1000 systems of 8x8 and 100 of
64x64, value and ``grad``, against ``jnp.linalg.solve`` (which also runs elsewhere, smaller
with ``--quick``).

    python benchmarks/device.py           # sizes 1e3, 1e6 (and 1e8 on a GPU; 1e4-1e7 on a TPU)
    python benchmarks/device.py --quick   # 1e3 and 1e5 (1e6 on a GPU or TPU), a run of seconds

On a TPU the host's handling of fresh memory weighs on every large transfer (about 1 ms per
MB); run it also with glibc's allocator keeping freed memory
(``GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296``, see
``docs/accelerators.md``). There the host route is also given ``linear_in = ("x",)``, whose
backward takes the cotangent alone (without it the backward gets ``x`` and ``y`` too), and
each ``vmap(LinearSolve)`` row shows one raw ``pure_callback`` of ``np.linalg.solve`` beside
it: the floor of any host call.

Targets (issue #45, on a GPU): CuPy at most 2x native at 1e6 and 3x at 1e8, ``grad`` at most
2.5x; at least 30x faster than the host route at 1e6; PyTorch within 2x of CuPy; the
matrix product within 1.5x. (Issue #55, on a TPU): the bridge at 1e7 at most 1.5x the
explicit transfers, its ``grad`` at most 2x its value; ``vmap(LinearSolve)`` at most 1.5x
(8x8) and 2x (64x64) ``jnp.linalg.solve``, 2.5x and 3x with ``grad``.
"""

from __future__ import annotations

import argparse
import importlib
import json

import jax
import jax.numpy as jnp
import numpy as np
from _timing import medians

import jaxbridge as jb


class _Doubling(jb.Adapter):
    signature = "()->()"
    vectorized = True

    def forward(self, x, *, out=None):
        if out is None:
            return 2 * x
        (y,) = out
        y[...] = x  # (in place: the library's own kernels, no temporary)
        y *= 2
        return y

    def backward(self, res, g):
        return (2 * g,)


def _library(name: str):
    """The array library, where it works on the default backend's device; else None."""
    try:
        library = importlib.import_module(name)
        on_gpu = jax.default_backend() == "gpu"
        if name == "cupy":
            if not on_gpu:
                return None
            library.zeros(1).sum()  # CuPy fails at first use without a device
        elif name == "torch" and on_gpu and not library.cuda.is_available():
            return None
    except Exception:  # noqa: BLE001 (no usable library or device: that route is left out)
        return None
    return library


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 15, 3 with --quick)")
    options = parser.parse_args()
    on_gpu = jax.default_backend() == "gpu"
    on_tpu = jax.default_backend() == "tpu"
    rounds = options.rounds or (3 if options.quick else 15)
    big = on_gpu or on_tpu
    sizes = [1_000, 1_000_000 if big else 100_000] if options.quick else [1_000, 1_000_000]
    if on_gpu and not options.quick:
        sizes.append(100_000_000)
    if on_tpu and not options.quick:
        sizes = [10_000, 1_000_000, 10_000_000]

    routes = {"numpy (host)": "numpy"}
    routes.update({f"{n}": n for n in ("cupy", "torch") if _library(n) is not None})
    if on_gpu and "cupy" in routes:
        _peak_memory()  # first: the device's peak counts from the process's start
    adapters = {name: type("Doubling", (_Doubling,), {"arrays": a})() for name, a in routes.items()}
    if on_tpu:  # declared linear: its backward takes the cotangent alone, not x and y too
        adapters["numpy, linear_in"] = type("Doubling", (_Doubling,), {"linear_in": ("x",)})()
    print(f"y = 2x, float32, {jax.default_backend()} backend, medians of {rounds} rounds")
    print(f"  {'size':>12} {'route':16} {'value':>10} {'÷ native':>9} {'grad':>10} {'÷ native':>9}")
    for n in sizes:
        x = jnp.linspace(-1.0, 1.0, n, dtype=jnp.float32)
        contenders = {"native": jax.jit(lambda x: 2 * x)}
        grads = {"native": jax.jit(jax.grad(lambda x: (2 * x * x).sum()))}
        for name, adapter in adapters.items():
            if name == "numpy (host)" and n > 1_000_000 and not on_tpu:
                continue  # (seconds per call through the host: measured at 1e6 already)
            contenders[name] = jax.jit(adapter)
            grads[name] = jax.jit(jax.grad(lambda x, a=adapter: (a(x) * x).sum()))
        if on_tpu:
            contenders |= _host_contenders(x)
        for name in contenders:  # the same answer everywhere before any timing
            np.testing.assert_allclose(contenders[name](x), 2 * np.asarray(x), rtol=1e-6)
        times = medians(
            {
                **{(k, "v"): (lambda f=f: f(x)) for k, f in contenders.items()},
                **{(k, "g"): (lambda f=f: f(x)) for k, f in grads.items()},
            },
            rounds,
        )
        base_v, base_g = times[("native", "v")], times[("native", "g")]
        for name in contenders:
            v, g = times[(name, "v")], times.get((name, "g"), float("nan"))
            print(
                f"  {n:>12,} {name:16} {v * 1e3:>7.3f} ms {v / base_v:>9.2f} "
                f"{g * 1e3:>7.3f} ms {g / base_g:>9.2f}"
            )
            row = {
                "benchmark": "device",
                "size": n,
                "route": name,
                "value_s": v,
                "grad_s": g,
                "value_ratio": v / base_v,
                "grad_ratio": g / base_g,
            }
            print("  " + json.dumps(row))
    if on_gpu and "cupy" in routes:
        _matmul(rounds)
    _solve_batches(rounds, options.quick and not on_tpu)


def _host_contenders(x: jax.Array) -> dict:
    """The same host work without the bridge: raw ``pure_callback``, and explicit transfers
    (a fresh device array each time: JAX keeps the host copy of an array it has read)."""
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    raw = jax.jit(lambda x: jax.pure_callback(lambda a: 2 * np.asarray(a), spec, x))
    fresh = jax.jit(lambda x: x + 0)
    device = jax.devices()[0]

    def explicit() -> jax.Array:
        return jax.device_put(2 * np.asarray(fresh(x)), device)

    return {"raw pure_callback": raw, "explicit transfers": lambda x: explicit()}


def _solve_batches(rounds: int, small: bool) -> None:
    """``vmap(LinearSolve)`` against ``jnp.linalg.solve``, value and ``grad``."""
    from jaxbridge.adapters.linalg import LinearSolve

    solve = LinearSolve()
    print(f"vmap of LinearSolve, float32, {jax.default_backend()} backend")
    for count, n in [(100, 8), (20, 32)] if small else [(1000, 8), (100, 64)]:
        key_a, key_b = jax.random.split(jax.random.key(n))
        a = jax.random.normal(key_a, (count, n, n), jnp.float32) + 2 * n**0.5 * jnp.eye(n)
        b = jax.random.normal(key_b, (count, n), jnp.float32)
        ours = jax.jit(jax.vmap(solve))
        native = jax.jit(jnp.linalg.solve)
        # the floor on a TPU: one raw pure_callback of NumPy's solve, no derivative
        spec = jax.ShapeDtypeStruct(b.shape, b.dtype)
        raw = jax.jit(
            lambda a, b: jax.pure_callback(
                lambda a, b: np.linalg.solve(a, b[..., None])[..., 0].astype(b.dtype), spec, a, b
            )
        )
        for f in (ours, raw):
            np.testing.assert_allclose(
                f(a, b), native(a, b[..., None])[..., 0], rtol=1e-3, atol=1e-4
            )

        def loss(f):
            return jax.jit(jax.grad(lambda a, b: (f(a, b) ** 2).sum(), argnums=(0, 1)))

        grads = {"ours": loss(ours), "native": loss(lambda a, b: native(a, b[..., None])[..., 0])}
        times = medians(
            {
                "ours v": lambda: ours(a, b),
                "raw v": lambda: raw(a, b),
                "native v": lambda: native(a, b[..., None]),
                "ours g": lambda: grads["ours"](a, b),
                "native g": lambda: grads["native"](a, b),
            },
            rounds,
        )
        value, grad = times["ours v"] / times["native v"], times["ours g"] / times["native g"]
        floor = times["raw v"] / times["native v"]
        print(
            f"  {count} x {n}x{n}: value {times['ours v'] * 1e3:.3f} ms ÷ jnp.linalg.solve "
            f"{times['native v'] * 1e3:.3f} ms = {value:.2f} (one raw pure_callback of "
            f"np.linalg.solve: {floor:.2f}); grad {times['ours g'] * 1e3:.3f} "
            f"÷ {times['native g'] * 1e3:.3f} ms = {grad:.2f}"
        )
        row = {
            "benchmark": "device-solve",
            "count": count,
            "n": n,
            "value_ratio": value,
            "raw_callback_ratio": floor,
            "grad_ratio": grad,
        }
        print("  " + json.dumps(row))


def _matmul(rounds: int) -> None:
    cupy = _library("cupy")

    class Product(jb.Adapter):
        signature = "(n,k),(k,m)->(n,m)"
        vectorized = True
        arrays = "cupy"

        def forward(self, a, b, *, out=None):
            if out is None:
                return a @ b
            cupy.matmul(a, b, out=out[0])
            return out[0]

    size = 4096
    a = jax.random.normal(jax.random.key(0), (size, size), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (size, size), jnp.float32)
    with jax.default_matmul_precision("highest"):
        native = jax.jit(jnp.matmul)
        native(a, b).block_until_ready()  # (compiled inside the precision's context)
    bridged = jax.jit(Product())
    np.testing.assert_allclose(bridged(a, b), native(a, b), rtol=2e-3, atol=2e-3)
    times = medians({"xla": lambda: native(a, b), "cupy": lambda: bridged(a, b)}, rounds)
    ratio = times["cupy"] / times["xla"]
    print(
        f"matmul {size}², float32: XLA (highest) {times['xla'] * 1e3:.2f} ms, "
        f"CuPy {times['cupy'] * 1e3:.2f} ms, ratio {ratio:.2f}"
    )
    print("  " + json.dumps({"benchmark": "device-matmul", "size": size, "ratio": ratio}))


def _peak_memory() -> None:
    """The device's peak bytes in use during one bridged call (the process's first work
    on the device), less its input, in arrays of the output's size."""
    device = jax.devices()[0]
    n = 100_000_000
    x = jnp.ones(n, jnp.float32)
    f = jax.jit(type("Doubling", (_Doubling,), {"arrays": "cupy"})())
    f(x).block_until_ready()
    stats = device.memory_stats() or {}
    if "peak_bytes_in_use" not in stats:
        print("peak memory: the device reports no memory statistics")
        return
    before = stats["bytes_in_use"]
    y = f(x)
    y.block_until_ready()
    peak = device.memory_stats()["peak_bytes_in_use"]
    extra = (peak - before) / (4 * n)
    print(
        f"peak device memory of y = 2x at 1e8: {extra:.2f} arrays of the output's size "
        "beyond what was in use before (1.00: the output alone)"
    )
    print("  " + json.dumps({"benchmark": "device-memory", "extra_outputs": extra}))


if __name__ == "__main__":
    main()
