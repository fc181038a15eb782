"""The call to ``scipy.optimize.minimize`` shared by ``Minimize``, ``MinimizeBounded`` and
``MinimizeConstrained``: exact gradients for the methods that take them, Hessians for those
that use them, values alone for the gradient-free ones, tight default tolerances."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize

from ._bfgs import minimize_bfgs
from ._functions import HostFunction
from ._lbfgsb import minimize_lbfgsb

USES_HESSIAN = ("Newton-CG", "trust-ncg", "trust-krylov", "trust-exact", "trust-constr")

GRADIENT_FREE = ("Nelder-Mead", "Powell", "COBYLA", "COBYQA")
"""SciPy's methods that take values alone: their answer, refined by Newton steps with the
exact derivatives as every method's is, is as differentiable as the others'."""

# SciPy's defaults stop early (L-BFGS-B at a projected gradient of 1e-5): ask for the
# solution to near rounding level, which Newton refinement then finishes.
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "L-BFGS-B": {"gtol": 1e-10, "ftol": 1e-15},
    "BFGS": {"gtol": 1e-9},
    "CG": {"gtol": 1e-9},
    "Newton-CG": {"xtol": 1e-10},
    "trust-ncg": {"gtol": 1e-10},
    "trust-krylov": {"gtol": 1e-10},
    "trust-exact": {"gtol": 1e-10},  # at its default 1e-8 it reported success at 2e-5
    "TNC": {"gtol": 1e-10, "ftol": 0.0, "xtol": 0.0},
    "SLSQP": {"ftol": 1e-14},
    # the gradient-free methods to near rounding too (their defaults stop at 1e-4 to 1e-6)
    "Nelder-Mead": {"xatol": 1e-10, "fatol": 1e-15, "adaptive": True},
    "Powell": {"xtol": 1e-10, "ftol": 1e-15},
    "COBYLA": {"tol": 1e-10, "maxiter": 10_000},
    "COBYQA": {"final_tr_radius": 1e-10},
    # its barrier starts at 0.1 and left bounded answers 1e-5 inside the box
    "trust-constr": {
        "gtol": 1e-10,
        "xtol": 1e-12,
        "initial_barrier_parameter": 1e-6,
        "barrier_tol": 1e-12,  # slacks end near barrier / multiplier
    },
}


def run_minimize(
    f: HostFunction,
    x0: np.ndarray,
    method: str,
    tol: float | None,
    options: tuple,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
    constraints: Any = (),
) -> Any:
    given = {**defaults(method, tol), **dict(options)}
    box = None if bounds is None else scipy.optimize.Bounds(*bounds)  # pyright: ignore[reportArgumentType]
    if method in GRADIENT_FREE:
        return scipy.optimize.minimize(
            lambda x: float(f(x)[()]),
            x0,
            method=method,
            bounds=box,
            constraints=constraints,
            tol=tol,
            options=given,
        )
    hess = f.second_x if method in USES_HESSIAN else None
    # SciPy's algorithm without its per-evaluation wrapper, where that gives its result
    if method == "L-BFGS-B" and not constraints:
        result = minimize_lbfgsb(f.value_and_gradient, x0, bounds, tol, given)
        if result is not None:
            return result
    if method == "BFGS" and bounds is None and not constraints:
        result = minimize_bfgs(f.value_and_gradient, x0, tol, given)
        if result is not None:
            return result
    return scipy.optimize.minimize(
        f.value_and_gradient,
        x0,
        jac=True,
        hess=hess,
        method=method,
        bounds=box,
        constraints=constraints,
        tol=tol,
        options=given,
    )


def defaults(method: str, tol: float | None) -> dict[str, Any]:
    """Our default options for ``method``, less the tolerances that SciPy sets from ``tol``
    when one is given (it only fills in options that are not set)."""
    given = DEFAULT_OPTIONS.get(method, {})
    if tol is None:
        return given
    return {k: v for k, v in given.items() if k not in _FROM_TOL}


# the options SciPy's ``tol`` sets
_FROM_TOL = ("gtol", "ftol", "xtol", "barrier_tol", "xatol", "fatol", "tol", "final_tr_radius")
