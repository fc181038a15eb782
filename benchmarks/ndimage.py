"""What does a derivative of an ``ndimage`` filter or interpolant (and of ``Cdist``) cost,
beside its value?

For each row, side by side in one process (interleaved rounds, medians), float64, ``jit``:
SciPy's value alone; the bridged value of ``<w, f(x)>``; its ``value_and_grad`` (in the
image, in the points or the map, or in both); and, where one exists, the same
``value_and_grad`` of a native JAX version (``jax.scipy.ndimage.map_coordinates`` for
order 1, a separable Gaussian and a box mean written with ``jnp``, a ``jnp`` cdist).
Prints the times and the ratios: ``v&g ÷ value`` (issue #58's targets: at most 2 for the
filters and interpolants, 3 for the distances), ``v&g ÷ SciPy`` and ``v&g ÷ native``;
each row also as one JSON line. Not a test: nothing is asserted.

    python benchmarks/ndimage.py           # the sizes of issue #58: about a minute
    python benchmarks/ndimage.py --quick   # small sizes, 3 rounds: a smoke run of seconds
"""

from __future__ import annotations

import argparse
import json
import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.ndimage as ndi  # noqa: E402
import scipy.spatial.distance as distance  # noqa: E402
from _timing import medians  # noqa: E402

from jaxbridge.adapters import ndimage  # noqa: E402
from jaxbridge.adapters.spatial import Cdist, Pdist  # noqa: E402


def objective(f, w):
    """``<w, f(*args)>``: one scalar, whose value and gradient are timed."""
    return lambda *args: jnp.vdot(w, f(*args))


def native_correlate(x, weights, axis):
    """A correlation along ``axis`` with SciPy's default "reflect" edges, in ``jnp``: the
    image padded symmetrically, then a weighted sum of shifted slices."""
    r = len(weights) // 2
    widths = [(0, 0)] * x.ndim
    widths[axis] = (r, len(weights) - 1 - r)
    padded = jnp.pad(x, widths, mode="symmetric")
    n = x.shape[axis]
    return sum(w * jax.lax.slice_in_dim(padded, j, j + n, axis=axis) for j, w in enumerate(weights))


def native_separable(kernel):
    def apply(x):
        for axis in range(x.ndim):
            x = native_correlate(x, kernel, axis)
        return x

    return apply


def native_cdist(a, b):
    d = a[:, None, :] - b[None, :, :]
    s = jnp.sum(d * d, -1)
    return jnp.where(s > 0, jnp.sqrt(jnp.where(s > 0, s, 1)), 0)


def rows(quick: bool):
    """(label, SciPy's value, bridged function, its arguments, argnums per question,
    native function or None, target)."""
    rng = np.random.default_rng(0)
    sides = (32, 64) if quick else (256, 1024)
    for side in sides:
        image = rng.normal(size=(side, side))
        kernel = ndi._filters._gaussian_kernel1d(2.0, 0, 8)[::-1].copy()
        yield (
            f"gaussian_filter s=2 {side}^2",
            lambda image=image: ndi.gaussian_filter(image, 2.0),
            lambda x: ndimage.gaussian_filter(x, 2.0),
            (image,),
            {"image": 0},
            native_separable(jnp.asarray(kernel)),
            2.0,
        )
    side = 32 if quick else 1024  # (at 512^2, 2 MB arrays, times swung 2x between runs)
    image = rng.normal(size=(side, side))
    yield (
        f"uniform_filter 5 {side}^2",
        lambda image=image: ndi.uniform_filter(image, 5),
        lambda x: ndimage.uniform_filter(x, 5),
        (image,),
        {"image": 0},
        native_separable(jnp.full(5, 0.2)),
        2.0,
    )
    yield (
        f"correlate1d 9 taps, axis 0, {side}^2",
        lambda image=image: ndi.correlate1d(image, np.arange(1.0, 10.0), 0),
        lambda x: ndimage.correlate1d(x, np.arange(1.0, 10.0), 0),
        (image,),
        {"image": 0},
        None,
        2.0,
    )
    side = 32 if quick else 256
    image = rng.normal(size=(side, side))
    for order, m in ((1, 10_000), (3, 10_000), (3, 100_000)):
        m = 500 if quick else m
        points = rng.uniform(0, side - 1, (2, m))
        native = None
        if order == 1:

            def native(x, c):
                return jax.scipy.ndimage.map_coordinates(x, c, order=1, mode="constant")

        yield (
            f"map_coordinates order {order}, {side}^2, {m} points",
            lambda image=image, points=points, order=order: ndi.map_coordinates(
                image, points, order=order
            ),
            lambda x, c, order=order: ndimage.map_coordinates(x, c, order=order),
            (image, points),
            {"image": 0, "points": 1, "both": (0, 1)},
            native,
            2.0,
        )
    side = 32 if quick else 256
    image = rng.normal(size=(side, side))
    angle = 0.3
    matrix = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    offset = np.array([side / 4, -side / 8])
    yield (
        f"affine_transform order 3, {side}^2",
        lambda: ndi.affine_transform(image, matrix, offset),
        lambda x, a, b: ndimage.affine_transform(x, a, b),
        (image, matrix, offset),
        {"image": 0, "matrix": 1},
        None,
        2.0,
    )
    m, k = (100, 80) if quick else (1000, 800)
    xa, xb = rng.normal(size=(m, 3)), rng.normal(size=(k, 3))
    yield (
        f"Cdist euclidean {m}x{k} in 3-D",
        lambda: distance.cdist(xa, xb),
        Cdist("euclidean"),
        (xa, xb),
        {"both": (0, 1)},
        native_cdist,
        3.0,
    )
    yield (
        f"Pdist euclidean {m} in 3-D",
        lambda: distance.pdist(xa),
        Pdist("euclidean"),
        (xa,),
        {"points": 0},
        None,
        3.0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and 3 rounds")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 15, 3 with --quick)")
    options = parser.parse_args()
    rounds = options.rounds or (3 if options.quick else 15)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"float64, jit, medians of {rounds} interleaved rounds; OPENBLAS_NUM_THREADS="
        f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, load {load:.2f}, "
        f"{os.cpu_count()} cores"
    )
    header = f"{'row':<47}{'wrt':<7}{'SciPy':>9}{'value':>15}{'v&g':>10}"
    print(header + f"{'÷ value':>9}{'÷ SciPy':>9}{'÷ native':>10}")
    for label, scipy_value, bridged, args, questions, native, target in rows(options.quick):
        arrays = [jnp.asarray(a) for a in args]
        out_shape = jax.eval_shape(bridged, *arrays).shape
        w = jnp.asarray(np.random.default_rng(1).normal(size=out_shape))
        value = jax.jit(objective(bridged, w))
        runs = {"SciPy": scipy_value, "value": lambda value=value: value(*arrays)}
        for wrt, argnums in questions.items():
            grad = jax.jit(jax.value_and_grad(objective(bridged, w), argnums))
            runs[wrt] = lambda grad=grad: grad(*arrays)
            if native is not None:
                native_grad = jax.jit(jax.value_and_grad(objective(native, w), argnums))
                runs[f"native {wrt}"] = lambda f=native_grad: f(*arrays)
        times = medians(runs, rounds)
        base, bridged_value = times["SciPy"], times["value"]
        for wrt in questions:
            t = times[wrt]
            t_native = times.get(f"native {wrt}")
            native_cell = "–" if t_native is None else f"{t / t_native:.2f}"
            print(
                f"{label:<47}{wrt:<7}{base * 1e3:7.2f}ms{bridged_value * 1e3:8.2f}ms "
                f"({bridged_value / base:.2f}){t * 1e3:8.2f}ms{t / bridged_value:9.2f}"
                f"{t / base:9.2f}{native_cell:>10}"
            )
            row = {
                "benchmark": "ndimage",
                "row": label,
                "wrt": wrt,
                "scipy_ms": round(base * 1e3, 4),
                "value_ms": round(bridged_value * 1e3, 4),
                "value_and_grad_ms": round(t * 1e3, 4),
                "ratio_to_value": round(t / bridged_value, 3),
                "ratio_to_scipy": round(t / base, 3),
                "ratio_to_native": None if t_native is None else round(t / t_native, 3),
                "target": target,
                "load": round(load, 2),
            }
            print("  " + json.dumps(row))


if __name__ == "__main__":
    main()
