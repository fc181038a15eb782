"""``LyapunovSolve``: ``a x + x aᵀ = q`` by Bartels–Stewart, the backward reusing the Schur form."""

import jax
import numpy as np

import jaxbridge as jb

from .._shared._failure import MayFail, require_finite
from ._solving import (
    lapack_dtype,
    real_schur,
    schur_solve,
    solve_per_matrix,
)

_SINGULAR = (
    "the equation a x + x aᵀ = q is singular: two eigenvalues of 'a' sum to zero (to working "
    "precision)"
)


class LyapunovSolve(MayFail):
    """Solve the continuous Lyapunov equation ``a x + x aᵀ = q``: ``x = LyapunovSolve()(a, q)``.

    ``a``, ``q`` and ``x`` are (n, n) and real (so ``aᴴ = aᵀ``). Leading axes are batch axes
    that broadcast like a NumPy gufunc. The forward is what
    ``scipy.linalg.solve_continuous_lyapunov`` does (one real Schur form of ``a``, then
    LAPACK ``trsyl``) and saves the Schur form; the backward solves the adjoint equation
    ``aᵀ λ + λ a = ḡ`` with it, and the forward mode ``a ẋ + ẋ aᵀ = q̇ - ȧ x - x ȧᵀ``. Both
    rules are made of bridged solves, so derivatives of every order work in both modes.

    Fails (see ``MayFail``) on a singular equation (two eigenvalues of ``a`` summing to zero
    within working precision, e.g. ``a`` singular) or a non-finite ``a`` or ``q``.
    """

    signature = "(n,n),(n,n)->(n,n)"
    vectorized = True
    domains = {"a": "stable"}  # no two eigenvalues sum to 0
    linear_in = ("q",)
    residuals_from = ("a",)  # factors: stored once per matrix, not per right-hand side

    def output_specs(self, a, q):
        return jax.ShapeDtypeStruct(q.shape, jb.result_dtype(a, q))

    def residual_specs(self, a, q):
        return (jax.ShapeDtypeStruct(a.shape, jb.result_dtype(a, q)),) * 2

    def forward(self, a, q):
        dtype = lapack_dtype(a, q)
        n = a.shape[-1]

        def solve(a, stack):
            require_finite("matrix 'a'", a)
            t, u = real_schur(np.asarray(a, dtype))
            return schur_solve(u, t, u, t, stack.astype(dtype), ("N", "T"), _SINGULAR), u, t

        specs = [((n, n), dtype)] * 2
        return solve_per_matrix(
            [a], [2], q, 2, solve, dtype, specs, self.on_failure, rhs_name="matrix 'q'"
        )

    def pushforward(self, res, tangents):
        a, _, x, u, t = res
        rhs = _rhs(tangents, x, transposed=False)
        return None if rhs is None else _SchurLyapunovSolve()(a, u, t, rhs)

    def pullback(self, res, g):
        a, _, x, u, t = res
        lam = _SchurLyapunovSolve(trans=True)(a, u, t, g)
        return -(lam @ x.mT + lam.mT @ x), lam


solve_continuous_lyapunov = LyapunovSolve()
"""``scipy.linalg.solve_continuous_lyapunov`` as a ready adapter: ``x =
solve_continuous_lyapunov(a, q)`` solves ``a x + x aᵀ = q`` (``LyapunovSolve()``)."""


class _SchurLyapunovSolve(jb.Adapter):
    """``a x + x aᵀ = q`` (``aᵀ x + x a = q`` if ``trans``) from the saved Schur form of ``a``.

    ``a`` is not read on the host: it is an argument so that the derivative with respect to
    it flows here (the Schur form counts as a constant).
    """

    trans: bool = False

    signature = "(n,n),(n,n),(n,n),(n,n)->(n,n)"
    vectorized = True

    def forward(self, a, u, t, q):
        trans = ("T", "N") if self.trans else ("N", "T")

        def solve(u, t, stack):
            return (schur_solve(u, t, u, t, stack, trans),)

        return solve_per_matrix([u, t], [2, 2], q, 2, solve, jb.result_dtype(t, q), ())[0]

    def pushforward(self, res, tangents):
        a, u, t, _, x = res
        rhs = _rhs((tangents[0], tangents[3]), x, transposed=self.trans)
        return None if rhs is None else _SchurLyapunovSolve(self.trans)(a, u, t, rhs)

    def pullback(self, res, g):
        a, u, t, _, x = res
        lam = _SchurLyapunovSolve(trans=not self.trans)(a, u, t, g)
        if self.trans:  # aᵀ x + x a = q: the cotangent of the plain equation, transposed
            return -(x @ lam.mT + x.mT @ lam), None, None, lam
        return -(lam @ x.mT + lam.mT @ x), None, None, lam


def _rhs(tangents, x, transposed):
    """``q̇ - op(ȧ) x - x op(ȧ)ᵀ`` (``op`` the transpose if ``transposed``), the right-hand
    side whose solution is the tangent of ``x``; None when both tangents are zero."""
    da, dq = tangents
    if da is None:
        return dq
    da = da.mT if transposed else da
    product = da @ x + x @ da.mT
    return -product if dq is None else dq - product
