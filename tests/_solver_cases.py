"""The solver adapters beside native JAX references, with well-posed random inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve, LyapunovSolve, SparseSolve, SylvesterSolve


@dataclass(frozen=True)
class Case:
    name: str
    adapter: jb.Adapter
    reference: Callable[..., jax.Array]
    make: Callable[[np.random.Generator], tuple[np.ndarray, ...]]

    def args(self, dtype: type = np.float64, seed: int = 0) -> tuple[jax.Array, ...]:
        return tuple(jnp.asarray(a, dtype) for a in self.make(np.random.default_rng(seed)))

    def batched_args(self, dtype: type = np.float64, size: int = 3) -> tuple[jax.Array, ...]:
        """``size`` independent problems stacked along a new leading axis."""
        draws = [self.args(dtype, seed) for seed in range(1, size + 1)]
        return tuple(jnp.stack(column) for column in zip(*draws))


def _t(m: jax.Array) -> jax.Array:
    return jnp.swapaxes(m, -1, -2)


def sylvester_reference(a: jax.Array, b: jax.Array, q: jax.Array) -> jax.Array:
    """``a x + x b = q`` as one linear system, by the vec trick (row-major vec)."""
    n, m = q.shape
    operator = jnp.kron(a, jnp.eye(m, dtype=a.dtype)) + jnp.kron(jnp.eye(n, dtype=a.dtype), b.T)
    return jnp.linalg.solve(operator, q.reshape(-1)).reshape(n, m)


def lyapunov_reference(a: jax.Array, q: jax.Array) -> jax.Array:
    return sylvester_reference(a, a.T, q)


def _general(rng: np.random.Generator, n: int) -> np.ndarray:
    # a random matrix pushed away from singularity: condition numbers of a few units
    return rng.normal(size=(n, n)) + n * np.eye(n)


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.normal(size=(n, n))
    return m @ m.T + n * np.eye(n)


def _stable(rng: np.random.Generator, n: int) -> np.ndarray:
    # eigenvalues with real part <= -1, so no two of them sum to zero
    return -_spd(rng, n) / n + rng.normal(size=(n, n)) * 0.3 * np.triu(np.ones((n, n)), 1)


# A fixed 6x6 pattern with fill-in: a tridiagonal band plus two far entries per row.
PATTERN = scipy.sparse.csr_array(
    np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1) + np.eye(6, k=3) + np.eye(6, k=-4)
)
SPARSE = SparseSolve(PATTERN.indices, PATTERN.indptr, PATTERN.shape)
# Row and column of every entry, of one integer dtype: mixed int32/int64 index arrays trip
# jax's index normalisation once x64 has been switched on and off.
_ROWS = np.repeat(np.arange(6, dtype=np.int32), np.diff(PATTERN.indptr))
_COLUMNS = PATTERN.indices.astype(np.int32)


def sparse_dense(data: jax.Array) -> jax.Array:
    """The dense matrix with ``data`` on the pattern (duplicates summed, as SciPy does)."""
    return jnp.zeros(data.shape[:-1] + (6, 6), data.dtype).at[..., _ROWS, _COLUMNS].add(data)


def _sparse_data(rng: np.random.Generator) -> np.ndarray:
    data = rng.normal(size=PATTERN.nnz)
    data[_ROWS == _COLUMNS] += 4.0  # diagonally heavy: well conditioned
    return data


CASES = [
    Case(
        "linear",
        LinearSolve(),
        jnp.linalg.solve,
        lambda rng: (_general(rng, 4), rng.normal(size=4)),
    ),
    Case(
        "linear-pos",
        LinearSolve(assume_a="pos"),
        lambda a, b: jnp.linalg.solve((a + _t(a)) / 2, b),
        lambda rng: (_spd(rng, 4), rng.normal(size=4)),
    ),
    Case(
        "sylvester",
        SylvesterSolve(),
        sylvester_reference,
        lambda rng: (_stable(rng, 4), _stable(rng, 3), rng.normal(size=(4, 3))),
    ),
    Case(
        "lyapunov",
        LyapunovSolve(),
        lyapunov_reference,
        lambda rng: (_stable(rng, 4), rng.normal(size=(4, 4))),
    ),
    Case(
        "sparse",
        SPARSE,
        lambda data, b: jnp.linalg.solve(sparse_dense(data), b),
        lambda rng: (_sparse_data(rng), rng.normal(size=6)),
    ),
]
IDS = [c.name for c in CASES]

# Worst errors measured against the references (relative to each array's largest entry, for
# values, gradients and Hessians): 3e-7 in float32, 4e-16 in float64. The bounds leave a
# margin of 30x and 250x and still fail anything 1% off (test_tolerance_catches_...).
TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-13}


def assert_close(actual: object, expected: object, dtype: type = np.float64) -> None:
    """Elementwise, with an absolute floor scaled to the largest entry of each array."""
    tol = TOLERANCE[np.dtype(dtype)]
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        e = np.asarray(e)
        assert np.shape(a) == e.shape
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        np.testing.assert_allclose(np.asarray(a), e, rtol=tol, atol=tol * scale)


def projected(function: Callable[..., jax.Array], cotangent: jax.Array) -> Callable[..., jax.Array]:
    """``sum(sin(function(*args)) * cotangent)``: a scalar whose gradient is a full VJP and
    whose second derivatives involve the adapter's second derivatives."""
    return lambda *args: jnp.sum(jnp.sin(function(*args)) * cotangent)
