"""``DiscreteRiccatiSolve`` (``solve_discrete_are``): the stabilising solution of the discrete
algebraic Riccati equation; its rules are one discrete Lyapunov solve each."""

import functools

import jax
import numpy as np
import scipy.linalg

import jaxbridge as jb

from .._failure import OnFailure
from .._rules import total
from ._riccati import check_inputs, contraction, gain_solve, solve_are, sym
from .discrete_lyapunov_solve import DiscreteLyapunovSolve


class DiscreteRiccatiSolve(jb.Adapter):
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

    Parameters:
        on_failure: ``"raise"`` (the default): no stabilising solution, SciPy failing, or
            non-finite inputs are an error (with SciPy's message where it gave one).
            ``"nan"``: that equation's ``x`` is NaN instead.
    """

    on_failure: OnFailure = "raise"

    signature = "(n,n),(n,m),(n,n),(m,m)->(n,n)"
    domains = {"a": contraction, "q": "spd", "r": "spd"}  # a Schur stable: any b will do

    def output_specs(self, a, b, q, r):
        check_inputs("DiscreteRiccatiSolve", "DiscreteLyapunovSolve", b)
        return jax.ShapeDtypeStruct(a.shape, jb.result_dtype(a, b, q, r))

    def forward(self, a, b, q, r):
        dtype = jb.result_dtype(a, b, q, r)
        x = solve_are(
            "solve_discrete_are",
            scipy.linalg.solve_discrete_are,
            _newton,
            lambda c: bool(np.abs(np.linalg.eigvals(c)).max() < 1),
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
    k = _gain(a, b, r, x)
    c = a - b @ k
    terms = []
    if da is not None:
        xda = c.mT @ x @ da
        terms.append(xda + xda.mT)
    if db is not None:
        xdb = c.mT @ x @ db @ k
        terms.append(-(xdb + xdb.mT))
    if dr is not None:
        terms.append(k.mT @ sym(dr) @ k)
    if dq is not None:
        terms.append(sym(dq))
    rhs = total(terms)
    if rhs is None:
        return None
    return DiscreteLyapunovSolve(on_failure=on_failure)(c.mT, rhs)


@functools.partial(jax.jit, static_argnums=0)
def _pullback(on_failure, res, g):
    a, b, _, r, x = res
    k = _gain(a, b, r, x)
    c = a - b @ k
    s = DiscreteLyapunovSolve(on_failure=on_failure)(c, sym(g))
    xcs = x @ c @ s
    return 2 * xcs, -2 * xcs @ k.mT, s, k @ s @ k.mT


def _gain(a, b, r, x):
    """``k = (r + bᵀ x b)⁻¹ bᵀ x a`` in JAX."""
    return gain_solve(r + b.mT @ x @ b, b.mT @ x @ a)


def _newton(a, b, q, r, x):
    """The closed loop at ``x`` and Hewer's Newton step from ``x``: ``x + e`` with
    ``e = cᵀ e c + residual(x)``."""
    k = np.linalg.solve(r + b.T @ x @ b, b.T @ x @ a)
    c = a - b @ k
    residual = a.T @ x @ a - x - a.T @ x @ b @ k + q
    return c, x + scipy.linalg.solve_discrete_lyapunov(c.T, residual)


solve_discrete_are = DiscreteRiccatiSolve()
"""``scipy.linalg.solve_discrete_are`` as a ready adapter: ``solve_discrete_are(a, b, q,
r)``."""
