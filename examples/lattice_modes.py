"""Lattice modes: tune the spring stiffnesses of a mass-spring chain so that its three
lowest vibration frequencies hit chosen targets, by gradient descent through ARPACK.

N unit masses in a line, joined to each other and to two fixed walls by N + 1 springs of
stiffness ``k_0 ... k_N``. The stiffness matrix ``K`` is tridiagonal (``K_ii = k_i + k_{i+1}``,
``K_{i,i+1} = -k_{i+1}``), stored as a sparse CSR matrix of fixed pattern; the vibration
frequencies are ``ω = √λ`` for its eigenvalues ``λ``. ``Eigsh(k=3, sigma=0)``
(``scipy.sparse.linalg.eigsh`` in shift-invert mode, on the host) finds the three lowest,
and ``jax.jit(jax.value_and_grad)`` differentiates the mismatch

    loss(θ) = Σ_j ((ω_j - target_j) / target_j)²,   k = exp(θ),

through it (Hellmann-Feynman: ``dλ = vᵀ dK v``, no dense matrix anywhere). Adam on ``θ``
from uniform springs (``k = 1``). The script exits non-zero unless every frequency ends
within 0.1% of its target, checked with ``numpy.linalg.eigvalsh`` on the dense matrix.

    python examples/lattice_modes.py          # N = 400 masses
    python examples/lattice_modes.py --fast   # N = 100
"""

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402

from jaxbridge.adapters.sparse import Eigsh  # noqa: E402


def chain_pattern(n: int) -> scipy.sparse.csr_array:
    pattern = scipy.sparse.csr_array(
        scipy.sparse.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(n, n))
    )
    pattern.sort_indices()
    return pattern


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="100 masses instead of 400")
    options = parser.parse_args()
    n = 100 if options.fast else 400
    print(
        "Lattice modes: tune the springs of a chain of masses so that its lowest vibration "
        "frequencies hit targets, by jit(grad) through Eigsh (scipy.sparse.linalg.eigsh)."
    )

    pattern = chain_pattern(n)
    rows = np.repeat(np.arange(n), np.diff(pattern.indptr))
    columns = pattern.indices
    on_diagonal = rows == columns

    def stiffness_data(theta):
        """The CSR values of K for springs k = exp(θ) (k_i joins masses i - 1 and i)."""
        k = jnp.exp(theta)
        return jnp.where(on_diagonal, k[rows] + k[rows + 1], -k[np.maximum(rows, columns)])

    eigsh = Eigsh(pattern.indices, pattern.indptr, pattern.shape, k=3, sigma=0.0)

    def frequencies(theta):
        return jnp.sqrt(eigsh(stiffness_data(theta))[0])

    theta = jnp.zeros(n + 1)
    start = np.asarray(frequencies(theta))
    target = start * np.array([1.3, 1.1, 1.25])  # the lowest three, no longer evenly spaced
    print(f"{n} masses; uniform springs give ω = {np.array2string(start, precision=5)}")
    print(f"targets:                     ω* = {np.array2string(target, precision=5)}")

    def loss(theta):
        return jnp.sum(((frequencies(theta) - target) / target) ** 2)

    step = jax.jit(jax.value_and_grad(loss))
    # Adam: the gradient's scale changes by orders of magnitude as the loss falls
    first, second, rate = jnp.zeros_like(theta), jnp.zeros_like(theta), 0.02
    began = time.perf_counter()
    for i in range(1, 1001):
        value, gradient = step(theta)
        if i == 1 or i % 100 == 0 or value < 1e-8:
            print(f"  step {i:4d}: loss = {float(value):.3e}")
        if value < 1e-8:
            break
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        correction = np.sqrt(1 - 0.999**i) / (1 - 0.9**i)
        theta = theta - rate * correction * first / (jnp.sqrt(second) + 1e-12)
    print(f"{i} steps in {time.perf_counter() - began:.1f} s")

    # check with dense LAPACK, independently of ARPACK and the adapter
    data = np.asarray(stiffness_data(theta))
    dense = scipy.sparse.csr_array((data, pattern.indices, pattern.indptr), shape=(n, n))
    reached = np.sqrt(np.linalg.eigvalsh(dense.toarray())[:3])
    error = np.abs(reached / target - 1)
    print(f"tuned (dense eigvalsh):      ω  = {np.array2string(reached, precision=5)}")
    print(f"relative errors: {np.array2string(error, precision=1)} (tolerance 1e-3)")
    springs = np.exp(np.asarray(theta))
    print(f"spring stiffnesses now range over [{springs.min():.3f}, {springs.max():.3f}]")
    if not (error < 1e-3).all():
        raise SystemExit("FAILED: a tuned frequency is not within 0.1% of its target.")
    print(
        "Success: the three lowest frequencies of the tuned chain are within 0.1% of their "
        "targets (checked with dense numpy.linalg.eigvalsh)."
    )


if __name__ == "__main__":
    main()
