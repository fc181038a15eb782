"""What the sparse adapters share: a checked CSR pattern, the matrix on it with given
values, and the products with a matrix given by its values on the pattern, written in JAX
(so that rules built from them differentiate again)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse

from .._shared._csr import check_pattern


@dataclass(frozen=True)
class Pattern:
    """A CSR sparsity pattern (``indices``, ``indptr``, ``shape`` as in
    ``scipy.sparse.csr_array``), checked once, with the row and column of every entry."""

    indices: tuple[int, ...]
    indptr: tuple[int, ...]
    shape: tuple[int, int]

    @classmethod
    def checked(
        cls, owner: str, indices: object, indptr: object, shape: object, square: bool = True
    ) -> Pattern:
        """The pattern, or a ``ValueError`` naming ``owner`` and the parameter at fault."""
        return cls(*check_pattern(owner, indices, indptr, shape, square))

    @property
    def n(self) -> int:
        """The number of rows."""
        return self.shape[0]

    @property
    def nnz(self) -> int:
        return len(self.indices)

    @functools.cached_property
    def rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.indptr))

    @functools.cached_property
    def columns(self) -> np.ndarray:
        return np.asarray(self.indices, dtype=np.int32)

    @functools.cached_property
    def transposed(self) -> tuple[Pattern, np.ndarray]:
        """The pattern of ``aᵀ``, and where each of its entries sits in ``data``."""
        order = np.lexsort((self.rows, self.columns))  # by column, then row: aᵀ's rows
        indptr = np.concatenate([[0], np.cumsum(np.bincount(self.columns, minlength=self.n))])
        transposed = Pattern(tuple(self.rows[order].tolist()), tuple(indptr.tolist()), self.shape)
        return transposed, order.astype(np.int32)  # int32, as JAX indexes in either mode

    @functools.cached_property
    def frechet_block(self) -> tuple[Pattern, np.ndarray]:
        """The pattern of ``[[a, e], [0, a]]`` (2n x 2n, ``e`` on ``a``'s pattern), and where
        each of its entries sits in ``concatenate([data_a, data_e])``."""
        n, nnz = self.n, self.nnz
        entries = np.arange(nnz)
        rows = np.concatenate([self.rows, self.rows, self.rows + n])
        columns = np.concatenate([self.columns, self.columns + n, self.columns + n])
        source = np.concatenate([entries, entries + nnz, entries])
        order = np.lexsort((columns, rows))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=2 * n))])
        block = Pattern(tuple(columns[order].tolist()), tuple(indptr.tolist()), (2 * n, 2 * n))
        return block, source[order].astype(np.int32)

    @functools.cached_property
    def augmented(self) -> tuple[Pattern, np.ndarray]:
        """The pattern of the symmetric ``[[0, a], [aᵀ, 0]]`` ((m + n) x (m + n)), whose
        eigenpairs are ``±s`` and ``[u; ±v] / √2`` for the singular triplets of ``a``, and
        where each of its entries sits in ``data``."""
        m, n = self.shape
        rows = np.concatenate([self.rows, self.columns + m])
        columns = np.concatenate([self.columns + m, self.rows])
        source = np.concatenate([np.arange(self.nnz)] * 2)
        order = np.lexsort((columns, rows))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=m + n))])
        size = (m + n, m + n)
        augmented = Pattern(tuple(columns[order].tolist()), tuple(indptr.tolist()), size)
        return augmented, source[order].astype(np.int32)

    def matrix(self, data: np.ndarray) -> scipy.sparse.csr_array:
        """The matrix with values ``data`` (float64; duplicate entries summed, as SciPy does)."""
        indptr = np.asarray(self.indptr, dtype=np.int32)
        return scipy.sparse.csr_array(
            (np.asarray(data, np.float64), self.columns, indptr), shape=self.shape
        )

    def symmetric_part(self, data: np.ndarray) -> scipy.sparse.csr_array:
        """``(a + aᵀ) / 2`` for the matrix ``a`` with values ``data``: ``a`` itself when it is
        symmetric, and a function defined (and differentiable) for every ``data``."""
        a = self.matrix(data)
        return ((a + a.T) * 0.5).tocsr()

    def product(self, data: jax.Array, x: jax.Array) -> jax.Array:
        """``a x`` in JAX for ``a`` given by ``data`` (..., nnz) on the pattern, ``x``
        (..., n, p), batch axes broadcasting."""
        return _scatter(self.rows, data[..., :, None] * x[..., self.columns, :], self.n)

    def symmetric_product(self, data: jax.Array, x: jax.Array) -> jax.Array:
        """``(a + aᵀ) x / 2`` in JAX (shapes as ``product``)."""
        rows, columns = self.rows, self.columns
        on_rows = _scatter(rows, data[..., :, None] * x[..., columns, :], self.n)
        on_columns = _scatter(columns, data[..., :, None] * x[..., rows, :], self.n)
        return (on_rows + on_columns) / 2

    def symmetric_outer(self, y: jax.Array, x: jax.Array) -> jax.Array:
        """The derivative of ``<y, (a + aᵀ) x / 2>`` in ``data``: ``(y[r] x[c] + x[r] y[c]) / 2``
        at each stored entry ``(r, c)``, summed over the last axis of ``y`` and ``x``
        (..., n, p); the result is (..., nnz)."""
        rows, columns = self.rows, self.columns
        terms = y[..., rows, :] * x[..., columns, :] + x[..., rows, :] * y[..., columns, :]
        return jnp.sum(terms, axis=-1) / 2


def _scatter(rows: np.ndarray, terms: jax.Array, n: int) -> jax.Array:
    """Sum ``terms`` (..., nnz, p) into the rows (..., n, p) that ``rows`` names."""
    return (
        jnp.zeros(terms.shape[:-2] + (n,) + terms.shape[-1:], terms.dtype)
        .at[..., rows, :]
        .add(terms)
    )
