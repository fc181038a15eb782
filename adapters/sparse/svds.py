"""``Svds``: the largest singular triplets of a sparse matrix of fixed pattern, by ARPACK
(``scipy.sparse.linalg.svds``); the rules are ``Eigsh``'s on the symmetric augmented matrix
``[[0, a], [aᵀ, 0]]``, whose eigenpairs are ``(s, [u; v] / √2)``."""

from __future__ import annotations

import functools
import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._failure import MayFail, SolveFailure, require_finite
from ._eigen import arpack_failure, eigen_cotangent, eigen_tangents
from ._pattern import Pattern
from .eigsh import Eigsh


class _Augmented(Eigsh):
    """``Eigsh`` of ``[[0, a], [aᵀ, 0]]``, whose errors speak of singular values."""

    values_name = "singular values"


class Svds(MayFail):
    """The ``k`` largest singular values ``s`` and their vectors ``u``, ``vt`` of a sparse
    ``m x n`` matrix, as ``scipy.sparse.linalg.svds``: ``a ≈ u diag(s) vt`` on them.

    For a SciPy CSR matrix ``mat``: ``u, s, vt = Svds(mat.indices, mat.indptr, mat.shape,
    k=3)(mat.data)``. ``data`` (nnz,) holds the values on the fixed pattern; leading axes are
    batch axes. ``s`` (k,) is descending, ``u`` (m, k) and ``vt`` (k, n) have orthonormal
    columns and rows, each pair signed so that the entry of largest magnitude of ``u``'s
    column is positive. ARPACK starts from a fixed vector: equal inputs, equal results.

    Derivatives (in ``data``, each stored entry independent, both modes):
    ``ds_i / d data_e = u[r, i] v[c, i]`` for the entry at ``(r, c)``; the vectors' derivative
    is the eigenvector derivative of ``[[0, a], [aᵀ, 0]]`` at ``[u_i; v_i] / √2`` (a sparse
    bordered solve of m + n + 1 unknowns per vector, ``Eigsh``'s rules), so every order
    works. Repeated singular values (the twin among the ``k`` or not) or a zero one have no
    vector derivative: in both modes an error naming ``Svds`` with the gap, or NaN with
    ``on_failure="nan"`` (as ``Eigsh``'s, eager ``jvp`` included).

    Parameters:
        indices, indptr, shape: the CSR pattern, ``shape = (m, n)``.
        k: how many triplets, ``1 <= k < min(m, n)``.
        on_failure: see ``MayFail``; fails where ``Eigsh`` does.
    """

    indices: tuple[int, ...]
    indptr: tuple[int, ...]
    shape: tuple[int, int]
    k: int = 6

    signature = "(e)->(m,k),(k),(k,n)"
    blas_threads = 1  # ARPACK's products with its basis woke OpenBLAS's threads (see Eigsh)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        pattern = Pattern.checked(owner, self.indices, self.indptr, self.shape, square=False)
        object.__setattr__(self, "indices", pattern.indices)
        object.__setattr__(self, "indptr", pattern.indptr)
        object.__setattr__(self, "shape", pattern.shape)
        if isinstance(self.k, bool) or not isinstance(self.k, numbers.Integral):
            raise ValueError(f"{owner}: parameter 'k' must be an int; got {self.k!r}.")
        if not 1 <= self.k < min(pattern.shape):
            raise ValueError(
                f"{owner}: parameter 'k' must satisfy 1 <= k < min(m, n) = "
                f"{min(pattern.shape)} (ARPACK); got {self.k}."
            )
        object.__setattr__(self, "k", int(self.k))

    @property
    def domains(self):
        return {"data": self.separated_spectrum}

    def separated_spectrum(self, raw: np.ndarray) -> np.ndarray:
        """Values on the pattern with well-separated singular values, for tests (patterns
        that store the diagonal ``(i, i)``): diagonal entry ``i`` is ``q - i + raw / 4``
        (``q = min(m, n)``), the others at most ``1 / 8`` per row and per column in all, so
        each singular value lies within ``3 / 8`` of its own diagonal value."""
        pattern = self._pattern
        counts = max(np.bincount(pattern.rows).max(), np.bincount(pattern.columns).max())
        on_diagonal = pattern.rows == pattern.columns
        size = min(self.shape)
        return np.where(on_diagonal, size - pattern.rows + raw / 4, raw / (8 * counts))

    @functools.cached_property
    def _pattern(self) -> Pattern:
        return Pattern(self.indices, self.indptr, self.shape)

    @functools.cached_property
    def _augmented(self) -> tuple[Eigsh, np.ndarray]:
        pattern, source = self._pattern.augmented
        eigsh = _Augmented(
            pattern.indices,
            pattern.indptr,
            pattern.shape,
            k=self.k,
            which="LA",
            on_failure=self.on_failure,
        )
        return eigsh, source

    def output_specs(self, data):
        (m, n), k, nnz = self.shape, self.k, len(self.indices)
        if data.shape != (nnz,):
            raise ValueError(
                f"{type(self).__name__}: 'data' must have the pattern's {nnz} entries; got core "
                f"shape {data.shape}."
            )
        dtype = jb.result_dtype(data)
        return tuple(jax.ShapeDtypeStruct(s, dtype) for s in ((m, k), (k,), (k, n)))

    def forward(self, data):
        (m, n), k, dtype = self.shape, self.k, jb.result_dtype(data)
        try:
            require_finite("the matrix's 'data'", data)
            a = self._pattern.matrix(data)
            start = np.random.default_rng(0).uniform(-1.0, 1.0, min(m, n))
            try:
                u, s, vt = scipy.sparse.linalg.svds(a, k=k, v0=start, solver="arpack")
            except scipy.sparse.linalg.ArpackNoConvergence as error:
                raise SolveFailure.because(f"ARPACK did not converge ({error})") from None
            except scipy.sparse.linalg.ArpackError as error:
                raise arpack_failure(error, "the matrix", "'data'", "singular values") from None
        except np.linalg.LinAlgError as error:
            return self.nan_on_failure(error, (m, k), (k,), (k, n), dtype=dtype)
        assert u is not None and vt is not None  # return_singular_vectors=True
        order = np.argsort(s)[::-1]
        u, s, vt = u[:, order], s[order], vt[order]
        largest = np.argmax(np.abs(u), axis=0)
        signs = np.where(u[largest, np.arange(k)] < 0, -1.0, 1.0)
        return (u * signs).astype(dtype), s.astype(dtype), (vt * signs[:, None]).astype(dtype)

    def _eigen_res(self, data, u, s, vt):
        """``Eigsh``'s ``res`` on the augmented matrix: its values, ``s``, ``[u; v] / √2``."""
        eigsh, source = self._augmented
        x = jnp.concatenate([u, jnp.swapaxes(vt, -1, -2)], axis=-2) / math.sqrt(2)
        return eigsh, source, (data[..., source], s, x)

    def _split(self, x):
        m = self.shape[0]
        return x[..., :m, :] * math.sqrt(2), jnp.swapaxes(x[..., m:, :], -1, -2) * math.sqrt(2)

    def pushforward(self, res, tangents):
        data, u, s, vt = res
        (ddata,) = tangents
        if ddata is None:
            return None
        eigsh, source, eigen_res = self._eigen_res(data, u, s, vt)
        ds, dx = eigen_tangents(eigsh, "Svds", *eigen_res, ddata[..., source])
        du, dvt = self._split(dx)
        return du, ds, dvt

    def pullback(self, res, g):
        data, u, s, vt = res
        gu, gs, gvt = g
        eigsh, source, eigen_res = self._eigen_res(data, u, s, vt)
        gx = jnp.concatenate([gu, jnp.swapaxes(gvt, -1, -2)], axis=-2) * math.sqrt(2)
        gaugmented = eigen_cotangent(eigsh, "Svds", *eigen_res, (gs, gx))
        nnz = len(self.indices)
        zeros = jnp.zeros(gaugmented.shape[:-1] + (nnz,), gaugmented.dtype)
        return (zeros.at[..., source].add(gaugmented),)
