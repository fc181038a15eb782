"""``Eigsh``: some eigenpairs of a sparse symmetric matrix of fixed pattern, by ARPACK
(``scipy.sparse.linalg.eigsh``); eigenvalue rules by Hellmann-Feynman, eigenvector rules by
one sparse bordered solve per vector."""

from __future__ import annotations

import functools

import jax
import numpy as np
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._failure import MayFail, SolveFailure, require_finite
from ._bordered import sparse_bordered_solver
from ._eigen import EigenRules, arpack_failure, check_spectrum, ordered, start_vector
from ._pattern import Pattern


class Eigsh(EigenRules, MayFail):
    """``k`` eigenvalues ``w`` and eigenvectors ``v`` of a sparse symmetric matrix, as
    ``scipy.sparse.linalg.eigsh``.

    For a SciPy CSR matrix ``m``: ``w, v = Eigsh(m.indices, m.indptr, m.shape, k=6)(m.data)``.
    The pattern is fixed when the adapter is made; ``data`` (nnz,) holds the values, leading
    axes are batch axes (one ARPACK run each). Store both triangles, as SciPy's symmetric
    matrices are. The matrix is taken as its symmetric part ``(a + aᵀ) / 2``: the same for a
    symmetric matrix, and so defined (and differentiable) for any ``data``.

    ``w`` (k,) is ascending; ``v`` (n, k) has orthonormal columns, each signed so that its
    entry of largest magnitude (the first of them, if several tie) is positive: the
    eigenvectors, and so their derivatives, are determined. ARPACK starts from a fixed
    vector, so equal inputs give equal results.

    Derivatives (in ``data``, both modes): each stored entry counts as an independent
    variable, so ``dw_i / d data_e = v[r, i] v[c, i]`` for the entry at ``(r, c)``
    (Hellmann-Feynman, ``dw = vᵀ da v``); a symmetric perturbation moves both ``(r, c)`` and
    ``(c, r)``. The eigenvectors' derivative solves, per vector, the sparse bordered system
    ``[[a - w_i I, v_i], [v_iᵀ, 0]]`` by SuperLU (n + 1 unknowns, no dense matrix); those
    solves are bridged calls whose rules are the same solve, so derivatives of every order
    work in both modes. A vector whose cotangent (or tangent) is zero costs no solve: the
    gradient of a function of ``w`` alone is one ARPACK run and a sum over the entries.

    Repeated eigenvalues (closer than ``1e-10`` times the largest ``|w|``, whether the twin
    is among the ``k`` found or not: two steps of inverse iteration on the bordered system
    bound the gap to the others) have no eigenvector derivative: in both modes an error
    naming ``Eigsh`` and the gap, or NaN for that vector with ``on_failure="nan"``.
    Returned repeated eigenvalues have tangents only along a direction that does not split
    them (their block of ``Vᵀ da V`` diagonal in ARPACK's basis) and gradients only of a
    function of them alike (their sum); otherwise the same refusal, eagerly and under
    ``jit``, or NaN for them. An eager ``jvp`` computes every output's tangent, used or
    not, so there the vectors' refusal stops the eigenvalues' tangents too (under ``jit``
    the unused are dropped): use ``jit`` or ``on_failure="nan"``.

    Parameters:
        indices, indptr, shape: the CSR pattern (stored as tuples of ints).
        k: how many eigenpairs, ``1 <= k < n``.
        which: ``"LM"``, ``"SM"`` (largest, smallest magnitude), ``"LA"``, ``"SA"``
            (largest, smallest algebraic), as SciPy's; with ``sigma``, of the
            shift-inverted spectrum (``"LM"``: nearest ``sigma``).
        sigma: shift for shift-invert mode (SciPy factorizes ``a - sigma I`` by SuperLU), or
            None.
        on_failure: see ``MayFail``. Fails on non-finite ``data``, ARPACK not converging,
            or repeated eigenvalues under a reverse-mode eigenvector derivative.
    """

    indices: tuple[int, ...]
    indptr: tuple[int, ...]
    shape: tuple[int, int]
    k: int = 6
    which: str = "LM"
    sigma: float | None = None

    signature = "(m)->(k),(n,k)"
    values_name = "eigenvalues"  # what errors call w
    # ARPACK's iterations are a loop of small products with the Lanczos basis, which woke
    # OpenBLAS's threads to busy-wait (see Adapter.blas_threads): sigma=0 on a 2-D Laplacian
    # of 1e4 unknowns, value_and_grad took 1.00x the time with one thread on 2 cores, 0.77x
    # beside a busy process
    blas_threads = 1

    def __post_init__(self) -> None:
        owner = type(self).__name__
        pattern = Pattern.checked(owner, self.indices, self.indptr, self.shape)
        object.__setattr__(self, "indices", pattern.indices)
        object.__setattr__(self, "indptr", pattern.indptr)
        object.__setattr__(self, "shape", pattern.shape)
        sigma = check_spectrum(owner, pattern.n, self.k, self.which, self.sigma)
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "sigma", sigma)

    @functools.cached_property
    def _pattern(self) -> Pattern:
        return Pattern(self.indices, self.indptr, self.shape)

    @functools.cached_property
    def _start(self) -> np.ndarray:
        return start_vector(self.shape[0])

    @property
    def domains(self):
        return {"data": self.separated_spectrum}

    def separated_spectrum(self, raw: np.ndarray) -> np.ndarray:
        """Values on the pattern with a well-separated spectrum, for tests (patterns that
        store the diagonal): diagonal entry ``i`` is ``i + 1 + raw / 4``, the others add at
        most ``1 / 8`` per row in all, so every eigenvalue lies within ``3 / 8`` of its own
        ``i + 1`` (Gershgorin) and neighbours are at least ``1 / 4`` apart."""
        pattern = self._pattern
        counts = np.diff(self.indptr)
        on_diagonal = pattern.rows == pattern.columns
        return np.where(on_diagonal, pattern.rows + 1.0 + raw / 4, raw / (8 * counts.max()))

    def output_specs(self, data):
        n, nnz = self.shape[0], len(self.indices)
        if data.shape != (nnz,):
            raise ValueError(
                f"{type(self).__name__}: 'data' must have the pattern's {nnz} entries; got core "
                f"shape {data.shape}."
            )
        dtype = jb.result_dtype(data)
        return jax.ShapeDtypeStruct((self.k,), dtype), jax.ShapeDtypeStruct((n, self.k), dtype)

    def forward(self, data):
        n, k, dtype = self.shape[0], self.k, jb.result_dtype(data)
        try:
            require_finite("the matrix's 'data'", data)
            a = self._pattern.symmetric_part(data)
            try:
                w, v = scipy.sparse.linalg.eigsh(
                    a, k=k, which=self.which, sigma=self.sigma, v0=self._start
                )
            except scipy.sparse.linalg.ArpackNoConvergence as error:
                raise SolveFailure.because(f"ARPACK did not converge ({error})") from None
            except scipy.sparse.linalg.ArpackError as error:  # a RuntimeError: caught first
                raise arpack_failure(error, "the matrix", "'data'", self.values_name) from None
            except RuntimeError as error:  # SuperLU: a - sigma I singular
                raise SolveFailure.because(
                    f"the shift-invert factorization failed ({error})"
                ) from None
        except np.linalg.LinAlgError as error:
            return self.nan_on_failure(error, (k,), (n, k), dtype=dtype)
        w, v = ordered(w, v)
        return w.astype(dtype), v.astype(dtype)

    def _bordered_solver(self, data, name: str):
        a = self._pattern.symmetric_part(data).tocsc()
        return functools.partial(sparse_bordered_solver, name, a)

    def _operator_tangent(self, data, ddata, x):
        return self._pattern.symmetric_product(ddata, x)

    def _operator_cotangent(self, data, y, x):
        return self._pattern.symmetric_outer(y, x)
