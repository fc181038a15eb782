"""``ContinuousRiccatiSolve`` (``solve_continuous_are``): the stabilising solution of the
continuous algebraic Riccati equation; its rules are one Lyapunov solve each."""

import functools

import jax
import numpy as np
import scipy.linalg

import jaxbridge as jb

from .._failure import OnFailure
from .._rules import total
from ._riccati import check_inputs, gain_solve, hurwitz, solve_are, sym
from .lyapunov_solve import LyapunovSolve


class ContinuousRiccatiSolve(jb.Adapter):
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

    Parameters:
        on_failure: ``"raise"`` (the default): no stabilising solution, SciPy failing, or
            non-finite inputs are an error (with SciPy's message where it gave one).
            ``"nan"``: that equation's ``x`` is NaN instead.
    """

    on_failure: OnFailure = "raise"

    signature = "(n,n),(n,m),(n,n),(m,m)->(n,n)"
    domains = {"a": hurwitz, "q": "spd", "r": "spd"}  # a stable: any b will do

    def output_specs(self, a, b, q, r):
        check_inputs("ContinuousRiccatiSolve", "LyapunovSolve", b)
        return jax.ShapeDtypeStruct(a.shape, jb.result_dtype(a, b, q, r))

    def forward(self, a, b, q, r):
        dtype = jb.result_dtype(a, b, q, r)
        x = solve_are(
            "solve_continuous_are",
            scipy.linalg.solve_continuous_are,
            _newton,
            lambda c: bool(np.linalg.eigvals(c).real.max() < 0),
            a,
            b,
            q,
            r,
            self.on_failure,
        )
        return x.astype(dtype)

    def pushforward(self, res, tangents):
        return _pushforward(self.on_failure, res, tangents)

    def pullback(self, res, g):
        return _pullback(self.on_failure, res, g)


# Each rule is one compiled program (called eagerly, its operations would each compile on
# their own); on_failure is static.
@functools.partial(jax.jit, static_argnums=0)
def _pushforward(on_failure, res, tangents):
    a, b, _, r, x = res
    da, db, dq, dr = tangents
    k = gain_solve(r, b.mT @ x)
    terms = []
    if da is not None:
        terms.append(da.mT @ x + x @ da)
    if db is not None:
        xbk = x @ db @ k
        terms.append(-(xbk + xbk.mT))
    if dr is not None:
        terms.append(k.mT @ sym(dr) @ k)
    if dq is not None:
        terms.append(sym(dq))
    rhs = total(terms)
    if rhs is None:
        return None
    return LyapunovSolve(on_failure=on_failure)(_closed(a, b, k).mT, -rhs)


@functools.partial(jax.jit, static_argnums=0)
def _pullback(on_failure, res, g):
    a, b, _, r, x = res
    k = gain_solve(r, b.mT @ x)
    s = LyapunovSolve(on_failure=on_failure)(_closed(a, b, k), -sym(g))
    xs = x @ s
    return 2 * xs, -2 * xs @ k.mT, s, k @ s @ k.mT


def _closed(a, b, k):
    return a - b @ k


def _newton(a, b, q, r, x):
    """The closed loop at ``x`` and Kleinman's Newton step from ``x``: ``x + e`` with
    ``cᵀ e + e c = -residual(x)``."""
    k = np.linalg.solve(r, b.T @ x)
    c = a - b @ k
    residual = a.T @ x + x @ a - x @ b @ k + q
    return c, x + scipy.linalg.solve_continuous_lyapunov(c.T, -residual)


solve_continuous_are = ContinuousRiccatiSolve()
"""``scipy.linalg.solve_continuous_are`` as a ready adapter: ``solve_continuous_are(a, b, q,
r)``."""
