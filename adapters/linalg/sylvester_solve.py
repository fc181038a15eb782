"""``SylvesterSolve``: ``a x + x b = q`` by Bartels–Stewart; the backward reuses the Schur forms."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb

from .._shared._failure import MayFail, require_finite
from .._shared._rules import total
from ._solving import (
    lapack_dtype,
    real_schur,
    schur_solve,
    solve_per_matrix,
)

_SINGULAR = (
    "the equation a x + x b = q is singular: 'a' and '-b' have a common eigenvalue (to "
    "working precision)"
)


class SylvesterSolve(MayFail):
    """Solve the Sylvester equation ``a x + x b = q``: ``x = SylvesterSolve()(a, b, q)``.

    ``a`` is (n, n), ``b`` (m, m), ``q`` and ``x`` (n, m), all real. Leading axes are
    batch axes that broadcast like a NumPy gufunc. The forward is what
    ``scipy.linalg.solve_sylvester`` does (real Schur forms of ``a`` and ``b``, then LAPACK
    ``trsyl``) and saves the Schur forms; the backward solves the adjoint equation
    ``aᵀ λ + λ bᵀ = ḡ`` with them, and the forward mode ``a ẋ + ẋ b = q̇ - ȧ x - x ḃ``. Both
    rules are made of bridged solves, so derivatives of every order work in both modes.

    Fails (see ``MayFail``) on a singular equation (``a`` and ``-b`` share an eigenvalue to
    working precision, where ``solve_sylvester`` silently returns a perturbed answer) or a
    non-finite ``a``, ``b`` or ``q``.
    """

    signature = "(n,n),(m,m),(n,m)->(n,m)"
    vectorized = True
    domains = {"a": "stable", "b": "stable"}  # no eigenvalue of a is one of -b
    linear_in = ("q",)
    residuals_from = ("a", "b")  # factors: stored once per matrix, not per right-hand side

    def output_specs(self, a, b, q):
        return jax.ShapeDtypeStruct(q.shape, jb.result_dtype(a, b, q))

    def residual_specs(self, a, b, q):
        dtype = jb.result_dtype(a, b, q)
        return tuple(jax.ShapeDtypeStruct(m.shape, dtype) for m in (a, a, b, b))

    def forward(self, a, b, q):
        dtype = lapack_dtype(a, b, q)
        n, m = q.shape[-2:]
        specs = [((n, n), dtype), ((n, n), dtype), ((m, m), dtype), ((m, m), dtype)]

        def solve(a, b, stack):
            require_finite("matrix 'a'", a)
            require_finite("matrix 'b'", b)
            t, u = real_schur(np.asarray(a, dtype))
            s, v = real_schur(np.asarray(b, dtype))
            return schur_solve(u, t, v, s, stack.astype(dtype), ("N", "N"), _SINGULAR), u, t, v, s

        return solve_per_matrix(
            [a, b], [2, 2], q, 2, solve, dtype, specs, self.on_failure, rhs_name="matrix 'q'"
        )

    def pushforward(self, res, tangents):
        a, b, _, x, u, t, v, s = res
        rhs = _rhs(tangents, x, transposed=False)
        return None if rhs is None else _SchurSylvesterSolve()(a, b, u, t, v, s, rhs)

    def pullback(self, res, g):
        a, b, _, x, u, t, v, s = res
        lam = _SchurSylvesterSolve(trans=True)(a, b, u, t, v, s, g)
        xt = jnp.swapaxes(x, -1, -2)
        return -lam @ xt, -xt @ lam, lam


solve_sylvester = SylvesterSolve()
"""``scipy.linalg.solve_sylvester`` as a ready adapter: ``x = solve_sylvester(a, b, q)``
solves ``a x + x b = q`` (``SylvesterSolve()``)."""


class _SchurSylvesterSolve(jb.Adapter):
    """``a x + x b = q`` (``aᵀ x + x bᵀ = q`` if ``trans``) from saved Schur forms.

    ``a`` and ``b`` are not read on the host: they are arguments so that derivatives with
    respect to them flow here (the Schur forms count as constants).
    """

    trans: bool = False

    signature = "(n,n),(m,m),(n,n),(n,n),(m,m),(m,m),(n,m)->(n,m)"
    vectorized = True

    def forward(self, a, b, u, t, v, s, q):
        op = "T" if self.trans else "N"

        def solve(u, t, v, s, stack):
            return (schur_solve(u, t, v, s, stack, (op, op)),)

        dtype = jb.result_dtype(t, s, q)
        return solve_per_matrix([u, t, v, s], [2, 2, 2, 2], q, 2, solve, dtype, ())[0]

    def pushforward(self, res, tangents):
        a, b, u, t, v, s, _, x = res
        rhs = _rhs((tangents[0], tangents[1], tangents[6]), x, transposed=self.trans)
        return None if rhs is None else _SchurSylvesterSolve(self.trans)(a, b, u, t, v, s, rhs)

    def pullback(self, res, g):
        a, b, u, t, v, s, _, x = res
        lam = _SchurSylvesterSolve(trans=not self.trans)(a, b, u, t, v, s, g)
        xt, lamt = jnp.swapaxes(x, -1, -2), jnp.swapaxes(lam, -1, -2)
        if self.trans:  # aᵀ x + x bᵀ = q: the cotangents of the plain equation, transposed
            return -x @ lamt, -lamt @ x, None, None, None, None, lam
        return -lam @ xt, -xt @ lam, None, None, None, None, lam


def _rhs(tangents, x, transposed):
    """``q̇ - op(ȧ) x - x op(ḃ)`` (``op`` the transpose if ``transposed``), the right-hand
    side whose solution is the tangent of ``x``; None when every tangent is zero."""
    da, db, dq = tangents
    op = (lambda m: m.mT) if transposed else (lambda m: m)
    return total((dq, None if da is None else -op(da) @ x, None if db is None else -x @ op(db)))
