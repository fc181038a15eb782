"""How close to SciPy called directly is a bridged cubic spline, under ``jit`` and ``grad``?

For a cubic spline (not-a-knot) through n = 1,000 knots evaluated at m = 100,000 query
points, in float64, side by side in one process (interleaved rounds, medians):

- evaluation: ``jit(make_interp_spline)(x, y, xq)`` against
  ``scipy.interpolate.make_interp_spline(x, y)(xq)``;
- ``jit(value_and_grad)`` of ``<w, s(xq)>`` in ``y`` against SciPy by hand: the spline's
  value, then ``ȳ`` = the transposed B-spline design matrix at ``xq`` times ``w`` and the
  transposed collocation system solved by sparse LU (what the adapter's rule does);
- ``jit(value_and_grad)`` in ``xq`` against SciPy by hand: ``s(xq)`` and ``s'(xq) * w``;

and the same three through interpax's native-JAX ``CubicSpline`` (the same function; if
``pip install -e ".[bench]"`` installed it). Prints times and ratios to SciPy. Not a test:
nothing is asserted.

    python benchmarks/interpolate.py           # n = 1,000, m = 100,000: about a minute
    python benchmarks/interpolate.py --quick   # n = 50, m = 1,000: a smoke run of seconds
"""

from __future__ import annotations

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.interpolate  # noqa: E402
import scipy.sparse.linalg  # noqa: E402
from _timing import medians  # noqa: E402

from jaxbridge.adapters.interpolate import make_interp_spline  # noqa: E402

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
    options = parser.parse_args()
    n = options.n or (50 if options.quick else 1000)
    m = options.m or (1000 if options.quick else 100_000)
    rounds = options.rounds or (3 if options.quick else 21)

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


if __name__ == "__main__":
    main()
