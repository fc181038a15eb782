"""``DiscreteRiccatiSolve`` (``solve_discrete_are``): the stabilising solution of the discrete
algebraic Riccati equation; its rules are one discrete Lyapunov solve each."""

import numpy as np
import scipy.linalg

from ._riccati import RiccatiSolve, contraction, gain_solve
from .discrete_lyapunov_solve import DiscreteLyapunovSolve


class DiscreteRiccatiSolve(RiccatiSolve):
    """The stabilising solution ``x`` of
    ``x = aᵀ x a - aᵀ x b (r + bᵀ x b)⁻¹ bᵀ x a + q``, as ``scipy.linalg.solve_discrete_are``:
    ``x = solve_discrete_are(a, b, q, r)``.

    ``a`` and ``q`` are (n, n), ``b`` (n, m), ``r`` (m, m), all real; leading axes are
    batch axes. ``q`` and ``r`` are read as their symmetric parts (so their gradients are
    symmetric); ``r`` must be positive definite, ``(a, b)`` stabilisable and ``(a, q)``
    detectable. SciPy computes in float64 (the generalized Schur method on the symplectic
    pencil); ``x`` is symmetric, takes the inputs' dtype, and its closed loop ``a - b k``
    (``k = (r + bᵀ x b)⁻¹ bᵀ x a``) is checked to have spectral radius below 1.

    Derivatives: with the closed loop ``c = a - b k``, the tangent solves
    ``ẋ = cᵀ ẋ c + ȧᵀ x c + cᵀ x ȧ - cᵀ x ḃ k - kᵀ ḃᵀ x c + kᵀ ṙ k + q̇`` and the cotangent
    ``s = c s cᵀ + sym(ḡ)``, then ``q̄ = s``, ``ā = 2 x c s``, ``b̄ = -2 x c s kᵀ``,
    ``r̄ = k s kᵀ``: one ``DiscreteLyapunovSolve`` each, so derivatives of every order work
    in both modes.

    Fails (see ``MayFail``) where there is no stabilising solution, SciPy fails (its message
    kept) or an input is not finite.
    """

    domains = {"a": contraction, "q": "spd", "r": "spd"}  # a Schur stable: any b will do

    _routine = scipy.linalg.solve_discrete_are
    _function = "solve_discrete_are"
    _without_inputs = "DiscreteLyapunovSolve"

    @staticmethod
    def _newton(a, b, q, r, x):
        """The closed loop at ``x`` and Hewer's Newton step from ``x``: ``x + e`` with
        ``e = cᵀ e c + residual(x)``."""
        k = np.linalg.solve(r + b.T @ x @ b, b.T @ x @ a)
        c = a - b @ k
        residual = a.T @ x @ a - x - a.T @ x @ b @ k + q
        return c, x + scipy.linalg.solve_discrete_lyapunov(c.T, residual)

    @staticmethod
    def _stable(c):
        return bool(np.abs(np.linalg.eigvals(c)).max() < 1)

    @staticmethod
    def _loop(a, b, r, x):
        k = gain_solve(r + b.mT @ x @ b, b.mT @ x @ a)  # (r + bᵀ x b)⁻¹ bᵀ x a
        c = a - b @ k
        return k, c, x @ c

    def _lyapunov_solve(self, c, rhs):
        # s = c s cᵀ + rhs
        return DiscreteLyapunovSolve(on_failure=self.on_failure)(c, rhs)


solve_discrete_are = DiscreteRiccatiSolve()
"""``scipy.linalg.solve_discrete_are`` as a ready adapter: ``solve_discrete_are(a, b, q,
r)``."""
