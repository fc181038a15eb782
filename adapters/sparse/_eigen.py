"""What the eigensolver adapters (``Eigsh``, ``OperatorEigsh``, and ``Svds`` through
``Eigsh``) share: the checks of ``k``, ``which`` and ``sigma``, ARPACK's starting vector and
its errors in words, the order and signs of the eigenpairs, and the rules of eigenpairs of a
symmetric operator."""

from __future__ import annotations

import numbers
import re
from typing import Any

import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._failure import Failure, SolveFailure, nan_results
from .._shared._parameters import check_choice
from ._bordered import GAP, RepeatedEigenvalue, _BorderedSolve

WHICH = ("LM", "SM", "LA", "SA")


def check_spectrum(owner: str, n: int, k: int, which: str, sigma: float | None) -> float | None:
    """Refuse a ``which``, ``k`` or ``sigma`` that ARPACK cannot take for an operator of size
    ``n``, naming the adapter ``owner`` and the parameter; returns ``sigma`` as a float."""
    check_choice(owner, "which", which, WHICH)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ValueError(f"{owner}: parameter 'k' must be an int; got {k!r}.")
    if not 1 <= k < n:
        raise ValueError(f"{owner}: parameter 'k' must satisfy 1 <= k < n = {n} (ARPACK); got {k}.")
    if sigma is None:
        return None
    if not isinstance(sigma, numbers.Real) or not np.isfinite(sigma):
        raise ValueError(
            f"{owner}: parameter 'sigma' must be a finite real number or None; got {sigma!r}."
        )
    return float(sigma)


def start_vector(n: int) -> np.ndarray:
    """ARPACK's starting vector: fixed, so results repeat exactly; random, so it is
    orthogonal to no eigenvector of a structured matrix (as a constant one can be)."""
    return np.random.default_rng(0).uniform(-1.0, 1.0, n)


def arpack_failure(
    error: scipy.sparse.linalg.ArpackError, what: str, argument: str, values: str = "eigenvalues"
) -> Failure:
    """The ``SolveFailure`` for an ARPACK ``error`` other than non-convergence, in words.

    Error -9, "Starting vector is zero", is ARPACK's report that ``what`` (e.g. "the matrix")
    maps its start vector, and every vector it tried next, to zero (a zero matrix, or products
    that underflow). Its ``values`` are then all 0: none is singled out, so no eigenvector (and
    no derivative) is defined, and inventing one would hide a mistake in ``argument``.
    """
    # ArpackError keeps its code only in the message: "ARPACK error -9: ..."
    code = re.match(r"ARPACK error (-?\d+)", str(error))
    if code is not None and int(code.group(1)) == -9:
        return SolveFailure.because(
            f"{what} is zero, or its product with ARPACK's start vector vanished (ARPACK error "
            f"-9, 'Starting vector is zero'): ARPACK cannot run on it, and if it is zero all its "
            f"{values} are 0, with no vectors singled out; check {argument}"
        )
    return SolveFailure.because(f"ARPACK failed ({error})")


def ordered(w: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs in ascending order, each vector signed so that its entry of largest
    magnitude (the first, if several tie) is positive."""
    order = np.argsort(w)
    w, v = w[order], v[:, order]
    largest = np.argmax(np.abs(v), axis=0)
    return w, v * np.where(v[largest, np.arange(v.shape[1])] < 0, -1.0, 1.0)


class EigenRules:
    """The rules of an eigensolver adapter of one parameter argument, returning ``(w, v)``:
    ``eigen_tangents`` and ``eigen_cotangent``, with errors naming the adapter's class. The
    adapter provides what ``_BorderedSolve`` asks of its owner."""

    def pushforward(self, res, tangents):
        params, w, v = res
        (dparams,) = tangents
        if dparams is None:
            return None
        return eigen_tangents(self, type(self).__name__, params, w, v, dparams)

    def pullback(self, res, g):
        params, w, v = res
        return (eigen_cotangent(self, type(self).__name__, params, w, v, g),)


def eigen_tangents(owner, name: str, params, w, v, dparams):
    """The tangents ``(dw, dv)`` of eigenpairs of the owner's symmetric operator ``a``:
    ``dw_i = v_iᵀ da v_i`` (Hellmann-Feynman), and ``dv_i`` from ``(a - w_i I) dv_i =
    -(da - dw_i I) v_i``, ``v_iᵀ dv_i = 0`` (the bordered solve)."""
    product = owner._operator_tangent(params, dparams, v)
    dw = _ValueTangents(owner, name)(w, jnp.swapaxes(v, -1, -2) @ product)
    top = dw[..., None, :] * v - product
    # the same solve, so the same refusal, as the reverse-mode rule: a repeated eigenvalue
    # raises under the owner's on_failure="raise" (NaN only where it asks for NaN)
    dv, _ = _BorderedSolve(owner, name)(params, w, v, top, jnp.zeros_like(dw))
    return dw, dv


def eigen_cotangent(owner, name: str, params, w, v, g):
    """The cotangent of the parameters from ``(gw, gv)``: ``Σ_i gw_i v_iᵀ da v_i`` and
    ``<gv, dv> = -<y, da v>`` with ``[y; .]`` the (symmetric) bordered solve of ``[gv; 0]``."""
    gw, gv = g
    if params.shape[-1] == 0:
        # no parameters (a pattern with no entries, an operator of no theta): the cotangent
        # is empty, and the vectors' solve, which may refuse (a zero matrix's repeated
        # eigenvalues), is not needed, as forward mode's empty tangent needs none
        return jnp.zeros(params.shape, jnp.result_type(params, gw))
    gw = _ValueCotangents(owner, name)(w, gw)
    y, _ = _BorderedSolve(owner, name)(params, w, v, gv, jnp.zeros_like(gw))
    return owner._operator_cotangent(params, gw[..., None, :] * v - y, v)


_SPLIT = 1e-8
"""Relative to the largest entry of ``Vᵀ da V`` (of a cotangent): how far the eigenvalues of
repeated eigenvalues' block may be from its diagonal (their cotangents from one another)."""


def _repeated(w: np.ndarray) -> list[np.ndarray]:
    """The groups (two or more) of indices of ``w`` within ``GAP`` times the largest ``|w|``
    of each other, chained."""
    scale = float(np.abs(w).max(initial=0.0)) or 1.0
    order = np.argsort(w)
    breaks = np.flatnonzero(np.diff(w[order]) > GAP * scale) + 1
    return [group for group in np.split(order, breaks) if len(group) > 1]


def _split_message(name: str, values: str, w: np.ndarray, group: np.ndarray, why: str) -> str:
    i, j = int(group[0]), int(group[1])
    return (
        f"{name}: {values} {i} and {j} ({w[i]:.17g} and {w[j]:.17g}) are {abs(w[i] - w[j]):.2g} "
        f"apart, within {GAP:g} times the largest |w|, {why}; their sum's derivative, or a "
        f"function's of them all alike, is defined"
    )


_TANGENT = (
    "and this tangent splits them: each one's tangent is not defined there (they move by the "
    "eigenvalues of their block of Vᵀ da V, which ARPACK's basis of their eigenspace does not "
    "diagonalize)"
)
_COTANGENT = (
    "and their cotangents differ: each one's gradient is not defined there (their "
    "eigenvectors are not determined)"
)


class _ValueTangents(jb.Adapter):
    """``dw_i = (Vᵀ da V)_ii`` (Hellmann-Feynman), from the (k, k) block of the tangent
    ``da`` on the returned eigenvectors, checked on the host: for repeated eigenvalues
    (within ``GAP``) the diagonal is their tangent only where ARPACK's basis of their
    eigenspace diagonalizes their block (its eigenvalues, where they move from either side,
    are its diagonal). Elsewhere the diagonal is the arbitrary basis's, not a derivative:
    refused naming the owner, the same eagerly and under ``jit`` (where the eigenvectors'
    refusal is dropped with their unused tangents), or NaN for those eigenvalues with the
    owner's ``on_failure="nan"``."""

    owner: Any
    name: str

    signature = "(k),(k,k)->(k)"

    def forward(self, w, block):
        dw = np.diagonal(block).astype(jb.result_dtype(w, block))
        size = float(np.abs(block).max(initial=0.0))
        for group in _repeated(w):
            part = block[np.ix_(group, group)]
            # their tangents are the eigenvalues of their block (Rellich): the diagonal only
            # where the returned basis diagonalizes it (near twins that do not couple, or a
            # block that is a multiple of the identity)
            moves = np.linalg.eigvalsh((part + part.T) / 2)
            if np.abs(moves - np.sort(np.diagonal(part))).max() > _SPLIT * size:
                error = RepeatedEigenvalue.because(
                    _split_message(self.name, self.owner.values_name, w, group, _TANGENT)
                )
                dw[group] = nan_results(self.owner.on_failure, error, (len(group),))
        return dw

    def pushforward(self, res, tangents):
        _, dblock = tangents
        return None if dblock is None else jnp.diagonal(dblock, axis1=-2, axis2=-1)

    def pullback(self, res, g):
        block = res[1]
        return None, g[..., :, None] * jnp.eye(block.shape[-1], dtype=g.dtype)


class _ValueCotangents(jb.Adapter):
    """The eigenvalues' cotangent ``gw``, checked on the host: on repeated eigenvalues it
    must be the same for each (a function of them all alike: their sum, a trace), else the
    gradient would be ARPACK's arbitrary basis's: refused naming the owner, or NaN for
    those entries with ``on_failure="nan"``."""

    owner: Any
    name: str

    signature = "(k),(k)->(k)"

    def forward(self, w, gw):
        out = np.array(gw, dtype=jb.result_dtype(w, gw))
        size = float(np.abs(gw).max(initial=0.0))
        for group in _repeated(w):
            if np.abs(gw[group] - gw[group[0]]).max() > _SPLIT * size:
                error = RepeatedEigenvalue.because(
                    _split_message(self.name, self.owner.values_name, w, group, _COTANGENT)
                )
                out[group] = nan_results(self.owner.on_failure, error, (len(group),))
        return out

    def pushforward(self, res, tangents):
        return tangents[1]

    def pullback(self, res, g):
        return None, g
