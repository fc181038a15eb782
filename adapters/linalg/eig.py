"""``Eig``: the eigenvalues and right eigenvectors of a general real matrix, by
``scipy.linalg.eig``, on every backend (JAX's ``jnp.linalg.eig`` runs on the CPU alone)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

import jaxbridge as jb

from .._shared._failure import MayFail, SolveFailure, require_finite

_REPEATED = 1e3 * np.finfo(np.float64).eps  # (relative to the largest |eigenvalue|)


class Eig(MayFail):
    """``(w.real, w.imag, v.real, v.imag) = Eig()(a)``: what ``scipy.linalg.eig(a)`` returns,
    as real parts (``eig`` below makes them complex).

    ``a`` is a real (n, n) matrix; leading axes are batch axes. The eigenvectors are SciPy's
    (LAPACK's ``geev``): columns of unit 2-norm whose largest entry is real.

    Derivatives (first order, on the host), the standard ones for a diagonalizable matrix with
    distinct eigenvalues, ``a = V diag(w) V⁻¹``: ``ẇ = diag(V⁻¹ ȧ V)`` and ``V̇ = V (F ∘ V⁻¹
    ȧ V)`` with ``F_ij = 1 / (w_j - w_i)``, then made to keep SciPy's normalization (unit
    norm, the largest entry real); the reverse mode is its transpose. At a repeated
    eigenvalue (two within ``1e3 eps`` of the largest's magnitude) the eigenvalues are not
    differentiable, and a derivative is refused naming the adapter (NaN with
    ``on_failure="nan"``); the values themselves are SciPy's either way.

    SciPy's eigenvectors are not continuous everywhere: at a diagonal (or otherwise
    structured) matrix LAPACK's real eigenvectors can flip sign under a perturbation. The
    derivative is that of the branch through the vectors returned.

    On a TPU with 64-bit mode on, XLA aborts the process compiling some operations on
    complex128 arrays (``jnp.abs`` measured, jax 0.10.2): there, work with these real parts
    (``eig``'s complex results are exact to about 1e-15 there, not bit for bit).

    Fails (see ``MayFail``) on a non-finite ``a``.
    """

    signature = "(n,n)->(n),(n),(n,n),(n,n)"
    # jaxbridge.testing draws dense matrices with eigenvalues apart: a drawn zero matrix has
    # one eigenvalue n times (no derivative), and at a diagonal one LAPACK's eigenvectors
    # flip sign under perturbations (SciPy's eig is not continuous there)
    domains = {"a": lambda raw: raw + _apart(raw.shape[-1])}

    def output_specs(self, a):
        dtype = jb.result_dtype(a)
        vector = jax.ShapeDtypeStruct(a.shape[:-1], dtype)
        matrix = jax.ShapeDtypeStruct(a.shape, dtype)
        return vector, vector, matrix, matrix

    def forward(self, a):
        dtype = jb.result_dtype(a)
        n = a.shape[-1]
        try:
            require_finite("matrix 'a'", a)
            found: Any = scipy.linalg.eig(np.asarray(a, np.float64))
            w, v = found
        except SolveFailure as error:
            w, v = self.nan_on_failure(error, (n,), (n, n))
        return tuple(np.asarray(p, dtype) for p in _real_parts(w, v))

    def jvp(self, res, tangents):
        (da,) = tangents
        factors = self._factors(res)
        if factors is None:
            return self._nans(res)
        w, v, vinv, f = factors
        x = vinv @ np.asarray(da, np.float64) @ v
        dw = np.diag(x)
        dv = _normalized(v, v @ (f * x))
        return _parts(res, dw, dv)

    def backward(self, res, g):
        factors = self._factors(res)
        if factors is None:
            return (np.full(res[0].shape, np.nan, res[0].dtype),)
        w, v, vinv, f = factors
        gw_re, gw_im, gv_re, gv_im = (
            np.zeros(o.shape) if c is None else np.asarray(c, np.float64)
            for c, o in zip(g, res[1:5])
        )
        gw = gw_re + 1j * gw_im
        gv = _normalized_transpose(v, gv_re + 1j * gv_im)
        inner = np.diag(gw) + np.conj(f) * (v.conj().T @ gv)
        return (np.real(vinv.conj().T @ inner @ v.conj().T).astype(res[0].dtype),)

    def _factors(self, res) -> tuple[np.ndarray, ...] | None:
        """``(w, V, V⁻¹, F)`` in complex128, or None (NaN requested) at a repeated
        eigenvalue, which is otherwise refused."""
        a, w_re, w_im, v_re, v_im = res[:5]
        w = np.asarray(w_re, np.float64) + 1j * np.asarray(w_im, np.float64)
        v = np.asarray(v_re, np.float64) + 1j * np.asarray(v_im, np.float64)
        gaps = w[None, :] - w[:, None]
        np.fill_diagonal(gaps, np.inf)
        scale = max(float(np.max(np.abs(w), initial=0.0)), np.finfo(np.float64).tiny)
        close = np.abs(gaps) <= _REPEATED * scale
        try:
            if close.any():
                i, j = np.argwhere(close)[0]
                raise SolveFailure.because(
                    f"eigenvalues {i} and {j} of 'a' are repeated ({w[i]:.6g} and {w[j]:.6g}): "
                    "there the eigenvalues and eigenvectors have no derivative"
                )
        except SolveFailure as error:
            self.nan_on_failure(error, (1,))  # (raises unless NaN is asked for)
            return None
        return w, v, np.linalg.inv(v), 1.0 / gaps

    def _nans(self, res) -> tuple[np.ndarray, ...]:
        return tuple(np.full(o.shape, np.nan, o.dtype) for o in res[1:5])


def _apart(n: int) -> np.ndarray:
    """A dense matrix with eigenvalues near 0, 2, 4, ...: the domain's offset."""
    k = np.arange(n)
    return np.diag(2.0 * k) + 0.25 * np.cos(np.add.outer(k, 2 * k) + 0.5)


def _normalized(v: np.ndarray, dv: np.ndarray) -> np.ndarray:
    """``dv`` made a tangent of SciPy's normalization of ``v``'s columns: unit norm
    (``Re(vᴴ dv) = 0``), then the largest entry kept real (a rotation ``i c v``)."""
    dv = dv - v * np.real(np.sum(v.conj() * dv, axis=0))
    k = _largest(v)
    cols = np.arange(v.shape[1])
    return dv - 1j * v * (np.imag(dv[k, cols]) / np.real(v[k, cols]))


def _normalized_transpose(v: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The transpose of ``_normalized`` (for the real pairing ``Re Σ conj(g) dv``)."""
    k = _largest(v)
    cols = np.arange(v.shape[1])
    g = g.copy()
    g[k, cols] += 1j * np.imag(np.sum(g.conj() * v, axis=0)) / np.real(v[k, cols])
    return g - v * np.real(np.sum(v.conj() * g, axis=0))


def _largest(v: np.ndarray) -> np.ndarray:
    """The row of each column's largest entry (the one LAPACK made real)."""
    return np.argmax(np.abs(v), axis=0)


def _real_parts(w: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, ...]:
    return np.real(w), np.imag(w), np.real(v), np.imag(v)


def _parts(res, dw: np.ndarray, dv: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(p, o.dtype) for p, o in zip(_real_parts(dw, dv), res[1:5]))


def eig(
    a: Any,
    b: Any = None,
    left: bool = False,
    right: bool = True,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    homogeneous_eigvals: bool = False,
) -> Any:
    """``scipy.linalg.eig(a)``: the eigenvalues ``w`` of a real square matrix, complex, and
    with ``right`` (the default) the right eigenvectors ``v`` as SciPy normalizes them:
    ``(w, v)``. Differentiable, on every backend, under ``jit`` and ``vmap`` (``Eig``).

    Not offered: the generalized problem (``b``), left eigenvectors and homogeneous
    eigenvalues; ``overwrite_*`` and ``check_finite`` change nothing (a non-finite ``a`` is
    refused).
    """
    if b is not None or left or homogeneous_eigvals:
        raise ValueError(
            "eig: the generalized problem (b), left eigenvectors and homogeneous_eigvals are "
            "not offered; only eig(a) and eig(a, right=False)."
        )
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.floating):  # (SciPy's eig of integers is floating)
        a = a.astype(jax.dtypes.canonicalize_dtype(np.float64))
    w_re, w_im, v_re, v_im = Eig()(a)
    w = jax.lax.complex(w_re, w_im)
    return (w, jax.lax.complex(v_re, v_im)) if right else w


def eigvals(
    a: Any,
    b: Any = None,
    overwrite_a: bool = False,
    check_finite: bool = True,
    homogeneous_eigvals: bool = False,
) -> jax.Array:
    """``scipy.linalg.eigvals(a)``: ``eig(a, right=False)``."""
    return eig(a, b, right=False, homogeneous_eigvals=homogeneous_eigvals)
