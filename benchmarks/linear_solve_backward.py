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

A batch of small matrices, each with its own right-hand side, is the exception: NumPy has no
batched LU whose factors a later call could use, so its rules solve afresh (one batched
``numpy.linalg.solve``) rather than apply saved factors. ``--many`` measures that case (#56):
``vmap`` of ``LinearSolve`` over 2,000 systems of 16 x 16 against ``jnp.linalg.solve``
(forward, ``jit(grad)``, ``jit(jvp)``), and the batched NumPy calls its time is made of.

    python benchmarks/linear_solve_backward.py           # n = 500, about ten seconds
    python benchmarks/linear_solve_backward.py --quick   # n = 50, a smoke run of seconds
    python benchmarks/linear_solve_backward.py --many    # 2,000 systems of 16 x 16
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


def many_small(count: int, n: int, rounds: int) -> None:
    """``vmap`` over ``count`` systems of n x n: the bridge against ``jnp.linalg.solve``,
    and the batched NumPy calls on the host (the forward's solve and determinant, the rules'
    solve; the inverses the forward used to compute instead)."""
    rng = np.random.default_rng(5)
    a_host = rng.normal(size=(count, n, n)) + n * np.eye(n)
    b_host = rng.normal(size=(count, n))
    a, b = jnp.asarray(a_host), jnp.asarray(b_host)
    contenders = {}
    for label, solve in (("jnp.linalg.solve", jnp.linalg.solve), ("LinearSolve", LinearSolve())):
        loss = lambda a, b, s=solve: jnp.sum(jnp.sin(jax.vmap(s)(a, b)))  # noqa: E731
        forward = jax.jit(jax.vmap(solve))
        grad = jax.jit(jax.grad(loss, (0, 1)))
        jvp = jax.jit(lambda p, t, s=solve: jax.jvp(jax.vmap(s), p, t))
        contenders[f"{label} forward"] = lambda f=forward: f(a, b)
        contenders[f"{label} jit(grad)"] = lambda f=grad: f(a, b)
        contenders[f"{label} jit(jvp)"] = lambda f=jvp: f((a, b), (a, b))
    column = b_host[..., None]
    contenders |= {
        "numpy.linalg.solve": lambda: np.linalg.solve(a_host, column),
        "numpy.linalg.slogdet": lambda: np.linalg.slogdet(a_host),
        "numpy.linalg.inv": lambda: np.linalg.inv(a_host),
    }
    times = medians(contenders, rounds)
    print(f"vmap over {count:,} systems of {n}x{n}, float64, medians of {rounds} rounds")
    print(f"  {'':28} {'jnp.linalg.solve':>17} {'LinearSolve':>12} {'ratio':>7}")
    for kind in ("forward", "jit(grad)", "jit(jvp)"):
        native, bridged = times[f"jnp.linalg.solve {kind}"], times[f"LinearSolve {kind}"]
        print(
            f"  {kind:28} {native * 1e3:>14.2f} ms {bridged * 1e3:>9.2f} ms "
            f"{bridged / native:>7.2f}"
        )
    print("  on the host, batched:")
    for name in ("numpy.linalg.solve", "numpy.linalg.slogdet", "numpy.linalg.inv"):
        print(f"  {name:28} {times[name] * 1e3:>14.2f} ms")
    print(
        "The forward is a solve and a determinant (the condition bound); the backward and the\n"
        "forward mode each one more solve. Target (#56): ratios <= 2."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 50 and few rounds")
    parser.add_argument("--n", type=int, help="matrix size (default 500, 50 with --quick)")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 101, 5 with --quick)")
    parser.add_argument(
        "--many", action="store_true", help="vmap over 2,000 systems of 16 x 16 instead"
    )
    options = parser.parse_args()
    if options.many:
        many_small(
            200 if options.quick else 2000, 16, options.rounds or (3 if options.quick else 41)
        )
        return
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
