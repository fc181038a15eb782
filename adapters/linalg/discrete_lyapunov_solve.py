"""``DiscreteLyapunovSolve`` (``solve_discrete_lyapunov``): ``x = a x aᵀ + q``; its rules are
the same equation again, with ``a`` or ``aᵀ``."""

import jax
import numpy as np
import scipy.linalg

import jaxbridge as jb

from .._shared._failure import MayFail, require_finite
from .._shared._rules import compiled
from ._riccati import contraction
from ._solving import failure


class DiscreteLyapunovSolve(MayFail):
    """Solve the discrete Lyapunov (Stein) equation ``x = a x aᵀ + q``, as
    ``scipy.linalg.solve_discrete_lyapunov``: ``x = solve_discrete_lyapunov(a, q)``.

    ``a``, ``q`` and ``x`` are (n, n) and real; leading axes are batch axes. SciPy computes
    in float64 (a Kronecker-product solve below n = 10, the bilinear transformation to a
    continuous equation above); the result takes the inputs' dtype. The equation has one
    solution unless two eigenvalues of ``a`` have product 1; for a stable ``a`` (spectral
    radius below 1) and ``q`` positive semidefinite, ``x`` is the controllability Gramian.
    ``q`` need not be symmetric.

    Derivatives: the tangent solves ``ẋ = a ẋ aᵀ + q̇ + ȧ x aᵀ + a x ȧᵀ`` and the cotangent
    ``s = aᵀ s a + ḡ`` (then ``q̄ = s``, ``ā = s a xᵀ + sᵀ a x``): this adapter again, so
    derivatives of every order work in both modes; ``jax.linear_transpose`` works in ``q``.

    Fails (see ``MayFail``) on a singular equation (two eigenvalues of ``a`` with product
    within rounding of 1) or a non-finite ``a`` or ``q``.
    """

    signature = "(n,n),(n,n)->(n,n)"
    domains = {"a": contraction}  # spectral radius below 1: no eigenvalue product is 1
    linear_in = ("q",)

    def output_specs(self, a, q):
        return jax.ShapeDtypeStruct(q.shape, jb.result_dtype(a, q))

    def check(self, a, q):
        # here too, not in forward alone: q̄ and the tangent in q solve with a (this adapter
        # on a or aᵀ, which refuses a itself) but read no value of q, so under jit(grad) in q
        # XLA drops the forward, the one call that reads q
        if self.on_failure == "raise":
            _require_finite(a, q)

    def forward(self, a, q):
        dtype = jb.result_dtype(a, q)
        a, q = np.asarray(a, np.float64), np.asarray(q, np.float64)
        try:
            _require_finite(a, q)  # (for on_failure="nan", which check lets through)
            _check_solvable(a)
            x = scipy.linalg.solve_discrete_lyapunov(a, q) if a.size else q.copy()
        except np.linalg.LinAlgError as error:
            x = self.nan_on_failure(error, q.shape)
        return x.astype(dtype)

    @compiled
    def pushforward(self, res, tangents):
        a, _, x = res
        da, dq = tangents
        if da is None:
            return self(a, dq)
        rhs = da @ x @ a.mT + a @ x @ da.mT
        return self(a, rhs if dq is None else rhs + dq)

    @compiled
    def pullback(self, res, g):
        a, _, x = res
        s = self(a.mT, g)
        return s @ a @ x.mT + s.mT @ a @ x, s


def _require_finite(a: np.ndarray, q: np.ndarray) -> None:
    require_finite("matrix 'a'", a)
    require_finite("matrix 'q'", q)  # (SciPy's own check named no argument)


def _check_solvable(a: np.ndarray) -> None:
    if not a.size:  # (no unknowns: nothing can be singular)
        return
    eigenvalues = np.linalg.eigvals(a)
    products = eigenvalues[:, None] * eigenvalues[None, :]
    gap = float(np.abs(1 - products).min())
    if gap <= 100 * a.shape[0] * np.finfo(np.float64).eps * max(1.0, float(np.abs(products).max())):
        raise failure(
            "solve_discrete_lyapunov: the equation x = a x aᵀ + q is singular: two eigenvalues "
            f"of 'a' have product 1 (to working precision; |1 - λi λj| = {gap:.1e})"
        )


solve_discrete_lyapunov = DiscreteLyapunovSolve()
"""``scipy.linalg.solve_discrete_lyapunov`` as a ready adapter: ``solve_discrete_lyapunov(a,
q)``."""
