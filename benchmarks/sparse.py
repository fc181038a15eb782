"""What do a sparse eigensolve and its gradient cost, beside SciPy called directly?

The 2-D Laplacian (five-point stencil, Dirichlet boundary) on a g x g grid, n = g² unknowns
(g = 317: about 10^5), both triangles stored as CSR. Contenders: ``scipy.sparse.linalg.eigsh(a,
k=6, sigma=0)`` called directly (with the adapter's fixed start vector, so both do the same
work), ``jit`` of ``Eigsh(k=6, sigma=0)``'s value, and ``jit(grad)`` of the sum of its
eigenvalues in ``data`` (Hellmann-Feynman: one ARPACK run and a sum over the entries; no
bordered solve, since the eigenvectors' cotangent is zero). Medians of interleaved rounds,
ratios printed beside; then the peak of traced host allocations (NumPy and Python, by
``tracemalloc``) of one call of each, beside the n x n dense matrix none of them forms.
Not a test: nothing is asserted.

Then ``expm(a) @ b`` (``ExpmMultiply``) on a random nonsymmetric n x n matrix (n = 500,
about 2,410 stored entries: the diagonal and 1,910 normal entries, one-norm about 40): SciPy's
``expm_multiply`` called directly, ``jit`` of the adapter's value, ``jit(value_and_grad)`` in
``data`` of ``Σ w y``, and the same ``value_and_grad`` of the dense ``jax.scipy.linalg.expm``,
each ÷ SciPy's value.

    python benchmarks/sparse.py           # g = 317, n = 100,489; expm n = 500
    python benchmarks/sparse.py --quick   # g = 40, a smoke run of seconds
    python benchmarks/sparse.py --expm-only
"""

from __future__ import annotations

import argparse
import resource
import tracemalloc

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402
import scipy.sparse.linalg  # noqa: E402
from _timing import medians  # noqa: E402

from jaxbridge.adapters.sparse import Eigsh, ExpmMultiply  # noqa: E402


def laplacian(g: int) -> scipy.sparse.csr_array:
    line = scipy.sparse.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(g, g))
    eye = scipy.sparse.eye_array(g)
    a = scipy.sparse.csr_array(scipy.sparse.kron(line, eye) + scipy.sparse.kron(eye, line))
    a.sort_indices()
    return a


def peak_mb(run) -> float:
    jax.block_until_ready(run())  # compiled and warm: measure the call, not the compiling
    tracemalloc.start()
    jax.block_until_ready(run())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def expm_matrix(n: int, seed: int = 0) -> scipy.sparse.csr_array:
    """The diagonal (-1.5) and ``3.82 n`` normal entries times 3.5 at random places, CSR."""
    rng = np.random.default_rng(seed)
    a = scipy.sparse.random_array(
        (n, n), density=3.82 / n, rng=rng, format="csr", data_sampler=rng.standard_normal
    )
    a = scipy.sparse.csr_array(3.5 * a - 1.5 * scipy.sparse.eye_array(n, format="csr"))
    a.sort_indices()
    return a


def expm_rows(n: int, rounds: int) -> None:
    """``ExpmMultiply``'s value and gradient in ``data`` beside SciPy's value and the dense
    ``jax.scipy.linalg.expm``, printed as ratios to SciPy's value."""
    a = expm_matrix(n)
    rng = np.random.default_rng(1)
    b, w = rng.standard_normal(n), rng.standard_normal(n)
    expm_multiply = ExpmMultiply(a.indices, a.indptr, a.shape)
    rows = np.repeat(np.arange(n), np.diff(a.indptr))
    data = jnp.asarray(a.data)

    def dense_loss(d):
        matrix = jnp.zeros((n, n)).at[rows, a.indices].add(d)
        return jnp.sum(w * (jax.scipy.linalg.expm(matrix) @ b))

    value = jax.jit(lambda d: expm_multiply(d, b, 1.0))
    value_and_grad = jax.jit(jax.value_and_grad(lambda d: jnp.sum(w * expm_multiply(d, b, 1.0))))
    dense = jax.jit(jax.value_and_grad(dense_loss))
    contenders = {
        "scipy expm_multiply (value)": lambda: scipy.sparse.linalg.expm_multiply(a, b),
        "jit(ExpmMultiply) (value)": lambda: value(data),
        "jit(value_and_grad) in data": lambda: value_and_grad(data),
        "dense jax expm value_and_grad": lambda: dense(data),
    }
    got, expected = value_and_grad(data), dense(data)
    assert np.allclose(got[1], expected[1], rtol=1e-9, atol=1e-9 * np.abs(expected[1]).max())
    times = medians(contenders, rounds)
    base = times["scipy expm_multiply (value)"]
    norm = float(abs(a).sum(axis=0).max())
    print(f"expm(a) @ b, n = {n:,}, nnz = {a.nnz:,}, ||a||_1 = {norm:.1f}, float64,")
    print(f"medians of {rounds} interleaved rounds")
    print(f"  {'':30} {'median':>10} {'÷ SciPy':>8}")
    for name, seconds in times.items():
        print(f"  {name:30} {seconds * 1e3:>7.2f} ms {seconds / base:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="g = 40 and few rounds")
    parser.add_argument("--grid", type=int, help="grid side g (default 317; 40 with --quick)")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 5, 2 with --quick)")
    parser.add_argument("--expm-only", action="store_true", help="the ExpmMultiply rows alone")
    options = parser.parse_args()
    if options.expm_only:
        expm_rows(500, options.rounds or 5)
        return
    g = options.grid or (40 if options.quick else 317)
    rounds = options.rounds or (2 if options.quick else 5)

    a = laplacian(g)
    n = a.shape[0]
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=6, sigma=0.0)
    start = eigsh._start  # the same start vector for SciPy: the same ARPACK iterations
    data = jnp.asarray(a.data)
    value = jax.jit(eigsh)
    grad = jax.jit(jax.grad(lambda d: jnp.sum(eigsh(d)[0])))

    def scipy_eigsh():
        return scipy.sparse.linalg.eigsh(a, k=6, sigma=0.0, v0=start)

    contenders = {
        "scipy eigsh (value)": scipy_eigsh,
        "jit(Eigsh) (value)": lambda: value(data),
        "jit(grad) of sum(w)": lambda: grad(data),
    }
    w_ref = np.sort(scipy_eigsh()[0])
    w, _ = value(data)
    assert np.allclose(w, w_ref, rtol=1e-10), "the adapter's eigenvalues differ from SciPy's"
    times = medians(contenders, rounds)
    base = times["scipy eigsh (value)"]
    print(f"2-D Laplacian {g}x{g}, n = {n:,}, nnz = {a.nnz:,}: eigsh(k=6, sigma=0), float64,")
    print(f"medians of {rounds} interleaved rounds")
    print(f"  {'':22} {'median':>10} {'÷ SciPy':>8} {'peak traced host MB':>20}")
    for name, seconds in times.items():
        peak = peak_mb(contenders[name])
        print(f"  {name:22} {seconds * 1e3:>7.1f} ms {seconds / base:>8.2f} {peak:>20.1f}")
    ratio = times["jit(grad) of sum(w)"] / times["jit(Eigsh) (value)"]
    print(f"  gradient ÷ value (jit): {ratio:.2f}")
    print(f"  a dense n x n float64 matrix would take {n * n * 8 / 2**20:,.0f} MB")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak resident memory of this whole process: {rss:,.0f} MB")
    print()
    expm_rows(500, rounds)


if __name__ == "__main__":
    main()
