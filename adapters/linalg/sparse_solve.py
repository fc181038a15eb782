"""``SparseSolve``: ``a x = b`` for a CSR matrix of fixed pattern, by SuperLU; the backward
reuses the forward's sparse LU factors, carried as fixed-size arrays."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._csr import check_pattern
from .._shared._failure import MayFail, require_finite
from ._solving import (
    failure,
    lapack_dtype,
    solve_per_matrix,
)

_NOT_SAVED = -1  # factor_pointers[0, 0] when the factors did not fit: refactorize


class SparseSolve(MayFail):
    """Solve ``a x = b`` for a sparse ``a`` of fixed pattern, by SuperLU.

    For a SciPy CSR matrix ``m``: ``x = SparseSolve(m.indices, m.indptr, m.shape)(m.data, b)``.

    The pattern (``indices``, ``indptr``, ``shape``, as in ``scipy.sparse.csr_array``) is
    fixed when the adapter is made; ``data`` (nnz,) holds the values and is what gets a
    gradient, on the pattern only. ``b`` is (n,); leading axes of ``data`` and ``b`` are
    batch axes that broadcast like a NumPy gufunc, and values shared by several right-hand
    sides are factorized once. Duplicate entries are summed, as SciPy does.

    The forward factorizes with ``scipy.sparse.linalg.splu`` and saves SuperLU's ``L``,
    ``U`` and permutations as residuals. Their number of nonzeros depends on the values
    (pivoting), but residuals need a fixed size: ``factor_capacity`` entries of ``L`` and
    ``U`` together. The backward solves ``aᵀ λ = ḡ`` with two sparse triangular solves on the
    saved factors, O(nnz(L + U)). If a factorization needs more than ``factor_capacity``
    entries, that call's backward factorizes ``a`` again instead (correct, but as costly as
    the forward): raise ``factor_capacity`` if that matters. The backward and the forward
    mode (``a ẋ = ḃ - ȧ x``) are made of bridged solves, so derivatives of every order work
    in both modes.

    Parameters:
        indices, indptr: the CSR pattern, stored as tuples of ints (NumPy arrays are
            accepted and converted), so that the adapter is hashable.
        shape: ``(n, n)``.
        on_failure: keyword-only, see ``MayFail``. Fails on a singular matrix (an exactly
            zero pivot, or one below machine epsilon times the largest ``|data|``) or a
            non-finite ``data`` or ``b``.
        factor_capacity: room for the saved factors, in nonzeros (each call's residuals
            hold that many values and as many int32 indices). By default twice what a
            factorization of random values on the pattern needs, measured once when the
            adapter is made; ``0`` saves nothing (every backward refactorizes).

    A pattern that no values make invertible is refused when the adapter is made: one with
    an empty row, or (found by that trial factorization, so with the default
    ``factor_capacity`` only) one that is structurally singular.
    """

    indices: tuple[int, ...]
    indptr: tuple[int, ...]
    shape: tuple[int, int]
    factor_capacity: int | None = None

    signature = "(k),(n)->(n)"
    vectorized = True
    linear_in = ("b",)
    residuals_from = ("data",)  # factors: stored once per matrix, not per right-hand side

    def __post_init__(self) -> None:
        indices, indptr, shape = check_pattern("SparseSolve", self.indices, self.indptr, self.shape)
        steps = np.diff(indptr)
        if (steps == 0).any():
            raise ValueError(
                f"SparseSolve: the pattern has no entries in row {int(np.argmin(steps))}, so "
                "every matrix on it is singular."
            )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "indptr", indptr)
        capacity = self.factor_capacity
        if capacity is None:
            capacity = 2 * self._trial_fill()
        elif isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise ValueError(
                f"SparseSolve: parameter 'factor_capacity' must be a non-negative int or None; "
                f"got {capacity!r}."
            )
        object.__setattr__(self, "factor_capacity", capacity)

    # NumPy copies of the pattern; the tuples are the adapter's (hashable) identity.
    @functools.cached_property
    def _columns(self) -> np.ndarray:
        return np.asarray(self.indices, dtype=np.int32)

    @functools.cached_property
    def _rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.shape[0], dtype=np.int32), np.diff(self.indptr))

    @functools.cached_property
    def _indptr(self) -> np.ndarray:
        return np.asarray(self.indptr, dtype=np.int32)

    @property
    def domains(self):
        return {"data": jb.Domain("diagonally_dominant", build=self._diagonally_dominant)}

    def _diagonally_dominant(self, raw: np.ndarray) -> np.ndarray:
        """Values on the pattern that make every row strictly diagonally dominant, hence the
        matrix nonsingular, where the pattern holds the diagonal: off the diagonal |v| <= 1/2
        per row in all, on it v in [1/2, 3/2]."""
        counts = np.diff(self._indptr)
        on_diagonal = self._rows == self._columns
        return np.where(on_diagonal, 1.0 + raw / 2, raw / (2 * counts.max()))

    def _csc(self, data: np.ndarray) -> scipy.sparse.csc_array:
        """The matrix with values ``data``, in the CSC form SuperLU takes."""
        csr = scipy.sparse.csr_array((data, self._columns, self._indptr), shape=self.shape)
        csc = csr.tocsc()
        csc.sum_duplicates()
        return csc

    def _trial_fill(self) -> int:
        values = np.random.default_rng(0).standard_normal(len(self.indices))
        try:
            lu = scipy.sparse.linalg.splu(self._csc(values))
        except RuntimeError:
            raise ValueError(
                "SparseSolve: the sparsity pattern is structurally singular (SuperLU found a "
                "zero pivot for random values on it), so every matrix on it is singular."
            ) from None
        return lu.L.nnz + lu.U.nnz

    def output_specs(self, data, b):
        n, nnz = self.shape[0], len(self.indices)
        if data.shape != (nnz,) or b.shape != (n,):
            raise ValueError(
                f"SparseSolve: 'data' must have the pattern's {nnz} entries and 'b' its "
                f"{n} rows; got core shapes {data.shape} and {b.shape}."
            )
        return jax.ShapeDtypeStruct(b.shape, jb.result_dtype(data, b))

    def residual_specs(self, data, b):
        return tuple(
            jax.ShapeDtypeStruct(shape, dtype)
            for shape, dtype in self._factor_specs(jb.result_dtype(data, b))
        )

    def _factor_specs(self, dtype: np.dtype) -> list[tuple[tuple[int, ...], np.dtype]]:
        n, capacity, int32 = self.shape[0], self.factor_capacity, np.dtype(np.int32)
        assert capacity is not None  # set in __post_init__
        # values and row indices of L then U (CSC), their column pointers, perm_r and perm_c
        return [((capacity,), dtype), ((capacity,), int32), ((2, n + 1), int32), ((2, n), int32)]

    def forward(self, data, b):
        dtype = lapack_dtype(data, b)
        specs = self._factor_specs(dtype)

        def solve(data, stack):
            require_finite("the matrix's 'data'", data)
            data = np.asarray(data, dtype)
            try:
                lu = scipy.sparse.linalg.splu(self._csc(data))
            except RuntimeError as error:
                if "singular" not in str(error):
                    raise
                raise failure("the matrix is singular (SuperLU found an exactly zero pivot)")
            pivot = np.abs(lu.U.diagonal()).min()
            if pivot < np.finfo(dtype).eps * np.abs(data).max():
                raise failure(
                    f"the matrix is singular to working precision (its smallest LU pivot, "
                    f"{pivot:.1e}, is below machine epsilon times its largest entry)"
                )
            x = lu.solve(stack.T.astype(dtype)).T
            return (x, *self._pack(lu, specs))

        return solve_per_matrix(
            [data], [1], b, 1, solve, dtype, specs, self.on_failure, rhs_name="right-hand side 'b'"
        )

    def _pack(self, lu, specs) -> list[np.ndarray]:
        values, indices, pointers, perms = (np.zeros(shape, dtype) for shape, dtype in specs)
        lower, upper = lu.L, lu.U
        used = lower.nnz + upper.nnz
        if used > len(values):
            pointers[0, 0] = _NOT_SAVED
            return [values, indices, pointers, perms]
        values[:used] = np.concatenate([lower.data, upper.data])
        indices[:used] = np.concatenate([lower.indices, upper.indices])
        pointers[:] = lower.indptr, upper.indptr
        perms[:] = lu.perm_r, lu.perm_c
        return [values, indices, pointers, perms]

    def pushforward(self, res, tangents):
        data, _, x, *factors = res
        rhs = _rhs(tangents, x, self._rows, self._columns)
        return None if rhs is None else _SparseLUSolve(self)(data, *factors, rhs)

    def pullback(self, res, g):
        data, _, x, *factors = res
        lam = _SparseLUSolve(self, trans=True)(data, *factors, g)
        return -lam[..., self._rows] * x[..., self._columns], lam


class _SparseLUSolve(jb.Adapter):
    """``a x = b`` (``aᵀ x = b`` if ``trans``) from the factors ``SparseSolve`` saved.

    ``data`` is read on the host only to refactorize when the factors did not fit; it is an
    argument so that the derivative with respect to it flows here (factors are constants).
    """

    sparse: SparseSolve
    trans: bool = False

    signature = "(k),(c),(c),(2,p),(2,n),(n)->(n)"
    vectorized = True

    def forward(self, data, values, indices, pointers, perms, b):
        dtype = jb.result_dtype(values, b)

        def solve(data, values, indices, pointers, perms, stack):
            stack = stack.T.astype(dtype)
            if pointers[1, -1] > 0:
                return (_triangular_solves(values, indices, pointers, perms, stack, self.trans).T,)
            # zeros: a failed forward under on_failure="nan", whose x is NaN already
            if pointers[0, 0] != _NOT_SAVED or not np.isfinite(data).all():
                return (np.full(stack.T.shape, np.nan, dtype),)
            lu = scipy.sparse.linalg.splu(self.sparse._csc(np.asarray(data, dtype)))
            return (lu.solve(stack, trans="T" if self.trans else "N").T,)

        return solve_per_matrix(
            [data, values, indices, pointers, perms], [1, 1, 1, 2, 2], b, 1, solve, dtype, ()
        )[0]

    def pushforward(self, res, tangents):
        data, *factors, _, x = res
        rows, columns = self.sparse._rows, self.sparse._columns
        if self.trans:  # aᵀ: entry (i, j) of a sits in row j
            rows, columns = columns, rows
        rhs = _rhs((tangents[0], tangents[-1]), x, rows, columns)
        return None if rhs is None else _SparseLUSolve(self.sparse, self.trans)(data, *factors, rhs)

    def pullback(self, res, g):
        data, *factors, _, x = res
        lam = _SparseLUSolve(self.sparse, trans=not self.trans)(data, *factors, g)
        rows, columns = self.sparse._rows, self.sparse._columns
        if self.trans:  # aᵀ x = b: entry (i, j) of a multiplies x[i] in row j
            return -lam[..., columns] * x[..., rows], None, None, None, None, lam
        return -lam[..., rows] * x[..., columns], None, None, None, None, lam


def _rhs(tangents, x, rows, columns):
    """``ḃ - ȧ x`` for ``ȧ`` given by its values on the pattern (``rows``, ``columns``); None
    when both tangents are zero."""
    ddata, db = tangents
    if ddata is None:
        return db
    terms = ddata * x[..., columns]
    product = jnp.zeros(terms.shape[:-1] + x.shape[-1:], terms.dtype).at[..., rows].add(terms)
    return -product if db is None else db - product


def _triangular_solves(values, indices, pointers, perms, rhs, trans: bool) -> np.ndarray:
    """Solve with ``perm_r a perm_c = L U`` (SuperLU's convention) for (n, k) ``rhs``."""
    n = pointers.shape[1] - 1
    split, end = pointers[0, -1], pointers[0, -1] + pointers[1, -1]
    lower = scipy.sparse.csc_array((values[:split], indices[:split], pointers[0]), (n, n))
    upper = scipy.sparse.csc_array((values[split:end], indices[split:end], pointers[1]), (n, n))
    perm_r, perm_c = perms
    solve = scipy.sparse.linalg.spsolve_triangular
    y = np.empty_like(rhs)
    if trans:  # aᵀ = P_c Uᵀ Lᵀ P_r
        y[perm_c] = rhs
        z = solve(lower.T, solve(upper.T, y, lower=True), lower=False)
        return z[perm_r]
    y[perm_r] = rhs
    z = solve(upper, solve(lower, y, lower=True), lower=False)
    return z[perm_c]
