"""``MinimizeBounded``: a local minimiser of ``objective(x, theta)`` in the box
``lower <= x <= upper``, differentiable in ``theta`` and in the bounds."""

import dataclasses

import numpy as np

import jaxbridge as jb

from ._functions import HostFunction, check_user, objective_derivatives
from ._implicit import ImplicitSolver, failure, finite_inputs, outcome
from ._minimizing import GRADIENT_FREE, run_minimize
from ._stationary import BoxSecondOrder, solve_box


def _lower(raw: np.ndarray) -> np.ndarray:
    """Drawn lower bounds for ``jaxbridge.testing``: in [-1.75, -1.25]."""
    return -1.5 + raw / 4


def _upper(raw: np.ndarray) -> np.ndarray:
    """Drawn upper bounds for ``jaxbridge.testing``: in [1.25, 1.75]."""
    return 1.5 + raw / 4


class MinimizeBounded(ImplicitSolver):
    """A strict local minimiser of ``objective(x, theta)`` subject to ``lower <= x <= upper``:
    ``x = MinimizeBounded(objective)(x0, theta, lower, upper)``.

    ``objective`` is as for ``Minimize`` (signature ``"(n),(p)->()"``, exact gradients from its
    ``backward``, second derivatives from its optional ``hessian(self, x, theta)`` or from
    differences of the gradient extrapolated by Ridders' method, about 1e-12 relative, one-sided
    at a bound: no step leaves the box, unless it has no room, ``lower_j = upper_j``). ``lower``
    and ``upper`` are (n,) arrays, ``-inf``/``inf`` for no bound, and arguments like any other:
    the solution is differentiable in them.

    Parameters:
        objective: the Adapter ``f(x, θ)``.
        method: ``"L-BFGS-B"`` (the default), ``"TNC"``, ``"SLSQP"``, ``"trust-constr"``
            (given the Hessian), or the gradient-free ``"Nelder-Mead"``, ``"Powell"``,
            ``"COBYLA"``, ``"COBYQA"``; tight default tolerances, overridden by ``options``.
        tol, options: passed to ``scipy.optimize.minimize``; ``options`` a tuple of (name,
            value) pairs; a ``tol`` replaces the default tolerances it sets in SciPy.
        on_failure: see ``MayFail``; an ``OptimizeError`` where the answer fails the
            checks below.

    The active set is read from SciPy's answer: a variable within ``1e-4 * (1 + |x_i|)`` of a
    bound with the gradient pushing outwards (``∂f/∂x_i`` beyond ``1.5e-8`` times the terms it
    sums, ``|∂f/∂x_i| + |∂²f/∂x_i∂x| |x| + |∂²f/∂x_i∂θ| |θ|`` there: each on its own scale,
    whatever the others') is held there. Newton steps refine the free variables to ``|∂f/∂x| <=
    1e-10`` times the scale ``max(1, max|∇ₓf(x0)|)`` (SciPy's answer must already be within
    ``1e-4``); a held variable whose gradient then turns inwards is released, a free one that
    left the box is held, and the refinement repeats (at most 3 rounds). At the end a variable
    at a bound with a gradient below that ``1.5e-8`` times its terms is degenerate (a
    kink of the solution map) and fails, and the Hessian on the free variables must be positive
    definite (and, where the solution is differentiated, settled as ``Minimize``'s).
    Otherwise an ``OptimizeError`` with SciPy's status and message. ``lower > upper``
    or NaN inputs fail the same way. A call whose result is not differentiated checks
    definiteness as ``Minimize`` does.

    Derivatives by the implicit function theorem on the active set: held variables follow
    their bound (derivative 1 in it, 0 in ``theta``), free ones solve ``H_FF ẋ_F = -(∂²f/
    ∂x_F∂θ θ̇ + H_FA ẋ_A)``; the derivative in ``x0`` and in inactive bounds is exactly zero.
    Second order as ``Minimize``'s (in ``theta``, ``lower`` and ``upper``, on the active set,
    which is constant near a non-degenerate solution): held variables' second derivatives
    are zero, free ones' differences stay inside the box.

    For ``jaxbridge.testing``, bounds are drawn with ``lower`` in [-1.75, -1.25] and
    ``upper`` in [1.25, 1.75]; ``x0`` and ``theta`` from the objective's ``domains`` (which
    should keep the solution away from kinks, where a bound becomes weakly active).
    """

    objective: jb.Adapter
    _: dataclasses.KW_ONLY
    method: str = "L-BFGS-B"

    signature = "(n),(p),(n),(n)->(n)"
    _methods = ("L-BFGS-B", "TNC", "SLSQP", "trust-constr") + GRADIENT_FREE

    @property
    def domains(self):
        return {**super().domains, "lower": _lower, "upper": _upper}

    def _check(self) -> None:
        check_user("MinimizeBounded", "objective", self.objective, "scalar")

    def _sizes(self, x0, theta):
        return x0.shape[-1], theta.shape[-1] + 2 * x0.shape[-1]

    def forward(self, x0, theta, lower, upper, *, residuals=True):
        return self._forward(x0, theta, lower, upper, residuals=residuals)

    def _solve(self, x0, theta, lower, upper, *, derivatives):
        finite_inputs(x0=x0, theta=theta, lower=lower, upper=upper)
        if (lower > upper).any():
            i = int(np.flatnonzero(lower > upper)[0])
            raise failure(f"the box is empty: lower[{i}] = {lower[i]} > upper[{i}] = {upper[i]}")
        f = HostFunction(self.objective, theta, box=(lower, upper))
        start = np.clip(x0, lower, upper)  # not every method starts inside on its own
        bounds = (lower, upper)
        result = run_minimize(f, start, self.method, self.tol, self.options, bounds)
        verdict = outcome("minimize", self.method, result)
        x = np.asarray(result.x, np.float64)
        p = theta.shape[-1]
        return solve_box(f, x, start, p, bounds, verdict, result.success, derivatives)

    def _second_order(self, q, z, flags, n):
        n = z.shape[-1]
        p = q.shape[-1] - 2 * n
        bounds = (q[p : p + n], q[p + n :])
        derivatives = objective_derivatives(self.objective)
        return BoxSecondOrder(*derivatives, z, q[:p], flags, bounds)
