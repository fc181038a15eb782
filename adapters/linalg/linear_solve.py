"""``LinearSolve``: ``a x = b`` by LU or Cholesky, the backward reusing the forward's factors."""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

import jaxbridge as jb

from .._shared._failure import MayFail, OnFailure, require_finite
from .._shared._parameters import check_choice
from ._solving import (
    SMALL,
    apply_inverse,
    certainly_well_conditioned,
    failure,
    invert_many,
    lapack_dtype,
    mark_failed,
    non_finite_elements,
    outer_sum,
    solve_per_matrix,
)


class LinearSolve(MayFail):
    """Solve ``a x = b`` on the host with SciPy: ``x = LinearSolve()(a, b)``.

    ``a`` is (n, n) and ``b`` is (n,). Leading axes are batch axes that broadcast like a
    NumPy gufunc (``a`` (..., 1, n, n) with ``b`` (..., k, n) gives ``x`` (..., k, n)), and
    a matrix shared by several right-hand sides is factorized once. So for a matrix of
    right-hand sides ``B`` (n, k), pass its columns as rows, or ``vmap`` over them::

        X = LinearSolve()(a, B.T).T                        # a X = B
        X = jax.vmap(LinearSolve(), (None, 1), 1)(a, B)    # the same

    Parameters:
        assume_a: ``"gen"`` (the default) factorizes by LU with partial pivoting (LAPACK
            ``getrf``, what ``scipy.linalg.lu_factor`` calls); ``"pos"`` by Cholesky
            (``potrf``, as in ``cho_factor``), for symmetric positive definite ``a``.
            ``"pos"`` reads ``a`` as ``(a + aᵀ) / 2``, so its gradient is symmetric and
            agrees with finite differences in every entry.
        on_failure: see ``MayFail``. Fails on a singular ``a`` (also to working precision:
            reciprocal condition number below machine epsilon), one not positive definite
            (``"pos"``), or a non-finite ``a`` or ``b``; with ``"nan"`` that system's ``x``
            is NaN.

    The forward saves the factors; the backward solves ``aᵀ λ = ḡ`` with them and the
    forward mode ``a ẋ = ḃ - ȧ x``, O(n²) per right-hand side, never factorizing again. Both
    rules are made of bridged solves, so derivatives of every order work in both modes
    (``jax.hessian``, ``jacfwd(jacfwd)``, ``grad(grad)``), and ``jax.linear_transpose``
    works in ``b``.

    A batch of matrices larger than 32 x 32 is factorized one matrix at a time; a subclass
    with ``threads = 2`` (or more) spreads them over that many host threads, as LAPACK
    releases the GIL (``benchmarks/overhead.py``, table 5; with ``OPENBLAS_NUM_THREADS=1``,
    as BLAS's own threads would compete for the same cores)::

        class ThreadedSolve(LinearSolve):
            threads = 2

    OpenBLAS is held to one thread while its host code runs (``Adapter.blas_threads``), the
    backward's and forward mode's solves too: beside a busy process OpenBLAS's waiting
    threads made a 200 x 200 gradient up to 14 times (an earlier run: 127 times) and a
    1000 x 1000 solve up to 3.9 times as slow (``docs/performance.md``, BLAS threads). On
    a machine of one's own a large matrix may factorize faster on all of BLAS's threads
    (n = 1000: 15% at most, measured on 2 cores); a subclass leaves the process's setting::

        class AllThreadsSolve(LinearSolve):
            blas_threads = None
    """

    assume_a: str = "gen"

    signature = "(n,n),(n)->(n)"
    vectorized = True
    blas_threads = 1
    linear_in = ("b",)
    residuals_from = ("a",)  # factors: stored once per matrix, not per right-hand side

    @property
    def domains(self):
        return {"a": "spd" if self.assume_a == "pos" else "well_conditioned"}

    def __post_init__(self) -> None:
        check_choice("LinearSolve", "assume_a", self.assume_a, ("gen", "pos"))

    def output_specs(self, a, b):
        return jax.ShapeDtypeStruct(b.shape, jb.result_dtype(a, b))

    def residual_specs(self, a, b):
        # the factors (aᵀ's LU or the Cholesky factor, transposed) and LU's pivots; or, for
        # a batch of small matrices, the matrices themselves (pivots of -2) or, where they
        # share right-hand sides or their condition was checked exactly, their inverses
        # (pivots of -1)
        factors = jax.ShapeDtypeStruct(a.shape, jb.result_dtype(a, b))
        return factors, jax.ShapeDtypeStruct(a.shape[:1], np.int32)

    def forward(self, a, b, *, out=None):
        b, bad = non_finite_elements("right-hand side 'b'", b, 1, self.on_failure)
        results = self._solve(a, b, out)
        mark_failed(results[0], bad, 1)  # NaN for those systems alone
        return results

    def _solve(self, a, b, out):
        dtype = lapack_dtype(a, b)
        n = a.shape[-1]
        positive = self.assume_a == "pos"
        solve = _cholesky if positive else _lu
        if out is not None and a.size == n * n > 0 and out[1].dtype == dtype:
            # one matrix, the common case: factorized in place in XLA's buffer for the
            # factors, so ("gen", one dtype) no other n² array is allocated or copied back
            x, factors, pivots = out
            into = (factors.reshape(n, n), pivots.reshape(n))
            try:
                x[...] = solve(a.reshape(n, n), b.reshape(-1, n), dtype, into)[0].reshape(x.shape)
            except np.linalg.LinAlgError as error:
                x[...] = self.nan_on_failure(error, x.shape)
                factors[...], pivots[...] = np.nan, 0  # (as solve_per_matrix)
            return out
        if 0 < n <= SMALL and a.size > n * n:  # many small matrices: batched LAPACK
            a = _symmetric_part(a, b) if positive else np.asarray(a, dtype)
            b = np.asarray(b, dtype)
            x = _solve_many(a, b, positive)
            if x is not None:
                # the rules solve afresh from 'a', their first argument: XLA's buffer for the
                # factors is left unwritten (4 MB for 2,000 matrices of 16 x 16, as long to
                # write as a fifth of the solve)
                unread = a if out is None else out[1]
                return x, unread, np.full(a.shape[:-1], _MATRIX, np.int32)
            inverse = invert_many(a, positive)
            if inverse is not None:
                x = apply_inverse(inverse, b, False)
                # one step of iterative refinement: as accurate as an LU solve
                x += apply_inverse(inverse, b - np.einsum("...ij,...j->...i", a, x), False)
                return x, inverse, np.full(a.shape[:-1], _INVERSE, np.int32)
        specs = [((n, n), dtype), ((n,), np.dtype(np.int32))]
        return solve_per_matrix(
            [a],
            [2],
            b,
            1,
            lambda a, stack: solve(a, stack, dtype),
            dtype,
            specs,
            self.on_failure,
            out,
            threads=self.threads,
        )

    def pushforward(self, res, tangents):
        a, _, x, factors, piv = res
        if self.assume_a == "pos":
            rhs = _rhs(tangents, x, symmetric=True)
            return None if rhs is None else _CholeskySolve()(a, factors, piv, rhs)
        rhs = _rhs(tangents, x)
        return None if rhs is None else _LUSolve()(a, factors, piv, rhs)

    def pullback(self, res, g):
        if self.assume_a == "pos":
            a, _, x, c, kind = res
            lam = _CholeskySolve()(a, c, kind, g)
            return -(outer_sum(lam, x, a.shape) + outer_sum(x, lam, a.shape)) / 2, lam
        a, _, x, lu, piv = res
        lam = _LUSolve(trans=True)(a, lu, piv, g)
        return -outer_sum(lam, x, a.shape), lam


def solve(
    a,
    b,
    lower=False,
    overwrite_a=False,
    overwrite_b=False,
    check_finite=True,
    assume_a=None,
    transposed=False,
    *,
    on_failure: OnFailure = "raise",
):
    """``scipy.linalg.solve``'s call form on ``LinearSolve``: ``x = solve(a, b)``.

    ``b`` is (n,) or, as SciPy reads any other shape, (..., n, k): k right-hand sides,
    solved with one factorization of ``a`` (..., n, n). ``transposed=True`` solves
    ``aᵀ x = b``. ``assume_a`` takes SciPy's structures, short or long names, and reads
    what SciPy reads of ``a``: ``"pos"`` (``"positive definite"``), ``"sym"`` and ``"her"``
    one triangle (``lower``), mirrored, ``"diagonal"``, ``"tridiagonal"`` and the
    triangular ones their entries alone; ``None`` and ``"gen"`` (``"general"``) the whole
    matrix. ``"pos"`` factorizes by Cholesky, the others by LU; ``"banded"`` is refused.
    The derivative in the entries SciPy does not read is 0. ``check_finite`` and the
    ``overwrite_*`` hints change nothing here: a non-finite ``a`` or ``b`` is always
    refused, and JAX's arrays are never overwritten. ``on_failure`` is ``LinearSolve``'s.
    """
    if assume_a not in _STRUCTURES:
        raise ValueError(
            f"solve: assume_a={assume_a!r} is not supported; SciPy's structures are taken "
            f"({', '.join(repr(k) for k in _STRUCTURES)}), not 'banded' (its bandwidths are "
            "SciPy's guess: pass the matrix as 'gen')."
        )
    del overwrite_a, overwrite_b, check_finite  # (see the docstring)
    a = _as_read(jnp.asarray(a), _STRUCTURES[assume_a], lower)
    if transposed:
        a = jnp.swapaxes(a, -1, -2)
    kind = "pos" if _STRUCTURES[assume_a] == "pos" else "gen"
    adapter = LinearSolve(assume_a=kind, on_failure=on_failure)
    if jnp.ndim(b) == 1:
        return adapter(a, b)
    return jax.vmap(adapter, in_axes=(None, -1), out_axes=-1)(a, b)


_STRUCTURES = {
    None: "gen",
    "gen": "gen",
    "general": "gen",
    "pos": "pos",
    "positive definite": "pos",
    "sym": "sym",
    "symmetric": "sym",
    "her": "her",
    "hermitian": "her",
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "upper triangular": "upper",
    "lower triangular": "lower",
}
"""SciPy's names for ``assume_a`` (1.17), each to the part of ``a`` that SciPy reads."""


def _as_read(a: jax.Array, structure: str, lower: bool) -> jax.Array:
    """``a`` as SciPy reads it for ``structure``: a symmetric (Hermitian) one from its
    ``lower`` or upper triangle, a banded or triangular one from its band."""
    if structure == "gen":
        return a
    if structure in ("pos", "sym", "her"):
        part = jnp.tril(a) if lower else jnp.triu(a)
        strict = jnp.tril(a, -1) if lower else jnp.triu(a, 1)
        mirror = jnp.swapaxes(strict, -1, -2)
        # (a Hermitian one, positive definite ones too, mirrors the conjugate)
        return part + (mirror if structure == "sym" else jnp.conj(mirror))
    below, above = {
        "diagonal": (0, 0),
        "tridiagonal": (1, 1),
        "upper": (0, None),
        "lower": (None, 0),
    }[structure]
    if below is not None:
        a = jnp.triu(a, -below)
    if above is not None:
        a = jnp.tril(a, above)
    return a


class _LUSolve(jb.Adapter):
    """``a x = b`` (or ``aᵀ x = b`` if ``trans``) from ``a``'s saved LU factors: those of
    ``aᵀ``, transposed (see ``_lu``), with LAPACK's pivots.

    ``a`` is an argument so that the derivative with respect to it flows here (the factors
    count as constants); it is read on the host only where the pivots are -2, which mark a
    batch of small matrices solved afresh rather than from saved factors.
    """

    trans: bool = False

    signature = "(n,n),(n,n),(n),(n)->(n)"
    vectorized = True
    blas_threads = 1  # as LinearSolve's

    def forward(self, a, lu, piv, b):
        if (piv[..., :1] == _INVERSE).all():  # (empty systems too: n = 0)
            return apply_inverse(lu, b, self.trans)
        if (piv[..., :1] == _MATRIX).all():
            return _solve_matrices(np.asarray(a, lapack_dtype(a, lu, b)), b, self.trans)
        n = b.shape[-1]
        if lu[..., 0, 0].size == 1:  # one matrix (the common case): no batch to walk
            x = _lu_solve(lu.reshape(n, n), piv.reshape(n), b.reshape(-1, n), self.trans)
            return x.reshape(np.broadcast_shapes(lu.shape[:-2], b.shape[:-1]) + (n,))

        dtype = jb.result_dtype(lu, b)

        def solve(a, lu, piv, stack):
            if piv[0] == _INVERSE:
                return (apply_inverse(lu, stack, self.trans),)
            if piv[0] == _MATRIX:
                return (_solve_matrices(np.asarray(a, lapack_dtype(a, lu)), stack, self.trans),)
            return (_lu_solve(lu, piv, stack, self.trans),)

        return solve_per_matrix([a, lu, piv], [2, 2, 1], b, 1, solve, dtype, ())[0]

    def pushforward(self, res, tangents):
        a, lu, piv, _, x = res
        rhs = _rhs((tangents[0], tangents[3]), x, transposed=self.trans)
        return None if rhs is None else _LUSolve(trans=self.trans)(a, lu, piv, rhs)

    def pullback(self, res, g):
        a, lu, piv, _, x = res
        lam = _LUSolve(trans=not self.trans)(a, lu, piv, g)
        da = outer_sum(x, lam, a.shape) if self.trans else outer_sum(lam, x, a.shape)
        return -da, None, None, lam


class _CholeskySolve(jb.Adapter):
    """``(a + aᵀ)/2 x = b`` from the saved upper Cholesky factor ``c`` of ``(a + aᵀ)/2``, or
    its inverse where ``kind`` is -1; where ``kind`` is -2 (see ``_LUSolve``) from ``a``."""

    signature = "(n,n),(n,n),(n),(n)->(n)"
    vectorized = True
    blas_threads = 1  # as LinearSolve's

    def forward(self, a, c, kind, b):
        if (kind[..., :1] == _INVERSE).all():  # (empty systems too: n = 0)
            return apply_inverse(c, b, False)
        if (kind[..., :1] == _MATRIX).all():
            return _solve_matrices(_symmetric_part(a, c, b), b, False)

        def solve(a, c, kind, stack):
            if kind[0] == _INVERSE:
                return (apply_inverse(c, stack, False),)
            if kind[0] == _MATRIX:
                return (_solve_matrices(_symmetric_part(a, c), stack, False),)
            c = c.T  # saved transposed (see _cholesky)
            return (scipy.linalg.cho_solve((c, False), stack.T, check_finite=False).T,)

        dtype = jb.result_dtype(c, b)
        return solve_per_matrix([a, c, kind], [2, 2, 1], b, 1, solve, dtype, ())[0]

    def pushforward(self, res, tangents):
        a, c, kind, _, x = res
        rhs = _rhs((tangents[0], tangents[3]), x, symmetric=True)
        return None if rhs is None else _CholeskySolve()(a, c, kind, rhs)

    def pullback(self, res, g):
        a, c, kind, _, x = res
        lam = _CholeskySolve()(a, c, kind, g)
        return -(outer_sum(lam, x, a.shape) + outer_sum(x, lam, a.shape)) / 2, None, None, lam


_INVERSE = -1  # the pivots' mark of a batch of small matrices saved as their inverses
_MATRIX = -2  # ... and of one solved afresh from 'a' in the rules, no factors saved


def _solve_many(a: np.ndarray, b: np.ndarray, positive: bool) -> np.ndarray | None:
    """``x`` for a batch of small matrices ``a`` (n ≤ SMALL), each with its own right-hand
    side ``b``, by batched LAPACK calls; None unless every matrix is proven well conditioned
    (and, with ``positive``, positive definite): the caller then checks them exactly.

    A batched LU solve (``numpy.linalg.solve``) and a batched determinant cost about a third
    of the inverses (``numpy.linalg.inv``) that prove the condition exactly, and the rules
    solve again rather than apply saved inverses: a solve of 2,000 systems of 16 x 16 is
    about 3 ms where their inverses take 8-13 ms (``benchmarks/linear_solve_backward.py
    --many``). NumPy has no batched LU whose factors a later call could use.
    """
    if a.shape[:-2] != np.broadcast_shapes(a.shape[:-2], b.shape[:-1]):
        return None  # matrices shared by several right-hand sides: inverting them once pays
    if not np.isfinite(a).all():
        return None  # (the matrix by matrix path names it, or gives NaN for it alone)
    try:
        # (entries near the float range overflow in the factorization: the bound then fails,
        # and the matrix by matrix path names them)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if positive:
                c = np.linalg.cholesky(a)  # raises unless every matrix is positive definite
                log_det = 2 * np.log(np.abs(np.diagonal(c, axis1=-2, axis2=-1))).sum(-1)
            else:
                log_det = np.linalg.slogdet(a)[1]
        if not certainly_well_conditioned(a, log_det):
            return None
        return _solve_matrices(a, b, False)
    except np.linalg.LinAlgError:
        return None


def _solve_matrices(m: np.ndarray, b: np.ndarray, trans: bool) -> np.ndarray:
    """``m x = b`` (``mᵀ x = b`` if ``trans``) for a batch of matrices ``m`` and vectors
    ``b``, by one batched LAPACK call (an LU of each matrix); for one matrix (n, n), ``b``
    holds its right-hand sides as rows, solved with one LU."""
    m = np.swapaxes(m, -1, -2) if trans else m
    if m.ndim == 2:
        return np.linalg.solve(m, b.T).T
    return np.linalg.solve(m, b[..., None])[..., 0]


def _symmetric_part(a: np.ndarray, *others: np.ndarray) -> np.ndarray:
    """``(a + aᵀ) / 2`` in the dtype LAPACK computes in with ``others``, as ``"pos"`` reads
    ``a`` (halves first: no overflow)."""
    a = np.asarray(a, lapack_dtype(a, *others))
    return a / 2 + np.swapaxes(a, -1, -2) / 2


def _rhs(tangents, x, transposed=False, symmetric=False):
    """``ḃ - op(ȧ) x``: the right-hand side whose solution is the tangent of ``x``, or None
    when both tangents are zero. The factors' tangents are ignored: they are constants."""
    da, db = tangents
    if da is None:
        return db
    if symmetric:
        da = (da + jnp.swapaxes(da, -1, -2)) / 2
    product = jnp.einsum("...ji,...j->...i" if transposed else "...ij,...j->...i", da, x)
    return -product if db is None else db - product


def _lu(a, stack, dtype, into=None):
    """``(x, factors, pivots)``: the solutions for the rows of ``stack`` and a's factors,
    which ``into``, a C-contiguous (n, n) array of ``dtype`` and an (n,) int32 one, receive
    if given."""
    a = np.asarray(a, dtype)
    # XLA's buffers are row-major and LAPACK's column-major: factorize aᵀ, whose
    # column-major form is a's own memory, and save its factors transposed, so no n² array is
    # ever copied with a transpose (here, in the bridge, or in the backward's solves)
    at = a.T
    getrf, gecon, lange = scipy.linalg.get_lapack_funcs(("getrf", "gecon", "lange"), (at,))
    norm = lange("I", at)  # a NaN or inf entry makes it NaN or inf: the finiteness check
    _check_norm(norm, a)
    if into is None:
        lu, piv, info = getrf(at)  # LAPACK directly: lu_factor only warns on a zero pivot
    else:
        factors, pivots = into
        factors[...] = a  # its column-major view is aᵀ, factorized there in place
        lu, piv, info = getrf(factors.T, overwrite_a=True)
        _in_place(lu, factors)
        pivots[...] = piv
    if info > 0:
        raise failure(f"matrix 'a' is singular (exactly zero pivot at step {info} of its LU)")
    # aᵀ's reciprocal condition number in the ∞-norm is a's in the 1-norm
    rcond = gecon(lu, norm, norm="I")[0]
    x = _lu_solve(lu.T, piv, stack, False)
    if not rcond >= np.finfo(dtype).eps:
        _check_condition(max(rcond, _scaled_rcond(a, x, stack)), dtype)
    return x, lu.T, piv


def _lu_solve(lu, piv, stack, trans):
    """The solutions of ``a x = b`` (``aᵀ x = b`` if ``trans``) for the rows ``b`` of
    ``stack``, from aᵀ's LU factors saved transposed (see ``_lu``): LAPACK's ``getrs``
    directly, as ``lu_solve``'s checks and batching cost as much as the solve at n = 200."""
    (getrs,) = scipy.linalg.get_lapack_funcs(("getrs",), (lu, stack))  # their common type
    x, info = getrs(lu.T, piv, stack.T, trans=0 if trans else 1)
    return x.T


def _cholesky(a, stack, dtype, into=None):
    """``(x, factor, kind)`` as ``_lu`` gives them (``kind`` zeros: a Cholesky factor)."""
    a = np.asarray(a, dtype)
    # halves first, so that large finite entries cannot overflow; symmetric, so its
    # column-major view is itself (see _lu)
    s = np.multiply(a, 0.5, out=None if into is None else into[0])
    s += a.T / 2
    s = s.T
    potrf, pocon, lange = scipy.linalg.get_lapack_funcs(("potrf", "pocon", "lange"), (s,))
    norm = lange("1", s)  # NaN or inf where an entry is (see _lu)
    _check_norm(norm, s)
    c, info = potrf(s, lower=False, clean=True, overwrite_a=into is not None)
    if into is not None:
        _in_place(c, into[0])
    if info > 0:
        raise failure(
            f"matrix 'a' is not positive definite (its leading minor of order {info} is not "
            "positive), as assume_a='pos' requires"
        )
    rcond = pocon(c, norm, uplo="U")[0]
    if not rcond >= np.finfo(dtype).eps:
        _check_condition(max(rcond, _scaled_pos_rcond(c)), dtype)
    x = scipy.linalg.cho_solve((c, False), stack.T, check_finite=False).T
    if into is None:
        return x, c.T, np.zeros(a.shape[:1], np.int32)  # saved transposed, as in _lu
    into[1][...] = 0
    return x, c.T, into[1]


def _in_place(factored: np.ndarray, into: np.ndarray) -> None:
    # LAPACK's wrappers copy an array they cannot use as it is (misaligned, say): then the
    # factors are copied where they belong rather than left as the matrix
    if factored.ctypes.data != into.ctypes.data:
        into[...] = factored.T


def _check_norm(norm: float, a: np.ndarray) -> None:
    # The norm is NaN or inf where an entry is, or where finite entries sum past the
    # largest float: only then are the entries read again, to say which.
    if not np.isfinite(norm):
        require_finite("matrix 'a'", a)
        raise failure(
            f"matrix 'a' has entries so large that its norm overflows {a.dtype} (largest "
            f"magnitude {np.abs(a).max():.1e}); scale the system"
        )


def _scaled_rcond(a: np.ndarray, x: np.ndarray, stack: np.ndarray) -> float:
    """The reciprocal 1-norm condition number of ``a`` with its rows and columns scaled by
    powers of 2 (LAPACK's ``geequb``), where the solutions ``x`` of ``a x = b`` (rows of
    ``stack``) are componentwise backward stable (Oettli and Prager's error at most
    ``4 n eps``); 0 otherwise. A matrix that is only badly scaled (diag(1, 1e-17)) is not
    singular: partial pivoting does not see column scales, and its error bound for a
    backward stable x is Skeel's condition number, which row scales leave unchanged and
    the scaled matrix's condition number bounds."""
    n, eps = a.shape[0], np.finfo(a.dtype).eps
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        residual = np.abs(stack - x @ a.T)
        size = np.abs(x) @ np.abs(a).T + np.abs(stack)
        stable = np.all((residual <= 4 * n * eps * size) | (residual == 0))
    geequb, getrf, gecon, lange = scipy.linalg.get_lapack_funcs(
        ("geequb", "getrf", "gecon", "lange"), (a,)
    )
    rows, columns, *_, info = geequb(a)
    if not stable or info != 0:
        return 0.0
    scaled = rows[:, None] * a * columns
    lu, _, info = getrf(scaled)
    return 0.0 if info > 0 else float(gecon(lu, lange("1", scaled), norm="1")[0])


def _scaled_pos_rcond(c: np.ndarray) -> float:
    """The reciprocal 1-norm condition number of ``d a d`` for ``a = cᵀ c`` (``c`` upper
    triangular), ``d`` powers of 2 near ``1 / √aᵢᵢ``: Cholesky's factor of ``d a d`` is
    ``c d``, as exactly as ``c`` is ``a``'s, so a positive definite matrix that is only badly
    scaled (diag(1, 1e-17)) is solved as accurately, each entry of ``x`` to its own scale."""
    diagonal = np.einsum("ij,ij->j", c, c.conj()).real  # aᵢᵢ
    d = np.exp2(-np.round(np.log2(diagonal) / 2))
    scaled = c * d
    pocon, lange = scipy.linalg.get_lapack_funcs(("pocon", "lange"), (scaled,))
    product = scaled.conj().T @ scaled
    return float(pocon(scaled, lange("1", product), uplo="U")[0])


def _check_condition(rcond: float, dtype: np.dtype) -> None:
    # Below machine epsilon the computed x carries no correct digits: call it singular.
    eps = np.finfo(dtype).eps
    if not rcond >= eps:
        raise failure(
            f"matrix 'a' is singular to working precision (reciprocal condition number "
            f"{rcond:.1e}, below machine epsilon {eps:.1e}, with its rows and columns "
            "scaled or not)"
        )
