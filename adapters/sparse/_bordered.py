"""``_BorderedSolve``: the system that gives eigenvector derivatives,
``[[a - w I, v], [vᵀ, 0]] [x; mu] = [top; bottom]`` for each eigenpair ``(w, v)`` of a
symmetric operator ``a`` given by parameters (a sparse matrix's values, an operator's
``theta``); the eigensolver that owns it solves it on the host (SuperLU, MINRES).

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

from .._failure import SolveFailure, nan_results

GAP = 1e-10
"""Eigenvalues closer than ``GAP`` times the largest ``|w|`` count as repeated: there the
eigenvectors, and so their derivatives, are not determined."""


class _BorderedSolve(jb.Adapter):
    """For each column ``i``: ``[[a - w_i I, v_i], [v_iᵀ, 0]] [x_i; mu_i] = [top_i; bottom_i]``
    with ``a`` the owner's operator at parameters ``data``. The owner provides
    ``_bordered_solver(data, name)`` (host: a function of ``(w_i, v_i, top_i, bottom_i)`` that
    returns ``(x_i, mu_i)`` or raises ``SolveFailure``), and in JAX ``_operator_tangent(data,
    ddata, x)`` (``da x``) and ``_operator_cotangent(data, y, x)`` (the derivative of
    ``Σ_i y_iᵀ a x_i`` in ``data``).

    A column whose right-hand side is zero is zero without a factorization (and without
    the gap check): a cotangent or tangent that never reaches the eigenvectors costs
    nothing and fails for no repeated eigenvalue.
    """

    owner: Any  # the eigensolver adapter: its operator, solver and on_failure
    name: str  # what errors name: the adapter the user called

    signature = "(m),(k),(n,k),(n,k),(k)->(n,k),(k)"

    def forward(self, data, w, v, top, bottom):
        name = self.name
        solve = None
        x, mu = np.zeros(top.shape), np.zeros(bottom.shape)
        scale = float(np.abs(w).max(initial=0.0))
        for i in range(w.shape[0]):
            if not (top[:, i].any() or bottom[i]):
                continue
            try:
                gaps = np.where(np.arange(w.shape[0]) == i, np.inf, np.abs(w - w[i]))
                j = int(np.argmin(gaps))
                if gaps[j] <= GAP * scale:
                    raise SolveFailure.because(
                        f"{name}: {self.owner.values_name} {i} and {j} ({w[i]:.17g} and "
                        f"{w[j]:.17g}) are "
                        f"{gaps[j]:.2g} apart, within {GAP:g} times the largest |w|: "
                        "repeated eigenvalues have no eigenvector derivative (the eigenvalues' "
                        "own derivatives are defined)"
                    )
                if solve is None:
                    solve = self.owner._bordered_solver(data, name)
                x[:, i], mu[i] = solve(float(w[i]), v[:, i], top[:, i], bottom[i])
            except np.linalg.LinAlgError as error:
                x[:, i], mu[i] = nan_results(self.owner.on_failure, error, x[:, i].shape, ())
        dtype = jb.result_dtype(data, w, v, top, bottom)
        return x.astype(dtype), mu.astype(dtype)

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


def sparse_bordered_solve(name, a, w, v, top, bottom) -> tuple[np.ndarray, float]:
    """One bordered solve with the sparse (CSC) ``a``, by SuperLU."""
    n = a.shape[0]
    shifted = a - w * scipy.sparse.eye_array(n, format="csc")
    border = scipy.sparse.csc_array(v[:, None])
    m = scipy.sparse.block_array([[shifted, border], [border.T, None]], format="csc")
    try:
        lu = scipy.sparse.linalg.splu(m)
    except RuntimeError as error:
        if "singular" not in str(error):
            raise
        raise SolveFailure.because(
            f"{name}: the bordered system of eigenvalue {w:.17g} is singular (another "
            "eigenvalue of the matrix equals it), so its eigenvector has no derivative"
        ) from None
    pivot = float(np.abs(lu.U.diagonal()).min())
    largest = float(np.abs(m.data).max())
    if pivot < np.finfo(np.float64).eps * largest:
        raise SolveFailure.because(
            f"{name}: the bordered system of eigenvalue {w:.17g} is singular to working "
            f"precision (smallest LU pivot {pivot:.1e}): another eigenvalue of the matrix "
            "equals it, so its eigenvector has no derivative"
        )
    solution = lu.solve(np.append(top, bottom).astype(np.float64))
    return solution[:n], float(solution[n])
