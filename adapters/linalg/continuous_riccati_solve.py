"""``ContinuousRiccatiSolve`` (``solve_continuous_are``): the stabilising solution of the
continuous algebraic Riccati equation; its rules are one Lyapunov solve each."""

import numpy as np
import scipy.linalg

from ._riccati import RiccatiSolve, gain_solve, hurwitz
from .lyapunov_solve import LyapunovSolve


class ContinuousRiccatiSolve(RiccatiSolve):
    """The stabilising solution ``x`` of ``aᵀx + xa - x b r⁻¹ bᵀ x + q = 0``, as
    ``scipy.linalg.solve_continuous_are``: ``x = solve_continuous_are(a, b, q, r)``.

    ``a`` and ``q`` are (n, n), ``b`` (n, m), ``r`` (m, m), all real; leading axes are
    batch axes. ``q`` and ``r`` are read as their symmetric parts (so their gradients are
    symmetric); ``r`` must be positive definite, ``(a, b)`` stabilisable and ``(a, q)``
    detectable. SciPy computes in float64 (the generalized Schur method on the Hamiltonian
    pencil); ``x`` is symmetric, takes the inputs' dtype, and its closed loop ``a - b k``
    (``k = r⁻¹ bᵀ x``) is checked to be stable.

    Derivatives: with the closed loop ``c = a - b k``, the tangent solves
    ``cᵀ ẋ + ẋ c = -(ȧᵀ x + x ȧ - x ḃ k - kᵀ ḃᵀ x + kᵀ ṙ k + q̇)`` and the cotangent
    ``c s + s cᵀ = -sym(ḡ)``, then ``q̄ = s``, ``ā = 2 x s``, ``b̄ = -2 x s kᵀ``,
    ``r̄ = k s kᵀ``: one ``LyapunovSolve`` each, so derivatives of every order work in both
    modes.

    Fails (see ``MayFail``) where there is no stabilising solution, SciPy fails (its message
    kept) or an input is not finite.
    """

    domains = {"a": hurwitz, "q": "spd", "r": "spd"}  # a stable: any b will do

    _routine = scipy.linalg.solve_continuous_are
    _function = "solve_continuous_are"
    _without_inputs = "LyapunovSolve"

    @staticmethod
    def _newton(a, b, q, r, x):
        """The closed loop at ``x`` and Kleinman's Newton step from ``x``: ``x + e`` with
        ``cᵀ e + e c = -residual(x)``."""
        k = np.linalg.solve(r, b.T @ x)
        c = a - b @ k
        residual = a.T @ x + x @ a - x @ b @ k + q
        return c, x + scipy.linalg.solve_continuous_lyapunov(c.T, -residual)

    @staticmethod
    def _stable(c):
        return bool(np.linalg.eigvals(c).real.max() < 0)

    @staticmethod
    def _loop(a, b, r, x):
        k = gain_solve(r, b.mT @ x)
        return k, a - b @ k, x

    def _lyapunov_solve(self, c, rhs):
        # c s + s cᵀ = -rhs
        return LyapunovSolve(on_failure=self.on_failure)(c, -rhs)


solve_continuous_are = ContinuousRiccatiSolve()
"""``scipy.linalg.solve_continuous_are`` as a ready adapter: ``solve_continuous_are(a, b, q,
r)``."""
