"""jaxbridge in one script: SciPy and NumPy on the host, inside jit, vmap and grad.

Each line prints the bridged answer beside native JAX's, and the script exits non-zero if
any pair disagrees.

    python examples/quickstart.py     # ~8 s of CPU, most of it importing JAX and compiling
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxbridge.adapters import Doubling, LinearSolve  # noqa: E402


def show(label: str, bridged: jax.Array, native: jax.Array) -> bool:
    agree = np.allclose(bridged, native, rtol=1e-10, atol=1e-12)

    def text(x: jax.Array) -> str:
        return np.array2string(np.asarray(x), precision=6).replace("\n", "\n" + " " * 13)

    print(f"{label}\n  jaxbridge: {text(bridged)}")
    print(f"  native   : {text(native)}   {'agree' if agree else 'DISAGREE'}")
    return agree


def main() -> None:
    print(
        "Quickstart: call NumPy and SciPy (a doubling, scipy.linalg's LU solve) from JAX, "
        "under jit,\nvmap and grad, and compare every answer with native JAX's.\n"
        f"(bridged calls on the {jax.default_backend()} backend, native JAX's on the CPU)\n"
    )
    double, solve = Doubling(), LinearSolve()
    xs = jnp.linspace(-1.0, 1.0, 4)
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.normal(size=(3, 3)) + 3 * np.eye(3))
    bs = jnp.asarray(rng.normal(size=(4, 3)))  # four right-hand sides

    def loss(solver):
        # a scalar through the solve, to differentiate with respect to the matrix
        return lambda a, b: jnp.sum(jnp.sin(solver(a, b)))

    # the references run on the CPU backend: native JAX's float64 solve there (XLA's TPU
    # backend has no float64 LU); the bridged calls run wherever JAX's default backend is
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        native = [
            jax.vmap(jax.grad(lambda x: jnp.sin(2 * x)))(xs),
            jnp.linalg.solve(a, bs[0]),
            jax.vmap(jnp.linalg.solve, (None, 0))(a, bs),
            jax.grad(loss(jnp.linalg.solve))(a, bs[0])[0],
            jax.grad(jax.grad(lambda t: jnp.linalg.solve(a * t, bs[0])[0]))(1.5),
        ]
    bridged = [
        jax.jit(jax.vmap(jax.grad(lambda x: jnp.sin(double(x)))))(xs),
        jax.jit(solve)(a, bs[0]),
        jax.jit(jax.vmap(solve, (None, 0)))(a, bs),
        jax.jit(jax.grad(loss(solve)))(a, bs[0])[0],
        jax.grad(jax.grad(lambda t: solve(a * t, bs[0])[0]))(1.5),
    ]
    labels = [
        "Doubling under jit(vmap(grad)):",
        "LinearSolve (scipy.linalg.lu_factor / lu_solve) under jit:",
        "vmap over right-hand sides, one host call:",
        "jit(grad) with respect to the matrix, first row:",
        "second derivative, grad(grad), of a scalar solve:",
    ]
    checks = [show(*line) for line in zip(labels, bridged, native)]
    if not all(checks):
        raise SystemExit("FAILED: jaxbridge and native JAX disagree (see DISAGREE above).")
    print(f"\nSuccess: all {len(checks)} bridged results agree with native JAX (to 1e-10).")


if __name__ == "__main__":
    main()
