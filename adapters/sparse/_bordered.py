"""``_BorderedSolve``: the system that gives eigenvector derivatives,
``[[a - w I, s v], [s vᵀ, 0]] [x; mu / s] = [top; s bottom]`` for each eigenpair ``(w, v)``
of a symmetric operator ``a`` given by parameters (a sparse matrix's values, an operator's
``theta``), with the border scaled by ``s``, the largest ``|w|`` returned; the eigensolver
that owns it solves it on the host (SuperLU, MINRES).

Its eigenvalues are the gaps ``w_j - w`` to every other eigenvalue of ``a``, returned or
not, and ``±s``: so a few steps of inverse iteration bound the gap to the eigenvalues that
were not returned, and a repeated eigenvalue is refused by the same rule wherever its twin is.

Its rules are the same solve again (the matrix is symmetric), with the operator's
derivative in its parameters from the owner, so the eigenvector rules built on it
differentiate to every order the owner's operator does."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import scipy.sparse
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._failure import SolveFailure, nan_results

GAP = 1e-10
"""Eigenvalues closer than ``GAP`` times the largest ``|w|`` count as repeated: there the
eigenvectors, and so their derivatives, are not determined."""

STEPS = 2
"""Steps of inverse iteration on the bordered matrix, from a fixed random vector, that bound
its smallest singular value from above: the gap to the nearest eigenvalue not returned, when
that is below ``GAP`` (the returned ones are checked directly). One step leaves the bound
about ``sqrt(n)`` too large; the second divides the other gaps' share by their ratio to the
smallest (measured: the true gap for twins 1e-12 to 5e-11 apart, 1.1-1.2x above it for
well-separated eigenvalues). Its cost is two more solves per vector: with SuperLU about 10%
(the factorization dominates), with MINRES three times the work."""


class RepeatedEigenvalue(SolveFailure):
    """An eigenvalue within ``GAP`` of another one: its eigenvector has no derivative."""


class _BorderedSolve(jb.Adapter):
    """For each column ``i``: ``[[a - w_i I, v_i], [v_iᵀ, 0]] [x_i; mu_i] = [top_i; bottom_i]``
    with ``a`` the owner's operator at parameters ``data``. The owner provides
    ``_bordered_solver(data, name)`` (host: a function of ``(w_i, v_i, s)`` that factorizes
    the system with its border scaled by ``s`` and returns its solve, a function of the
    right-hand side (n + 1,), or raises ``SolveFailure``), and in JAX
    ``_operator_tangent(data, ddata, x)`` (``da x``) and ``_operator_cotangent(data, y, x)``
    (the derivative of ``Σ_i y_iᵀ a x_i`` in ``data``).

    A column whose right-hand side is zero is zero without a factorization (and without
    the gap check): a cotangent or tangent that never reaches the eigenvectors costs
    nothing and fails for no repeated eigenvalue. Both modes' rules (``eigen_tangents``,
    ``eigen_cotangent``) solve through it, so a refusal is the same in both: the owner's
    error, or NaN for that column where its ``on_failure`` asks for NaN.
    """

    owner: Any  # the eigensolver adapter: its operator, solver and on_failure
    name: str  # what errors name: the adapter the user called

    signature = "(m),(k),(n,k),(n,k),(k)->(n,k),(k)"
    blas_threads = 1  # SuperLU's dense blocks woke OpenBLAS's threads (see Eigsh)

    def forward(self, data, w, v, top, bottom):
        n = v.shape[0]
        x, mu = np.zeros(top.shape), np.zeros(bottom.shape)
        scale = float(np.abs(w).max(initial=0.0)) or 1.0
        factor = None
        for i in range(w.shape[0]):
            if not (top[:, i].any() or bottom[i]):
                continue
            try:
                self._refuse_returned_twin(w, i, scale)
                if factor is None:
                    factor = self.owner._bordered_solver(data, self.name)
                solve = factor(float(w[i]), v[:, i], scale)
                self._refuse_twin_not_returned(solve, n + 1, w, i, scale)
                z = solve(np.append(top[:, i], scale * bottom[i]))
                x[:, i], mu[i] = z[:n], scale * z[n]
            except np.linalg.LinAlgError as error:
                x[:, i], mu[i] = nan_results(self.owner.on_failure, error, (n,), ())
        dtype = jb.result_dtype(data, w, v, top, bottom)
        return x.astype(dtype), mu.astype(dtype)

    def _refuse_returned_twin(self, w, i: int, scale: float) -> None:
        gaps = np.where(np.arange(w.shape[0]) == i, np.inf, np.abs(w - w[i]))
        j = int(np.argmin(gaps))
        if gaps[j] <= GAP * scale:
            values = self.owner.values_name
            raise RepeatedEigenvalue.because(
                f"{self.name}: {values} {i} and {j} ({w[i]:.17g} and {w[j]:.17g}) are "
                f"{gaps[j]:.2g} apart, within {GAP:g} times the largest |w|: "
                f"{_NO_DERIVATIVE.format(values=values)}"
            )

    def _refuse_twin_not_returned(self, solve, size: int, w, i: int, scale: float) -> None:
        # each solve's growth bounds the smallest eigenvalue (in size) of the bordered matrix;
        # the least of them, as MINRES's solves of a nearly singular system grow unevenly
        y, bound = np.random.default_rng(0).standard_normal(size), np.inf
        for _ in range(STEPS):
            y = solve(y / np.linalg.norm(y))
            bound = min(bound, 1 / float(np.linalg.norm(y)))
        if not bound > GAP * scale:  # (NaN too)
            values = self.owner.values_name
            raise RepeatedEigenvalue.because(
                f"{self.name}: {values} {i} ({w[i]:.17g}) and one not returned are at most "
                f"{bound:.2g} apart, within {GAP:g} times the largest |w|: "
                f"{_NO_DERIVATIVE.format(values=values)}"
            )

    def pushforward(self, res, tangents):
        data, w, v, _, _, x, mu = res
        ddata, dw, dv, dtop, dbottom = tangents
        # d(M [x; mu]) = 0: M [dx; dmu] = [dtop; dbottom] - dM [x; mu]
        top = jnp.zeros_like(x) if dtop is None else dtop
        bottom = jnp.zeros_like(mu) if dbottom is None else dbottom
        if ddata is not None:
            top = top - self.owner._operator_tangent(data, ddata, x)
        if dw is not None:
            top = top + dw[..., None, :] * x
        if dv is not None:
            top = top - dv * mu[..., None, :]
            bottom = bottom - jnp.sum(dv * x, axis=-2)
        return self(data, w, v, top, bottom)

    def pullback(self, res, g):
        data, w, v, _, _, x, mu = res
        # M is symmetric: the adjoint solve is the same solve
        lam, lam_mu = self(data, w, v, *g)
        return (
            -self.owner._operator_cotangent(data, lam, x),
            jnp.sum(lam * x, axis=-2),
            -(lam * mu[..., None, :] + x * lam_mu[..., None, :]),
            lam,
            lam_mu,
        )


_NO_DERIVATIVE = (
    "repeated {values} have no eigenvector derivative (the {values}' own tangents are defined "
    "along a direction that does not split them, and their sum's always)"
)


def sparse_bordered_solver(name, a, w, v, border):
    """SuperLU of the bordered system of ``(w, v)`` with the sparse (CSC) ``a``: its solve."""
    n = a.shape[0]
    shifted = a - w * scipy.sparse.eye_array(n, format="csc")
    column = scipy.sparse.csc_array(border * v[:, None])
    m = scipy.sparse.block_array([[shifted, column], [column.T, None]], format="csc")
    try:
        lu = scipy.sparse.linalg.splu(m)
    except RuntimeError as error:
        if "singular" not in str(error):
            raise
        raise RepeatedEigenvalue.because(
            f"{name}: the bordered system of eigenvalue {w:.17g} is singular (another "
            "eigenvalue of the matrix equals it), so its eigenvector has no derivative"
        ) from None
    pivot = float(np.abs(lu.U.diagonal()).min())
    largest = float(np.abs(m.data).max())
    if pivot < np.finfo(np.float64).eps * largest:
        raise RepeatedEigenvalue.because(
            f"{name}: the bordered system of eigenvalue {w:.17g} is singular to working "
            f"precision (smallest LU pivot {pivot:.1e}): another eigenvalue of the matrix "
            "equals it, so its eigenvector has no derivative"
        )
    return lu.solve
