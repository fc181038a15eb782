"""``Minimize``: a local minimiser of ``objective(x, theta)`` by ``scipy.optimize.minimize``,
differentiable in ``theta`` by the implicit function theorem on ``∇ₓf = 0``."""

import dataclasses

import numpy as np

import jaxbridge as jb

from ._functions import HostFunction, check_user, objective_derivatives
from ._implicit import ImplicitSolver, finite_inputs, outcome
from ._minimizing import GRADIENT_FREE, run_minimize
from ._stationary import BoxSecondOrder, solve_box


class Minimize(ImplicitSolver):
    """A strict local minimiser of ``objective(x, theta)`` from ``x0``:
    ``x = Minimize(objective)(x0, theta)``.

    ``objective`` is a jaxbridge Adapter with signature ``"(n),(p)->()"``; SciPy calls its
    host ``forward`` in float64 and always gets the exact gradient ``∂f/∂x`` from its
    ``backward``. Second derivatives ``(∂²f/∂x², ∂²f/∂x∂θ)``, (n, n) and (n, p), come from
    an optional host method ``hessian(self, x, theta)``, or else from central differences of
    the exact gradient in each ``x_j`` with steps ``h``, ``h / 2``, ... from ``h = 7e-4 *
    max(1, |x_j|)``, extrapolated by Ridders' method while that helps (4 to 24 backward
    calls per ``x_j``, or for a ``vectorized`` objective one batched call per step size for
    all of them; about 1e-12 relative error on smooth objectives of any scale, 1e-13
    measured on a Rosenbrock function, which the gradient of the solution inherits times
    the Hessian's condition number). They serve the Newton-type methods, the refinement and
    the derivative rules.

    Parameters:
        objective: the Adapter ``f(x, θ)``.
        method: ``"L-BFGS-B"`` (the default), ``"BFGS"``, ``"CG"``, ``"Newton-CG"``,
            ``"trust-ncg"``, ``"trust-krylov"``, ``"trust-exact"`` (these four given the
            Hessian), or the gradient-free ``"Nelder-Mead"``, ``"Powell"``, ``"COBYLA"``,
            ``"COBYQA"`` (given values alone; their answer is refined as every method's is).
        tol, options: passed to ``scipy.optimize.minimize``; ``options`` a tuple of (name,
            value) pairs overriding the tight defaults (L-BFGS-B: ``gtol=1e-10``,
            ``ftol=1e-15``); a ``tol`` replaces the default tolerances it sets in SciPy.
        on_failure: see ``MayFail``; an ``OptimizeError`` where the answer fails the
            checks below.

    The answer is checked, not trusted: SciPy's point must have ``max|∇ₓf| <= 1e-4 *
    max(1, max|∇ₓf(x0)|)`` whatever SciPy reports; up to 4 Newton steps refine it to 1e-10
    of that scale, and the Hessian there must be positive definite (a strict minimum;
    reciprocal condition number at least 1e-12) and, where the minimiser is differentiated,
    settled: changing by at most 1e-2 of itself over the minimiser's own error (the Newton
    step from it), which a degenerate minimum's does not (that of ``(x - 2)⁴ - c x`` at ``c
    = 0``, whose minimiser has no derivative in ``c``; ``_implicit.SETTLED``). Otherwise an
    ``OptimizeError`` with SciPy's status and message. A call whose result is not
    differentiated checks a Hessian from one forward difference per ``x_j`` (about 1e-8
    relative) against thresholds a million times stricter, and computes the accurate one
    only where those leave a doubt: the same ``x``, and the same verdicts unless the
    differences are off by about 1e-6.
    L-BFGS-B (SciPy's own routine) and BFGS (SciPy's loop and line search) run without
    ``scipy.optimize.minimize``'s per-evaluation wrapper (the same iterates to the bit;
    SciPy 1.15 to 1.18). What the objective returned at SciPy's first point and its last
    two is remembered: the checks do not ask for those again.

    Derivatives by the implicit function theorem at the returned minimiser: ``θ̄ =
    -(∂²f/∂x∂θ)ᵀ H⁻¹ ḡ``, ``ẋ = -H⁻¹ (∂²f/∂x∂θ) θ̇``; exactly zero in ``x0``. Second order
    in every composition of modes (``jax.hessian``, ``jvp`` of ``grad``, ``jacrev(jacrev)``,
    ``jacfwd(jacfwd)``), not third: the rules are bridged calls (``_second_order``) whose own
    rules need third derivatives of ``f`` contracted with two directions, from central
    differences of the ``hessian`` hook along one (about 1e-12 relative), or without a hook
    from mixed second differences of the exact gradient ``(∂f/∂x, ∂f/∂θ)`` along two, each
    extrapolated by Ridders' method (about 1e-10 relative; a gradient too rough for them, or
    NaN there, is an ``OptimizeError``). A first derivative computes none of this.
    """

    objective: jb.Adapter
    _: dataclasses.KW_ONLY
    method: str = "L-BFGS-B"

    _methods = (
        "L-BFGS-B",
        "BFGS",
        "CG",
        "Newton-CG",
        "trust-ncg",
        "trust-krylov",
        "trust-exact",
    ) + GRADIENT_FREE

    def _check(self) -> None:
        check_user("Minimize", "objective", self.objective, "scalar")

    def _solve(self, x0, theta, *, derivatives):
        finite_inputs(x0=x0, theta=theta)
        f = HostFunction(self.objective, theta)
        result = run_minimize(f, x0, self.method, self.tol, self.options)
        verdict = outcome("minimize", self.method, result)
        x = np.asarray(result.x, np.float64)
        return solve_box(f, x, x0, theta.shape[-1], None, verdict, result.success, derivatives)

    def _second_order(self, q, z, flags, n):
        return BoxSecondOrder(*objective_derivatives(self.objective), z, q, flags, None)
