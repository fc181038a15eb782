"""``OperatorEigsh``: some eigenpairs of a symmetric operator that is never formed, given by
a bridged ``matvec(x, theta)``, by ARPACK through a ``LinearOperator``; the derivatives in
``theta`` come from ``matvec``'s own rules, the eigenvectors' from MINRES on the bordered
system."""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg

import jaxbridge as jb
from jaxbridge.internal import parse_signature

from .._shared._failure import MayFail, SolveFailure, require_finite
from ._eigen import EigenRules, arpack_failure, check_spectrum, ordered, start_vector

TOLERANCE = 1e-12
"""MINRES's relative residual for shift-invert."""

BORDERED_TOLERANCE = 1e-15
"""MINRES's relative residual for the bordered systems of the eigenvector derivatives, below
float64's epsilon: MINRES then stops only where its own estimate of the backward error
reaches rounding. Its test is relative to ``|M| |x|``, and near a repeated eigenvalue ``|x|``
grows as one over the gap, so a looser one stops early there. At ``1e-12`` (measured on the
linked chains of ``tests/test_sparse_operator_eigsh.py``) the gap check passed a twin not
returned ``8e-12`` times the largest ``|w|`` away (inverse iteration stopped growing near
``1 / (1e-12 |M|)``) and gave vector derivatives of ``1e9``, and reverse-mode derivatives at
relative gaps ``1e-9`` to ``1e-7`` were off by ``0.3`` to ``2e-4``; at this tolerance both modes
agree with dense ``eigh`` to the ``eps |a| / gap`` both carry, in the same time on the chain."""


class OperatorEigsh(EigenRules, MayFail):
    """``k`` eigenpairs ``(w, v)`` of a symmetric operator ``a(theta)`` known only by its
    product with vectors, as ``scipy.sparse.linalg.eigsh`` on a ``LinearOperator``.

    ``matvec`` is an adapter with signature ``"(n),(p)->(n)"``: ``matvec(x, theta) =
    a(theta) x``, linear and symmetric in ``x``; the host calls its ``forward`` directly
    (no dense matrix, no JAX). ``OperatorEigsh(matvec, k=4)(theta)`` returns ``w`` (k,)
    ascending and ``v`` (n, k) with orthonormal columns, signed as ``Eigsh``'s (largest
    entry of each column positive). ``n`` is the parameter ``n``, or ``matvec.n``.

    Derivatives in ``theta``, both modes: ``dw_i = v_iᵀ da v_i`` (Hellmann-Feynman), as
    ``matvec``'s own reverse-mode rule at ``x = v_i`` with cotangent ``v_i`` (``jax.vjp``
    of ``matvec`` in ``theta``; its forward-mode rule for ``jvp``); the eigenvectors' from
    the bordered system ``[[a - w_i I, v_i], [v_iᵀ, 0]]`` solved matrix-free by MINRES
    (to rounding: its relative residual ``1e-15``), whose rules are that solve again. So
    derivatives are of every order when ``matvec``'s rules are (rules written in JAX), first
    order when they run on the host. Repeated eigenvalues, the twin returned or not: as
    ``Eigsh`` (in both modes an error naming ``OperatorEigsh`` and the gap, or NaN with
    ``on_failure="nan"``), and MINRES not converging is an error too. The gap check costs
    two more MINRES solves per vector.

    Parameters:
        matvec: the operator, an adapter with signature ``"(n),(p)->(n)"``.
        k, which, sigma: as ``Eigsh``'s. With ``sigma``, ARPACK's shift-invert solves
            ``(a - sigma I) x = b`` by MINRES.
        on_failure: see ``MayFail``; fails where ``Eigsh`` does, and where MINRES does not
            converge.
        n: the operator's size; by default ``matvec.n``.
    """

    matvec: jb.Adapter
    k: int = 6
    which: str = "LM"
    sigma: float | None = None
    n: int | None = None

    signature = "(p)->(k),(n,k)"
    blas_threads = 1  # ARPACK's products with its basis woke OpenBLAS's threads (see Eigsh)
    values_name = "eigenvalues"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if not isinstance(self.matvec, jb.Adapter) or parse_signature(
            self.matvec.signature
        ) != parse_signature("(n),(p)->(n)"):
            raise ValueError(
                f"{owner}: parameter 'matvec' must be an adapter with signature "
                f"'(n),(p)->(n)' (matvec(x, theta) = a(theta) x); got {self.matvec!r:.80}."
            )
        n = self.n if self.n is not None else getattr(self.matvec, "n", None)
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 2:
            raise ValueError(
                f"{owner}: the operator's size must be an int n >= 2, given as parameter 'n' "
                f"or as matvec.n; got {n!r}."
            )
        n = int(n)
        object.__setattr__(self, "n", n)
        sigma = check_spectrum(owner, n, self.k, self.which, self.sigma)
        object.__setattr__(self, "sigma", sigma)

    @property
    def _size(self) -> int:
        assert self.n is not None  # set in __post_init__
        return self.n

    @functools.cached_property
    def _start(self) -> np.ndarray:
        return start_vector(self._size)

    def output_specs(self, theta):
        dtype = jb.result_dtype(theta)
        n, k = self._size, self.k
        return jax.ShapeDtypeStruct((k,), dtype), jax.ShapeDtypeStruct((n, k), dtype)

    def _operator(self, theta: np.ndarray, shift: float = 0.0):
        """``a(theta) - shift I`` as a ``LinearOperator`` that calls ``matvec.forward``."""
        forward, n = self.matvec.forward, self._size

        def apply(x):
            y = forward(np.asarray(x, np.float64).reshape(n), theta)
            y = y[0] if isinstance(y, tuple) else y
            return np.asarray(y, np.float64) - shift * x.reshape(n)

        return _Operator(n, apply)

    def forward(self, theta):
        n, k, dtype = self._size, self.k, jb.result_dtype(theta)
        try:
            require_finite("argument 'theta'", theta)
            a = self._operator(theta)
            inverse = None
            if self.sigma is not None:
                shifted = self._operator(theta, self.sigma)
                inverse = _Operator(
                    n, lambda b: _minres(shifted, b, "the shift-invert solve", TOLERANCE)
                )
            try:
                w, v = scipy.sparse.linalg.eigsh(
                    a, k=k, which=self.which, sigma=self.sigma, OPinv=inverse, v0=self._start
                )
            except scipy.sparse.linalg.ArpackNoConvergence as error:
                raise SolveFailure.because(f"ARPACK did not converge ({error})") from None
            except scipy.sparse.linalg.ArpackError as error:
                raise arpack_failure(error, "the operator", "'matvec' and 'theta'") from None
        except np.linalg.LinAlgError as error:
            return self.nan_on_failure(error, (k,), (n, k), dtype=dtype)
        w, v = ordered(w, v)
        return w.astype(dtype), v.astype(dtype)

    def _bordered_solver(self, theta, name: str):
        a = self._operator(np.asarray(theta, np.float64))
        n = self._size

        def solver(w, v, border):
            def apply(z):
                x, mu = z[:n], z[n]
                return np.append(a.matvec(x) - w * x + border * v * mu, border * (v @ x))

            bordered = _Operator(n + 1, apply)
            what = f"the bordered system of eigenvalue {w:.17g}"
            return lambda rhs: _minres(bordered, rhs, what, BORDERED_TOLERANCE)

        return solver

    def _columns(self, theta, x):
        """``matvec`` on each column of ``x`` (..., n, k), as a function of ``theta``."""
        rows = jnp.swapaxes(x, -1, -2)
        return lambda th: jnp.swapaxes(self.matvec(rows, th[..., None, :]), -1, -2)

    def _operator_tangent(self, theta, dtheta, x):
        shape = jnp.broadcast_shapes(theta.shape, dtheta.shape)  # a tangent may add a batch
        theta, dtheta = jnp.broadcast_to(theta, shape), jnp.broadcast_to(dtheta, shape)
        return jax.jvp(self._columns(theta, x), (theta,), (dtheta,))[1]

    def _operator_cotangent(self, theta, y, x):
        _, pull = jax.vjp(self._columns(theta, x), theta)
        return pull(y)[0]


class _Operator(scipy.sparse.linalg.LinearOperator):
    """A float64 ``n x n`` ``LinearOperator`` that applies ``apply`` to a vector."""

    def __init__(self, n: int, apply: Callable[[np.ndarray], np.ndarray]) -> None:
        super().__init__(np.dtype(np.float64), (n, n))
        self._apply = apply

    def _matvec(self, x):
        return self._apply(np.ravel(x))


_RTOL = "rtol" if "rtol" in inspect.signature(scipy.sparse.linalg.minres).parameters else "tol"


def _minres(operator, b: np.ndarray, what: str, rtol: float) -> np.ndarray:
    """``operator⁻¹ b`` by MINRES (symmetric, possibly indefinite) to relative residual
    ``rtol`` by MINRES's own test, or ``SolveFailure``."""
    size = float(np.linalg.norm(b))
    if size == 0:
        return np.zeros_like(b)
    tolerance: dict[str, Any] = {_RTOL: rtol}  # `tol` before SciPy 1.12
    x, info = scipy.sparse.linalg.minres(operator, b, maxiter=20 * operator.shape[0], **tolerance)
    # info 0: stopped by one of MINRES's own tests, a normwise backward error (the residual
    # relative to |a| |x|) or its estimate of |a| |a⁻¹| reaching rounding
    if info != 0 or not np.isfinite(x).all():
        residual = float(np.linalg.norm(operator.matvec(x) - b)) / size
        raise SolveFailure.because(
            f"OperatorEigsh: MINRES did not solve {what} in {20 * operator.shape[0]} "
            f"iterations (relative residual {residual:.1e}): the operator may be singular "
            "there (a repeated eigenvalue)"
        )
    return x
