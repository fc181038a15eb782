"""L-BFGS-B by SciPy's own routine, driven here as ``scipy.optimize.minimize`` drives it but
without its per-evaluation wrapper: the same iterates, evaluations and result to the bit.

On small problems that wrapper (copies, comparisons and bookkeeping around each of the
user's calls), not the algorithm, is most of a solve: the loop below takes about a third
of the time. Host code only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize

from ._scipy_loops import Evaluations, followed

_OPTIONS = ("maxcor", "ftol", "gtol", "maxfun", "maxiter", "maxls")
"""The options handled here; any other goes to SciPy (its warnings and errors included)."""


def _setulb() -> Any:
    """SciPy's ``setulb`` (the C port of L-BFGS-B, new in 1.15) and what its loop needs, in a
    SciPy version the driver follows."""
    if not followed():
        return None
    from scipy.optimize import _lbfgsb, _lbfgsb_py  # pyright: ignore[reportAttributeAccessIssue]

    # 1.18 passes 64-bit integers to a build with 64-bit LAPACK indices, as SciPy's loop does
    integers = np.int64 if getattr(_lbfgsb_py, "HAS_ILP64", False) else np.int32
    return _lbfgsb.setulb, _lbfgsb_py.status_messages, _lbfgsb_py.task_messages, integers


_ROUTINE = _setulb()


def minimize_lbfgsb(
    fun_and_grad: Any,
    x0: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray] | None,
    tol: float | None,
    options: dict[str, Any],
) -> scipy.optimize.OptimizeResult | None:
    """``scipy.optimize.minimize(fun_and_grad, x0, jac=True, method="L-BFGS-B", bounds=...,
    tol=tol, options=options)``, or None where only SciPy's own call is exact: another
    SciPy version, an option not in ``_OPTIONS``, a nonpositive ``maxls``, or every
    variable fixed by the bounds (SciPy then returns without iterating).

    ``fun_and_grad(x)`` returns a float and a float64 array of shape (n,), as SciPy's
    wrapper would hand them on (``HostFunction.value_and_gradient``)."""
    if _ROUTINE is None or not set(options) <= set(_OPTIONS):
        return None
    setulb, status_messages, task_messages, integers = _ROUTINE
    if tol is not None:  # as minimize: a tol fills in the tolerances not given
        options = {"ftol": tol, "gtol": tol, **options}
    m = options.get("maxcor", 10)
    factr = options.get("ftol", 2.2204460492503131e-09) / np.finfo(float).eps
    pgtol = options.get("gtol", 1e-5)
    maxfun, maxiter = options.get("maxfun", 15000), options.get("maxiter", 15000)
    maxls = options.get("maxls", 20)
    if not maxls > 0:
        return None
    x = np.array(x0, np.float64).ravel()
    n = x.size
    nbd = np.zeros(n, integers)
    lower, upper = np.zeros(n), np.zeros(n)
    if bounds is not None:
        lo, hi = (np.broadcast_to(np.asarray(b, np.float64), (n,)) for b in bounds)
        if np.all(lo == hi):
            return None
        x = np.clip(x, lo, hi)
        finite_lo, finite_hi = ~np.isinf(lo), ~np.isinf(hi)
        lower[finite_lo], upper[finite_hi] = lo[finite_lo], hi[finite_hi]
        # SciPy's codes: 0 unbounded, 1 lower only, 2 both, 3 upper only
        nbd[:] = np.where(finite_lo, np.where(finite_hi, 2, 1), np.where(finite_hi, 3, 0))

    # SciPy evaluates at the start when it sets up, and again only at a new point
    sf = Evaluations(fun_and_grad, x)
    f, g = np.array(0.0), np.zeros(n)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, integers)
    task, ln_task = np.zeros(2, integers), np.zeros(2, integers)
    lsave, isave, dsave = np.zeros(4, integers), np.zeros(44, integers), np.zeros(29)
    iterations = 0
    while True:
        g = g.astype(np.float64)
        setulb(m, x, lower, upper, nbd, f, g, factr, pgtol, wa, iwa, task, lsave, isave, dsave,
               maxls, ln_task)  # fmt: skip
        if task[0] == 3:  # f and g wanted at x
            f, g = sf.value(x), sf.gradient(x)
        elif task[0] == 1:  # a new iteration
            iterations += 1
            if iterations >= maxiter:
                task[0], task[1] = 5, 504
            elif sf.nfev > maxfun:
                task[0], task[1] = 5, 502
        else:
            break
    if task[0] == 4:
        status = 0
    elif sf.nfev > maxfun or iterations >= maxiter:
        status = 1
    else:
        status = 2
    message = status_messages[task[0]] + ": " + task_messages[task[1]]
    return scipy.optimize.OptimizeResult(
        x=x, fun=f, jac=g, nfev=sf.nfev, njev=sf.ngev, nit=iterations, status=status,
        message=message, success=status == 0,
    )  # fmt: skip
