"""What the eigensolver adapters (``Eigsh``, ``OperatorEigsh``, and ``Svds`` through
``Eigsh``) share: the checks of ``k``, ``which`` and ``sigma``, ARPACK's starting vector and
its errors in words, the order and signs of the eigenpairs, and the rules of eigenpairs of a
symmetric operator."""

from __future__ import annotations

import numbers
import re

import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg

from .._shared._failure import Failure, SolveFailure
from .._shared._parameters import check_choice
from ._bordered import _BorderedSolve

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
    dw = jnp.sum(v * product, axis=-2)
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
    y, _ = _BorderedSolve(owner, name)(params, w, v, gv, jnp.zeros_like(gw))
    return owner._operator_cotangent(params, gw[..., None, :] * v - y, v)
