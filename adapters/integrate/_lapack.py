"""The integrators' linear solves: SciPy's BDF and Radau with their dense LU factorisations
and solves made straight to LAPACK, and the derivatives' systems through the steps.

Their Newton iterations go through ``scipy.linalg.lu_factor`` and ``lu_solve``, whose batch
and argument handling costs 10-15 µs a call against LAPACK's 1-2 µs: a fifth of a small
stiff solve, and of its adjoint (measured on Robertson's problem). These are the same LAPACK
routines on the same arrays, so the numbers are SciPy's to the bit, with SciPy's checks:
non-finite entries are its ``ValueError``, an exactly singular matrix its warning.
Sparse Jacobians keep SciPy's ``splu``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from .._shared._scipy_version import STEPS_FOLLOWED
from ._checks import failure

_STIFF = {"BDF": scipy.integrate.BDF, "Radau": scipy.integrate.Radau}


def solver_class(method: str) -> Any:
    """What to pass ``solve_ivp`` as its method: the class below for BDF and Radau, else the
    method's name."""
    return direct(_STIFF[method]) if method in _STIFF else method


@functools.cache
def direct(base: type) -> type:
    """``base`` (SciPy's ``BDF`` or ``Radau``, or a subclass) with direct LAPACK LU calls;
    any other class, or any class under a SciPy not ``STEPS_FOLLOWED``, as it is."""
    if not (STEPS_FOLLOWED and issubclass(base, tuple(_STIFF.values()))):
        return base

    class Direct(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if not scipy.sparse.issparse(self.J):
                self.lu, self.solve_lu = self._factor, _solve

        def _factor(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            self.nlu += 1
            return _factor(a)

    Direct.__name__ = Direct.__qualname__ = base.__name__
    return Direct


def _routine(name: str, a: np.ndarray) -> Any:
    return scipy.linalg.get_lapack_funcs((name,), (a,))[0]


_GETRF = {t: _routine("getrf", np.zeros(1, t)) for t in (np.float64, np.complex128)}
_GETRS = {t: _routine("getrs", np.zeros(1, t)) for t in (np.float64, np.complex128)}


def _finite(a: np.ndarray) -> None:
    if not np.isfinite(a).all():
        raise ValueError("array must not contain infs or NaNs")  # (SciPy's words)


def _factor(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lu_factor(a, overwrite_a=True)``, as the solvers call it."""
    getrf = _GETRF.get(a.dtype.type)
    if getrf is None or a.size == 0:
        return scipy.linalg.lu_factor(a, overwrite_a=True)
    _finite(a)
    lu, piv, info = getrf(a, overwrite_a=True)
    if info < 0:
        raise ValueError(f"illegal value in {-info}th argument of internal getrf (lu_factor)")
    if info > 0:
        warnings.warn(
            f"Diagonal number {info} is exactly zero. Singular matrix.",
            scipy.linalg.LinAlgWarning,
            stacklevel=2,
        )
    return lu, piv


def _solve(factors: tuple[np.ndarray, np.ndarray], b: np.ndarray) -> np.ndarray:
    """``lu_solve(factors, b, overwrite_b=True)``, as the solvers call it."""
    lu, piv = factors
    getrs = _GETRS.get(np.result_type(lu, b).type)
    if getrs is None or b.size == 0 or b.shape[0] != lu.shape[0]:
        return scipy.linalg.lu_solve(factors, b, overwrite_b=True)
    _finite(b)
    x, info = getrs(lu, piv, b, overwrite_b=True)
    if info != 0:
        raise ValueError(f"illegal value in {-info}th argument of internal gesv|posv")
    return x


def solved(matrix: Any, rhs: np.ndarray, what: str) -> np.ndarray:
    """``matrix⁻¹ rhs``, dense or sparse; a singular or non-finite ``matrix`` is a failure
    of ``what``."""
    if scipy.sparse.issparse(matrix):
        with warnings.catch_warnings():  # (singular: NaN, and the failure below says so)
            warnings.simplefilter("ignore", scipy.sparse.linalg.MatrixRankWarning)
            x = np.asarray(scipy.sparse.linalg.spsolve(scipy.sparse.csc_array(matrix), rhs))
    else:
        try:
            x = np.linalg.solve(matrix, rhs)
        except np.linalg.LinAlgError:
            x = np.full(np.shape(rhs), np.nan)
    if not np.isfinite(x).all() and np.isfinite(rhs).all():
        raise failure(f"{what} met a singular or non-finite system of equations")
    return x
