"""``Nnls``: SciPy's ``nnls``, differentiable on its active set."""

from typing import Any

import jax
import numpy as np
import scipy.optimize

import jaxbridge as jb

from .._shared._failure import MayFail, OnFailure, require_finite
from ._implicit import OptimizeError

_ROUNDING = 64 * np.finfo(np.float64).eps  # a residual this small is rounding: an exact fit
_ZERO = 1e-9  # a multiplier this small, relative to the size of its terms, is 0


class Nnls(MayFail):
    """``argmin ‖A x - b‖`` over ``x ≥ 0``, with SciPy's active-set solver on the host:
    ``x, rnorm = Nnls()(A, b)``.

    ``A`` is (m, n) and ``b`` (m,), as SciPy's; ``x`` is (n,) and ``rnorm = ‖A x - b‖``.
    Leading axes are batch axes (one SciPy call per problem).

    Parameters:
        maxiter: SciPy's iteration limit (``None``: its default, ``3 n``).
        on_failure: see ``MayFail``. Fails (an ``OptimizeError``) on non-finite input, on
            SciPy's iteration limit, and, where a derivative is asked for, on a degenerate
            solution (below).

    Derivatives: first order, in ``A`` and ``b``, on the active set: the entries ``x_i >
    0`` are the least-squares solution of their columns, which must be independent, and
    every zero entry must be held at zero by a strictly positive multiplier (the gradient
    of ``½‖A x - b‖²`` pushes it below zero). A zero entry with a zero multiplier would
    leave the active set under the smallest change: an ``OptimizeError`` says so, or NaN
    on request. ``rnorm``'s derivative is ``r/‖r‖`` against the residual ``r``; at an exact
    fit (``rnorm = 0``, a kink) it is the subgradient 0.
    """

    maxiter: int | None = None

    signature = "(m,n),(m)->(n),()"
    blas_threads = 1  # its dense least squares woke OpenBLAS's threads (see Adapter.blas_threads)

    def __post_init__(self) -> None:
        if self.maxiter is not None and (
            not isinstance(self.maxiter, int) or isinstance(self.maxiter, bool) or self.maxiter < 1
        ):
            raise ValueError(
                f"Nnls: parameter 'maxiter' must be a positive integer or None; got "
                f"{self.maxiter!r}."
            )

    def output_specs(self, A, b):  # noqa: N803 (SciPy's names)
        dtype = jb.result_dtype(A, b)
        return jax.ShapeDtypeStruct(A.shape[-1:], dtype), jax.ShapeDtypeStruct((), dtype)

    def forward(self, A, b):  # noqa: N803
        dtype = jb.result_dtype(A, b)
        try:
            require_finite("argument 'A'", A, OptimizeError.because)
            require_finite("argument 'b'", b, OptimizeError.because)
            try:
                if A.size == 0:  # (SciPy 1.17's nnls frees twice, aborting the process)
                    x, rnorm = np.zeros(A.shape[-1]), np.linalg.norm(b)
                else:
                    x, rnorm = scipy.optimize.nnls(A, b, maxiter=self.maxiter)
            except RuntimeError as error:  # (SciPy's iteration limit)
                raise OptimizeError.because(f"nnls did not converge ({error})") from None
        except OptimizeError as error:
            x, rnorm = self.nan_on_failure(error, A.shape[-1:], ())
        return np.asarray(x, dtype), np.asarray(rnorm, dtype)

    def backward(self, res, g):
        A, b, x, rnorm = res  # noqa: N806
        gx, gr = g
        try:
            active = _ActiveSet(A, b, x)
        except OptimizeError as error:
            nans = self.nan_on_failure(error, A.shape, b.shape)
            return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip(nans, res))
        ga, gb = np.zeros(A.shape), np.zeros(b.shape)
        if gx is not None:  # x_P = G⁻¹ A_Pᵀ b with G = A_Pᵀ A_P, x_Z = 0
            u = active.solve(np.asarray(gx, np.float64)[active.p])
            au = active.a_p @ u
            ga[:, active.p] = np.outer(active.r, u) - np.outer(au, active.x_p)
            gb += au
        if gr is not None and active.norm > 0:  # ‖r‖: r / ‖r‖ against ṙ = ḃ - Ȧ x
            s = float(gr) * active.r / active.norm
            gb += s
            ga[:, active.p] -= np.outer(s, active.x_p)
        return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip((ga, gb), (A, b)))

    def jvp(self, res, tangents):
        A, b, x, _ = res  # noqa: N806
        da, db = tangents
        dtype = jb.result_dtype(A, b)
        try:
            active = _ActiveSet(A, b, x)
        except OptimizeError as error:
            return self.nan_on_failure(error, x.shape, (), dtype=dtype)
        moved = np.zeros(b.shape) if db is None else np.asarray(db, np.float64)  # ḃ - Ȧ x
        rhs = np.zeros(active.x_p.shape)
        if da is not None:
            da_p = np.asarray(da, np.float64)[:, active.p]
            moved = moved - da_p @ active.x_p
            rhs += da_p.T @ active.r
        dx = np.zeros(x.shape)
        dx[active.p] = active.solve(rhs + active.a_p.T @ moved)
        dr = active.r @ moved / active.norm if active.norm > 0 else 0.0
        return dx.astype(dtype), np.asarray(dr, dtype)


class _ActiveSet:
    """The solution's positive entries ``p`` and their columns ``a_p``, the residual
    ``r = b - A x``, and solves with ``a_pᵀ a_p``; refused where it is degenerate."""

    def __init__(self, A: np.ndarray, b: np.ndarray, x: np.ndarray) -> None:  # noqa: N803
        A, b, x = (np.asarray(v, np.float64) for v in (A, b, x))  # noqa: N806
        self.p = np.flatnonzero(x > 0)
        self.a_p, self.x_p = A[:, self.p], x[self.p]
        self.r = b - self.a_p @ self.x_p
        self.norm = float(np.linalg.norm(self.r))
        # an exact fit: what is left of r is rounding, whose direction means nothing (it
        # turned completely when b moved by one ulp); rnorm's subgradient there is 0
        terms = np.linalg.norm(b) + np.linalg.norm(np.abs(self.a_p) @ np.abs(self.x_p))
        if self.norm <= _ROUNDING * np.sqrt(max(b.size, 1)) * terms:
            self.r, self.norm = np.zeros_like(self.r), 0.0
        zero = np.flatnonzero(x <= 0)
        multipliers = A[:, zero].T @ self.r  # -∇ of ½‖A x - b‖² at the zero entries
        # each against the terms it sums (|A_j|ᵀ |r|, and the rounding r carries from b and
        # A_p x_p): ‖A_j‖ ‖r‖ counted residual rows that column j does not touch, and read a
        # multiplier of -1e-3 beside a residual of 1e7 elsewhere as zero
        terms = np.abs(self.r) + np.abs(b) + np.abs(self.a_p) @ np.abs(self.x_p)
        if (multipliers >= -_ZERO * (np.abs(A[:, zero]).T @ terms)).any():
            raise OptimizeError.because(
                "nnls's solution is degenerate: an entry is 0 with a zero multiplier (it "
                "would leave 0 under the smallest change): x has no derivative"
            )
        self._gram = self.a_p.T @ self.a_p
        if self.p.size and np.linalg.matrix_rank(self.a_p) < len(self.p):
            raise OptimizeError.because(
                "nnls's solution is degenerate: the columns of its positive entries are "
                "not independent: x has no derivative"
            )

    def solve(self, v: np.ndarray) -> np.ndarray:
        """``(a_pᵀ a_p)⁻¹ v``."""
        return np.linalg.solve(self._gram, v)


def nnls(
    A: Any,  # noqa: N803 (SciPy's names)
    b: Any,
    maxiter: int | None = None,
    *,
    on_failure: OnFailure = "raise",
) -> Any:
    """``scipy.optimize.nnls(A, b, maxiter=maxiter)`` as ``Nnls(maxiter,
    on_failure=on_failure)(A, b)``: ``(x, rnorm)``, as SciPy's."""
    return Nnls(maxiter=maxiter, on_failure=on_failure)(A, b)
