"""What does a gradient in the degrees of freedom cost, beside SciPy's value alone?

``jit(grad)`` of ``sum(t.ppf(q, df))`` in ``df`` over N points (one host call for SciPy's
quantile, one for the exact ``∂F/∂ν`` of the incomplete beta function's continued fraction,
the density in JAX), against ``scipy.stats.t.ppf(q, df)`` alone and against ``jit`` of our
``t.ppf`` value; medians of interleaved rounds, ratios to SciPy's value printed beside.
Not a test: nothing is asserted.

    python benchmarks/stats.py           # N = 100,000
    python benchmarks/stats.py --quick   # N = 1,000, a smoke run of seconds
    python benchmarks/stats.py --df 3 30 # df uniform in [3, 30] (default [0.5, 50])
"""

from __future__ import annotations

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.stats  # noqa: E402
from _timing import medians  # noqa: E402

from jaxbridge.adapters import stats  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 1,000 and few rounds")
    parser.add_argument("--n", type=int, help="points (default 100,000; 1,000 with --quick)")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 11, 3 with --quick)")
    parser.add_argument("--df", type=float, nargs=2, default=(0.5, 50.0), help="df's range")
    options = parser.parse_args()
    n = options.n or (1_000 if options.quick else 100_000)
    rounds = options.rounds or (3 if options.quick else 11)

    rng = np.random.default_rng(0)
    q_host = rng.uniform(0.001, 0.999, n)
    low, high = options.df
    df_host = rng.uniform(low, high, n)
    q, df = jnp.asarray(q_host), jnp.asarray(df_host)

    value = jax.jit(stats.t.ppf)
    grad = jax.jit(jax.grad(lambda q, df: stats.t.ppf(q, df).sum(), argnums=1))
    times = medians(
        {
            "scipy.stats.t.ppf (value)": lambda: scipy.stats.t.ppf(q_host, df_host),
            "jit(t.ppf) (value)": lambda: value(q, df),
            "jit(grad) of t.ppf in df": lambda: grad(q, df),
        },
        rounds,
    )
    print(
        f"t.ppf(q, df), N = {n:,}, df in [{low:g}, {high:g}], float64, medians of {rounds} rounds"
    )
    print(f"  {'':28} {'median':>10} {'÷ SciPy value':>14}")
    base = times["scipy.stats.t.ppf (value)"]
    for name, seconds in times.items():
        print(f"  {name:28} {seconds * 1e3:>7.1f} ms {seconds / base:>14.2f}")


if __name__ == "__main__":
    main()
