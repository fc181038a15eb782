"""Does the backward of ``LinearSolve`` reuse the forward's LU factors?

If it does, the backward is two O(n²) triangular solves and an outer product; if it
refactorized ``a``, it would cost about as much as ``lu_factor``, O(n³). This prints,
measured side by side in one process (interleaved rounds, medians), for one n×n system:

- the forward: ``jit(LinearSolve())`` (an LU factorization and a solve, on the host);
- the backward alone: the ``jit``-ed VJP function of a ``jax.vjp`` taken beforehand, which
  holds the saved factors and runs only the adjoint solve;
- ``jit(grad)`` of a scalar through the solve, and that minus the forward;
- SciPy's ``lu_factor`` and ``lu_solve`` called directly, the O(n³) and O(n²) yardsticks.

and the ratios that answer the question. Not a test: nothing is asserted.

    python benchmarks/linear_solve_backward.py           # n = 500, about ten seconds
    python benchmarks/linear_solve_backward.py --quick   # n = 50, a smoke run of seconds
"""

from __future__ import annotations

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
from _timing import medians  # noqa: E402

from jaxbridge.adapters import LinearSolve  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 50 and few rounds")
    parser.add_argument("--n", type=int, help="matrix size (default 500, 50 with --quick)")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 101, 5 with --quick)")
    options = parser.parse_args()
    n = options.n or (50 if options.quick else 500)
    rounds = options.rounds or (5 if options.quick else 101)

    rng = np.random.default_rng(0)
    a_host = rng.normal(size=(n, n)) + np.sqrt(n) * np.eye(n)
    b_host = rng.normal(size=n)
    a, b, ct = jnp.asarray(a_host), jnp.asarray(b_host), jnp.asarray(rng.normal(size=n))
    solve = LinearSolve()

    forward = jax.jit(solve)
    grad = jax.jit(jax.grad(lambda a, b: jnp.vdot(ct, solve(a, b)), (0, 1)))
    _, pullback = jax.vjp(solve, a, b)  # a Partial holding the saved LU factors
    backward = jax.jit(lambda pullback, ct: pullback(ct))
    factors = scipy.linalg.lu_factor(a_host)

    times = medians(
        {
            "forward: jit(LinearSolve())": lambda: forward(a, b),
            "backward alone: jit(vjp function)": lambda: backward(pullback, ct),
            "jit(grad) w.r.t. a and b": lambda: grad(a, b),
            "scipy.linalg.lu_factor (O(n³))": lambda: scipy.linalg.lu_factor(a_host),
            "scipy.linalg.lu_solve (O(n²))": lambda: scipy.linalg.lu_solve(factors, b_host),
        },
        rounds,
    )
    times["jit(grad) minus forward"] = (
        times["jit(grad) w.r.t. a and b"] - times["forward: jit(LinearSolve())"]
    )

    print(f"LinearSolve, n = {n}, float64, medians of {rounds} interleaved rounds")
    print(f"  {'':36} {'median':>10} {'÷ lu_factor':>12}")
    factor = times["scipy.linalg.lu_factor (O(n³))"]
    for name, seconds in times.items():
        print(f"  {name:36} {seconds * 1e3:>7.3f} ms {seconds / factor:>12.2f}")
    back, fwd = times["backward alone: jit(vjp function)"], times["forward: jit(LinearSolve())"]
    print(
        f"\nbackward / forward = {back / fwd:.2f};  backward / lu_factor = {back / factor:.2f};"
        f"  (grad - forward) / lu_factor = {times['jit(grad) minus forward'] / factor:.2f}"
    )
    print(
        "A backward that refactorized would cost at least one lu_factor (ratio >= 1); with the\n"
        "saved factors it is an lu_solve, an outer product and a host call. 'jit(grad) minus\n"
        "forward' is a difference of two noisy medians: on a busy machine trust 'backward alone'."
    )


if __name__ == "__main__":
    main()
