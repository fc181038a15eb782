"""What the solver adapters share: input checks, one factorization per distinct matrix in a
batch, NaN results on request, and the batched outer product of their pullbacks."""

from __future__ import annotations

import string
import threading
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

import jaxbridge as jb
from jaxbridge.internal import share

from .._shared._coefficient_groups import CoefficientGroups
from .._shared._failure import OnFailure, SolveFailure, nan_results

Spec = tuple[tuple[int, ...], np.dtype]


def lapack_dtype(*arrays: np.ndarray) -> np.dtype:
    """The dtype LAPACK computes in on the host: the result dtype (``jaxbridge.result_dtype``),
    at least float32 (LAPACK has no float16; the bridge casts back to a declared float16)."""
    return jnp.promote_types(jb.result_dtype(*arrays), np.float32)


failure = SolveFailure.because


def non_finite_elements(
    what: str, rhs: np.ndarray, rank: int, on_failure: OnFailure
) -> tuple[np.ndarray, np.ndarray | None]:
    """``require_finite`` for a right-hand side, per batch element (its last ``rank`` axes
    are one element's): an error naming it unless ``on_failure="nan"``; then ``rhs`` with
    those elements zeroed, and their mask for ``mark_failed`` (None when there are none),
    so that only they are NaN, not their neighbours that share a matrix."""
    bad = np.asarray(~np.isfinite(rhs).all(axis=tuple(range(rhs.ndim - rank, rhs.ndim))))
    if not bad.any():
        return rhs, None
    if on_failure != "nan":
        raise failure(f"{what} has non-finite entries (NaN or inf)")
    return np.where(bad.reshape(bad.shape + (1,) * rank), 0, rhs), bad


def mark_failed(x: np.ndarray, bad: np.ndarray | None, rank: int) -> None:
    """NaN in ``x`` (its batch broadcast from ``bad``'s) where ``bad``."""
    if bad is not None:
        x[np.broadcast_to(bad, x.shape[: x.ndim - rank])] = np.nan


SMALL = 32
"""The largest ``n`` for which a batch of matrices is solved by batched LAPACK calls
(``numpy.linalg``) rather than factorized one by one from Python."""


def certainly_well_conditioned(a: np.ndarray, log_det: np.ndarray) -> bool:
    """Whether every matrix of the batch ``a`` (in the dtype LAPACK computes in) is proven to
    have a reciprocal 1-norm condition number of at least its dtype's machine epsilon, given
    the logarithms of their determinants' magnitudes, without any inverse or per-matrix call.

    The bound is Guggenheimer, Edelman and Johnson's (College Math. J. 26, 1995),
    ``κ₂(a) < 2 (‖a‖_F / √n)ⁿ / |det a|``, and ``κ₁ ≤ n κ₂``; it is loose (for a Gaussian
    16 x 16 matrix about 10⁵ where κ₁ is about 10²), so a batch it cannot vouch for is
    checked exactly (``invert_many``). It is asked to hold with a margin of ``4n``: the
    determinant is that of ``a`` perturbed by rounding, by up to about ``n ε ‖a‖`` (times
    the LU's growth factor, taken to be at most ``2n``), which moves the smallest singular
    value by less than that margin leaves.
    """
    n = a.shape[-1]
    info = np.finfo(a.dtype)
    squares = np.einsum("...ij,...ij->...", a, a.conj()).real  # ‖a‖_F²
    # where squares underflow or overflow, the norm is no bound: such a batch is not vouched
    # for (a zero norm would read as a perfect condition)
    if not ((squares >= info.tiny / info.eps) & (squares < info.max)).all():
        return False
    with np.errstate(divide="ignore", invalid="ignore"):
        log_kappa_1 = np.log(2 * n) + n / 2 * np.log(squares / n) - log_det
    # (a singular matrix's log_det is -inf, a NaN compares false: both fail)
    return bool(np.max(log_kappa_1) <= -np.log(4 * n * float(info.eps)))


def invert_many(a: np.ndarray, positive: bool) -> np.ndarray | None:
    """The inverses of a batch of small matrices, by one batched LAPACK call.

    ``None`` if any matrix is non-finite, singular to working precision (reciprocal 1-norm
    condition number below machine epsilon, computed exactly from the inverse) or, with
    ``positive``, not positive definite: the caller then solves matrix by matrix, which
    says which one failed, or gives NaN for it alone.
    """
    if not np.isfinite(a).all():
        return None
    try:
        if positive:
            np.linalg.cholesky(a)  # raises unless every matrix is positive definite
        inverse = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return None
    eps, n = float(np.finfo(a.dtype).eps), a.shape[-1]
    # rcond >= eps for every matrix. First a bound that needs no norms (they cost up to a
    # third of the inversion): ‖m‖₁ ≤ n max|mᵢⱼ|, so n² max|a| max|a⁻¹| eps ≤ 1 over the
    # whole batch suffices; only a batch that fails it is checked matrix by matrix.
    if n * n * _largest(a) * _largest(inverse) * eps <= 1:
        return inverse
    with np.errstate(over="ignore"):  # a norm that overflows fails the test, as it should
        if not (_norm_1(a) * _norm_1(inverse) * eps <= 1).all():
            return None  # (NaN fails both tests)
    return inverse


def _largest(m: np.ndarray) -> float:
    """The largest magnitude in ``m`` (NaN if it has one), as a Python float, which cannot
    overflow in the bound above."""
    return float(max(m.max(), -m.min()))


def _norm_1(m: np.ndarray) -> np.ndarray:
    """The 1-norms (largest column sum of magnitudes) of a batch of matrices."""
    return np.einsum("...ij->...j", np.abs(m)).max(axis=-1)  # einsum: twice sum's speed here


def apply_inverse(inverse: np.ndarray, b: np.ndarray, trans: bool) -> np.ndarray:
    """``inverse @ b`` (``inverseᵀ @ b`` if ``trans``) for vectors ``b``, batched."""
    return np.einsum("...ji,...j->...i" if trans else "...ij,...j->...i", inverse, b)


def solve_per_matrix(
    matrices: Sequence[np.ndarray],
    matrix_ranks: Sequence[int],
    rhs: np.ndarray,
    rhs_rank: int,
    solve: Callable[..., tuple[np.ndarray, ...]],
    dtype: np.dtype,
    factor_specs: Sequence[Spec],
    on_failure: OnFailure = "raise",
    out: Sequence[np.ndarray] | None = None,
    rhs_name: str | None = None,
    threads: int = 1,
) -> tuple[np.ndarray, ...]:
    """Solve for every right-hand side in a gufunc batch, factorizing each matrix once.

    ``matrices`` (each with leading batch axes before ``matrix_ranks`` core axes) describe
    one system per batch element; ``rhs`` has its own batch axes, broadcast against theirs.
    ``solve(*matrix_cores, rhs_stack)`` gets one matrix and every right-hand side that
    shares it, stacked along a new first axis, and returns ``(x_stack, *factors)``.

    Returns ``x`` with the broadcast batch in front, then each factor with the matrices'
    own batch in front: a matrix shared by many right-hand sides is factorized once. With
    ``on_failure="nan"`` a ``LinAlgError`` from ``solve`` gives NaN results (and NaN or 0
    factors) for that matrix instead of propagating. ``out`` (an adapter's ``out``)
    receives ``x`` and the factors where its arrays have their shapes and dtypes. With
    ``rhs_name`` (a forward's, not a rule's), a right-hand side with a NaN or inf is an
    error naming it, or NaN for its own batch elements alone (``non_finite_elements``).
    ``threads`` > 1 spreads the matrices over that many host threads (LAPACK releases the
    GIL; measured in ``benchmarks/overhead.py``).
    """
    bad = None
    if rhs_name is not None:
        rhs, bad = non_finite_elements(rhs_name, rhs, rhs_rank, on_failure)
    x, *factors = _solve_per_matrix(
        matrices, matrix_ranks, rhs, rhs_rank, solve, dtype, factor_specs, on_failure, out, threads
    )
    mark_failed(x, bad, rhs_rank)
    return (x, *factors)


def _solve_per_matrix(
    matrices: Sequence[np.ndarray],
    matrix_ranks: Sequence[int],
    rhs: np.ndarray,
    rhs_rank: int,
    solve: Callable[..., tuple[np.ndarray, ...]],
    dtype: np.dtype,
    factor_specs: Sequence[Spec],
    on_failure: OnFailure,
    out: Sequence[np.ndarray] | None,
    threads: int,
) -> tuple[np.ndarray, ...]:
    groups = CoefficientGroups(matrices, matrix_ranks, rhs, rhs_rank)
    own = groups.coefficient_batch  # the matrices' batch: one factorization each
    wanted = [(groups.shape, dtype), *((own + shape, kind) for shape, kind in factor_specs)]
    fits = out is not None and all(o.shape == w and o.dtype == k for o, (w, k) in zip(out, wanted))
    x, *factors = out if out is not None and fits else [np.empty(s, k) for s, k in wanted]
    if 0 in rhs.shape[rhs.ndim - rhs_rank :]:  # empty systems (n = 0): LAPACK refuses them
        return (x, *(np.zeros_like(f) for f in factors))

    def solve_or_fail(*args: np.ndarray) -> Sequence[np.ndarray]:
        """``solve``; on a ``LinAlgError``, NaN results (``on_failure`` permitting)."""
        try:
            return solve(*args)
        except np.linalg.LinAlgError as error:  # (SciPy's own too, as SolveFailure is one)
            x_failed = nan_results(on_failure, error, args[-1].shape)  # (args[-1]: the stack)
            return (x_failed, *(_failed(shape, kind) for shape, kind in factor_specs))

    if not own and not fits:  # one matrix: hand its factors on as they are, saving a copy
        computed = groups.apply((), solve_or_fail, x)
        return (x, *(np.asarray(value, kind) for value, (_, kind) in zip(computed, factor_specs)))

    def solve_and_store(index: tuple[int, ...]) -> None:
        for factor, value in zip(factors, groups.apply(index, solve_or_fail, x), strict=True):
            factor[index] = value

    indices = list(np.ndindex(*own))
    if threads > 1 and len(indices) > 1:  # LAPACK releases the GIL; each matrix writes its own
        # slices, possibly of XLA's buffers: the bridge's own sharing stops the others at the
        # first error and returns only when every thread has stopped writing

        def run(chunk: Sequence[tuple[int, ...]], stop: threading.Event) -> None:
            for index in chunk:
                if stop.is_set():
                    return
                solve_and_store(index)

        parts = min(threads, len(indices))
        share(run, [indices[i::parts] for i in range(parts)])
    else:
        for index in indices:
            solve_and_store(index)
    return (x, *factors)


def _failed(shape: tuple[int, ...], kind: np.dtype) -> np.ndarray:
    # NaN factors make the backward's solves give NaN; integer factors (pivots) stay valid
    return np.full(shape, np.nan if np.issubdtype(kind, np.floating) else 0, kind)


def outer_sum(u: jax.Array, v: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """``u[..., :, None] * v[..., None, :]`` summed down to a matrix argument's ``shape``.

    ``shape`` is the argument's padded shape in a pullback's ``res``: where it has size 1
    but ``u`` and ``v`` have a batch (one matrix, many right-hand sides) the sum is taken in
    the contraction itself, so no (batch, n, n) array is ever formed.
    """
    batch = jnp.broadcast_shapes(u.shape[:-1], v.shape[:-1])
    u = jnp.broadcast_to(u, batch + u.shape[-1:])
    v = jnp.broadcast_to(v, batch + v.shape[-1:])
    lead = len(batch)
    letters = string.ascii_letters.replace("y", "").replace("z", "")[:lead]
    kept = "".join(c for c, size in zip(letters, shape) if size != 1)
    product = jnp.einsum(f"{letters}y,{letters}z->{kept}yz", u, v)
    return product.reshape(shape)


def real_schur(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(t, u)`` with ``a = u t uᵀ``, ``t`` quasi-upper-triangular, ``u`` orthogonal."""
    t, u = scipy.linalg.schur(a, output="real")[:2]  # 2 results unless sorting asked for
    return t, u


def schur_solve(
    u: np.ndarray,
    t: np.ndarray,
    v: np.ndarray,
    s: np.ndarray,
    stack: np.ndarray,
    trans: tuple[str, str],
    singular: str | None = None,
) -> np.ndarray:
    """Bartels–Stewart from saved real Schur forms ``a = u t uᵀ``, ``b = v s vᵀ``.

    Solves ``op(a) x + x op(b) = q`` (``op`` given by ``trans``, ``"N"`` or ``"T"`` each)
    for every ``q`` in ``stack``: O(n³) matrix products and one ``trsyl`` each, no new Schur
    decomposition. If ``singular`` is given, ``trsyl`` having to perturb the equation (two
    eigenvalues within working precision of cancelling) raises it as an error.
    """
    dtype = jb.result_dtype(t, s, stack)
    (trsyl,) = scipy.linalg.get_lapack_funcs(("trsyl",), (t.astype(dtype),))
    f = np.swapaxes(u, -1, -2) @ stack @ v
    ys = np.empty_like(f, dtype=dtype)
    for i, fi in enumerate(f):
        y, scale, info = trsyl(t, s, fi, trana=trans[0], tranb=trans[1])
        if info == 1 and singular is not None:
            raise failure(singular)
        ys[i] = y / scale  # trsyl solves for scale * q, scale <= 1 to avoid overflow
    return u @ ys @ np.swapaxes(v, -1, -2)
