"""BFGS as ``scipy.optimize.minimize`` runs it, with SciPy's own line search, but without
its per-evaluation wrapper: the same iterates, evaluations and result to the bit.

As for L-BFGS-B (``_lbfgsb``), on small problems SciPy's wrapper around each of the user's
calls (``ScalarFunction`` and ``MemoizeJac``: copies, comparisons, bookkeeping) costs more
than the algorithm. The loop below is SciPy's ``_minimize_bfgs``, whose code is the same in
every version the drivers follow (``_scipy_loops.TESTED``); its value and gradient come
from one call per new point, as SciPy's wrappers make them. Host code only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize

from ._scipy_loops import Evaluations, followed

_OPTIONS = ("gtol", "norm", "maxiter", "xrtol", "c1", "c2")
"""The options handled here; any other goes to SciPy (its warnings and errors included)."""


def _routines() -> Any:
    if not followed():
        return None
    from scipy.optimize import _optimize  # pyright: ignore[reportAttributeAccessIssue]

    return (
        _optimize._line_search_wolfe12,
        _optimize._LineSearchError,
        _optimize._status_message,
        _optimize.vecnorm,
    )


_ROUTINES = _routines()


def minimize_bfgs(
    fun_and_grad: Any, x0: np.ndarray, tol: float | None, options: dict[str, Any]
) -> scipy.optimize.OptimizeResult | None:
    """``scipy.optimize.minimize(fun_and_grad, x0, jac=True, method="BFGS", tol=tol,
    options=options)``, or None where only SciPy's own call is exact: another SciPy
    version, an option not in ``_OPTIONS``, or ``c1`` and ``c2`` that SciPy refuses.

    ``fun_and_grad(x)`` returns a float and a float64 array of shape (n,), as SciPy's
    wrapper would hand them on (``HostFunction.value_and_gradient``)."""
    if _ROUTINES is None or not set(options) <= set(_OPTIONS):
        return None
    line_search, LineSearchError, messages, vecnorm = _ROUTINES
    if tol is not None:  # as minimize: a tol fills in gtol where it is not given
        options = {"gtol": tol, **options}
    gtol, norm = options.get("gtol", 1e-5), options.get("norm", np.inf)
    xrtol, c1, c2 = options.get("xrtol", 0), options.get("c1", 1e-4), options.get("c2", 0.9)
    if not 0 < c1 < c2 < 1:
        return None
    x0 = np.asarray(x0, np.float64).flatten()
    maxiter = options.get("maxiter")
    if maxiter is None:
        maxiter = len(x0) * 200

    # from here on SciPy's _minimize_bfgs, line for line
    sf = Evaluations(fun_and_grad, x0)
    f, myfprime = sf.value, sf.gradient
    old_fval = f(x0)
    gfk = myfprime(x0)
    k = 0
    N = len(x0)
    I = np.eye(N, dtype=int)  # noqa: E741 (SciPy's names)
    Hk = I
    old_old_fval = old_fval + np.linalg.norm(gfk) / 2  # an initial step of about 1
    xk = x0
    warnflag = 0
    gnorm = vecnorm(gfk, ord=norm)
    while (gnorm > gtol) and (k < maxiter):
        pk = -np.dot(Hk, gfk)
        try:
            alpha_k, fc, gc, old_fval, old_old_fval, gfkp1 = line_search(
                f, myfprime, xk, pk, gfk, old_fval, old_old_fval, amin=1e-100, amax=1e100,
                c1=c1, c2=c2,
            )  # fmt: skip
        except LineSearchError:
            warnflag = 2
            break
        sk = alpha_k * pk
        xkp1 = xk + sk
        xk = xkp1
        if gfkp1 is None:
            gfkp1 = myfprime(xkp1)
        yk = gfkp1 - gfk
        gfk = gfkp1
        k += 1
        gnorm = vecnorm(gfk, ord=norm)
        if gnorm <= gtol:
            break
        if alpha_k * vecnorm(pk) <= xrtol * (xrtol + vecnorm(xk)):
            break
        if not np.isfinite(old_fval):
            warnflag = 2
            break
        rhok_inv = np.dot(yk, sk)
        rhok = 1000.0 if rhok_inv == 0.0 else 1.0 / rhok_inv
        A1 = I - sk[:, np.newaxis] * yk[np.newaxis, :] * rhok
        A2 = I - yk[:, np.newaxis] * sk[np.newaxis, :] * rhok
        Hk = np.dot(A1, np.dot(Hk, A2)) + (rhok * sk[:, np.newaxis] * sk[np.newaxis, :])

    fval = old_fval
    if warnflag == 2:
        msg = messages["pr_loss"]
    elif k >= maxiter:
        warnflag = 1
        msg = messages["maxiter"]
    elif np.isnan(gnorm) or np.isnan(fval) or np.isnan(xk).any():
        warnflag = 3
        msg = messages["nan"]
    else:
        msg = messages["success"]
    return scipy.optimize.OptimizeResult(
        fun=fval, jac=gfk, hess_inv=Hk, nfev=sf.nfev, njev=sf.ngev, status=warnflag,
        success=(warnflag == 0), message=msg, x=xk, nit=k,
    )  # fmt: skip
