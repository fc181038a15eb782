"""``LeastSquares``: a local minimiser of ``½|residual(x, theta)|²`` by
``scipy.optimize.least_squares``, differentiable in ``theta`` by the implicit function
theorem on ``Jᵀr = 0``."""

import dataclasses

import numpy as np
import scipy.optimize

import jaxbridge as jb

from ._functions import HostFunction, check_user, sum_of_squares_gradient
from ._implicit import ImplicitSolver, finite_inputs, outcome
from ._stationary import BoxSecondOrder, solve_box

_REFUSED = ("loss", "f_scale", "bounds", "jac", "args", "kwargs", "ftol", "xtol", "gtol")


class LeastSquares(ImplicitSolver):
    """A strict local minimiser of ``½ |r(x, theta)|²`` from ``x0``:
    ``x = LeastSquares(residual)(x0, theta)``.

    ``residual`` is a jaxbridge Adapter ``"(n),(p)->(m)"`` (declare ``output_specs`` when
    ``m`` is not ``n``); SciPy calls its host ``forward`` in float64 and gets the exact
    Jacobian ``∂r/∂x``, from an optional host method ``jacobian(self, x, theta)`` →
    ``(∂r/∂x, ∂r/∂θ)`` or else from ``backward`` with each unit cotangent. The derivative
    rules need the Hessian of ``½|r|²``, ``JᵀJ + Σ rᵢ ∇²rᵢ``, and its mixed part ``Jᵀ R_θ +
    Σ rᵢ ∂²rᵢ/∂x∂θ``: the second derivatives of ``r`` come from an optional
    ``hessian(self, x, theta)`` → ``(m, n, n), (m, n, p)``, or else the sums from central
    differences of the exact ``Jᵀr`` and ``R_θᵀr`` at fixed ``r`` (one ``backward`` call
    with cotangent ``r`` each) extrapolated by Ridders' method (4 to 24 calls per ``x_j``,
    or for a ``vectorized`` residual one batched call per step size for all of them; about
    1e-12 relative on smooth functions of any scale, exactly zero for a residual linear in
    ``x``).

    Parameters:
        residual: the Adapter ``r(x, θ)``.
        method: ``"trf"`` (the default), ``"dogbox"`` or ``"lm"`` (which needs ``m >= n``).
        tol: SciPy's ``ftol``, ``xtol`` and ``gtol`` together; default 1e-12.
        options: other keyword arguments of ``scipy.optimize.least_squares`` as (name, value)
            pairs, e.g. ``(("max_nfev", 50),)``; not ``loss`` (the rules assume the plain
            sum of squares) nor ``bounds``.
        on_failure: see ``MayFail``; an ``OptimizeError`` where the answer fails the
            checks below.

    The answer is checked, not trusted: SciPy's point must have ``max|Jᵀr| <= 1e-4 *
    max(1, max|Jᵀr(x0)|)``, Newton steps refine it to 1e-10 of that scale, and the Hessian
    of ``½|r|²`` there must be positive definite (``r`` determines ``x`` locally) and, where
    the solution is differentiated, settled as ``Minimize``'s.
    Otherwise an ``OptimizeError`` with SciPy's status and message. A call whose result is
    not differentiated checks definiteness as ``Minimize`` does, and never forms ``∂r/∂θ``.

    Derivatives by the implicit function theorem on ``Jᵀr = 0``; for a linear model ``r =
    X β - y`` they are ``∂β/∂y = pinv(X)``. Exactly zero in ``x0``. Second order in every
    composition of modes (``jax.hessian``, ``jvp`` of ``grad``, ``jacrev(jacrev)``,
    ``jacfwd(jacfwd)``), not third: the rules are bridged calls (``_second_order``) whose
    own rules need the third derivatives of ``½|r|²``, from mixed second differences of its
    exact gradient ``(Jₓᵀr, J_θᵀr)`` (one ``backward`` call each, cotangent ``r``) along two
    directions, extrapolated by Ridders' method (about 1e-10 relative; a gradient too rough
    for them, or NaN there, is an ``OptimizeError``).
    """

    residual: jb.Adapter
    _: dataclasses.KW_ONLY
    method: str = "trf"

    _methods = ("trf", "dogbox", "lm")

    def _check(self) -> None:
        check_user("LeastSquares", "residual", self.residual, "vector")
        refused = [name for name, _ in self.options if name in _REFUSED]
        if refused:
            raise ValueError(
                f"LeastSquares: option {refused[0]!r} is not supported (the derivative rules "
                "assume the plain sum of squares without bounds; tolerances go in 'tol')."
            )

    def _solve(self, x0, theta, *, derivatives):
        finite_inputs(x0=x0, theta=theta)
        r = HostFunction(self.residual, theta)
        tol = 1e-12 if self.tol is None else self.tol
        result = scipy.optimize.least_squares(
            r,
            x0,
            jac=r.jacobian_x,  # pyright: ignore[reportArgumentType]
            method=self.method,
            ftol=tol,
            xtol=tol,
            gtol=tol,
            **dict(self.options),
        )
        verdict = outcome("least_squares", self.method, result)
        x = np.asarray(result.x, np.float64)
        sum_of_squares, p = _SumOfSquares(r), theta.shape[-1]
        return solve_box(sum_of_squares, x, x0, p, None, verdict, result.success, derivatives)

    def _second_order(self, q, z, flags, n):
        gradient = sum_of_squares_gradient(self.residual)
        return BoxSecondOrder(gradient, None, z, q, flags, None)


class _SumOfSquares:
    """``½ |r|²`` with its gradient ``Jᵀr`` and second derivatives ``JᵀJ + Σ rᵢ ∇²rᵢ`` and
    ``Jᵀ R_θ + Σ rᵢ ∂²rᵢ/∂x∂θ``.

    Without hooks the gradient is one ``backward`` call with cotangent ``r``, and the sums
    ``Σ rᵢ ∇²rᵢ`` are the second derivatives of ``w · r(x)`` at the fixed weights ``w = r``
    (``HostFunction.contracted``): differences of that one call, never of whole Jacobians
    (m calls each, and a dense (m, p) ``R_θ`` at every difference point)."""

    def __init__(self, r: HostFunction):
        self.r, self.theta = r, r.theta

    def gradient_x(self, x):
        return self.r.contracted(self.r(x)).gradient_x(x)

    def second(self, x, rough=False):
        jx, jt = self.r.jacobian(x)
        cxx, cxt = self.r.contracted(self.r(x)).second(x, rough)
        return jx.T @ jx + cxx, jx.T @ jt + cxt

    def second_x(self, x, rough=False):
        jx = self.r.jacobian_x(x)
        return jx.T @ jx + self.r.contracted(self.r(x)).second_x(x, rough)
