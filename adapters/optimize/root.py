"""``Root``: a root of ``residual(x, theta) = 0`` by ``scipy.optimize.root``, differentiable in
``theta`` by the implicit function theorem."""

import dataclasses

import numpy as np
import scipy.optimize

import jaxbridge as jb
from jaxbridge.internal import overrides

from .._shared._user_function import UserFunction
from ._differences import directional, mixed
from ._functions import HostFunction, check_user
from ._implicit import ImplicitSolver, finite_inputs, outcome, settle

_USES_JACOBIAN = ("hybr", "lm")


class Root(ImplicitSolver):
    """A root ``x`` of ``residual(x, theta) = 0`` near ``x0``: ``x = Root(residual)(x0, theta)``.

    ``residual`` is a jaxbridge Adapter with signature ``"(n),(p)->(n)"`` whose host
    ``forward`` SciPy calls directly, in float64 (no JAX on the host). Its Jacobian
    ``(∂F/∂x, ∂F/∂θ)`` comes from an optional host method ``jacobian(self, x, theta)``
    returning the (n, n) and (n, p) matrices, or else from ``backward`` with each unit
    cotangent (n calls, one if the adapter is vectorized); ``"hybr"`` and ``"lm"`` are given
    it, the other methods build their own.

    Parameters:
        residual: the Adapter ``F(x, θ)``.
        method: a method of ``scipy.optimize.root`` that needs no Hessian (``"hybr"``, the
            default, ``"lm"``, ``"broyden1"``, ``"broyden2"``, ``"anderson"``, ``"krylov"``,
            ``"df-sane"``).
        tol, options: passed to ``scipy.optimize.root``; ``options`` as a tuple of (name,
            value) pairs, e.g. ``(("maxfev", 200),)``.
        on_failure: see ``MayFail``; an ``OptimizeError`` where the answer fails the
            checks below.

    The answer is checked, not trusted: SciPy's point must satisfy ``max|F| <= 1e-4 *
    max(1, max|F(x0)|)`` whatever SciPy reports, then up to 4 Newton steps refine it to
    ``1e-10`` of that scale (the gradient is only as good as the solution), and the Jacobian
    there must be nonsingular (reciprocal condition number at least 1e-12) and, where the
    root is differentiated, settled: changing by at most 1e-2 of itself over the root's own
    error (the Newton step from it), which a multiple root's does not (``_implicit.SETTLED``).
    Otherwise, or for NaN in ``x0`` or ``theta``: an ``OptimizeError`` with SciPy's status
    and message.

    ``"hybr"`` and ``"lm"`` (MINPACK) bound their first step by ``100 |x0|`` (``factor``
    times the scaled start), so from a tiny nonzero start, such as 1e-10, they may stall far
    from the root and fail: start from a typical magnitude, or from exactly zero.

    Derivatives, by the implicit function theorem at the returned root: ``θ̄ = -J_θᵀ
    J_x⁻ᵀ ḡ`` and ``ẋ = -J_x⁻¹ J_θ θ̇``, from the Jacobians saved by the forward; the
    derivative in ``x0`` is exactly zero. Second order in every composition of modes
    (``jax.hessian``, ``jvp`` of ``grad``, ``jacrev(jacrev)``, ``jacfwd(jacfwd)``), not
    third: the rules are bridged calls (``_second_order``) whose own rules need the
    residual's second derivatives, from central differences of ``backward`` (cotangent
    ``λ``) along one direction, and for forward over forward of its host ``jvp`` where it has
    one, else mixed second differences of its values, each extrapolated by Ridders' method
    (about 1e-12, 1e-10 relative; a residual too rough for them is an ``OptimizeError``).
    """

    residual: jb.Adapter
    _: dataclasses.KW_ONLY
    method: str = "hybr"

    _methods = ("hybr", "lm", "broyden1", "broyden2", "anderson", "krylov", "df-sane")

    def _check(self) -> None:
        check_user("Root", "residual", self.residual, "x")

    def _solve(self, x0, theta, *, derivatives):
        finite_inputs(x0=x0, theta=theta)
        fun = HostFunction(self.residual, theta)
        jac = fun.jacobian_x if self.method in _USES_JACOBIAN else None
        result = scipy.optimize.root(
            fun, x0, jac=jac, method=self.method, tol=self.tol, options=dict(self.options)
        )
        system = _RootSystem(fun)
        scale = max(1.0, float(np.max(np.abs(fun(x0)))))
        verdict = outcome("root", self.method, result)
        x = np.asarray(result.x, np.float64)
        x, _, jx, jt = settle(system, x, scale, verdict, result.success, derivatives=derivatives)
        return x, jx, jt, np.concatenate([x, np.zeros(x.shape[-1])])

    def _second_order(self, q, z, flags, n):
        return RootSecondOrder(self.residual, z, q)


class _RootSystem:
    def __init__(self, fun: HostFunction):
        self.fun = fun

    def residual(self, x):
        return self.fun(x)

    def rough_jacobian(self, x):  # (exact first derivatives: never rough)
        return self.fun.jacobian_x(x)

    def linearize(self, x):
        return self.fun.value_and_jacobian(x)


class RootSecondOrder:
    """The residual's second derivatives at a root (``SecondOrder``): ``D`` by central
    differences of its exact pullback (``backward`` with cotangent ``λ``) along one
    direction; ``F''[d1, d2]`` by differences of its host ``jvp`` along ``d1`` where it has
    one, else mixed second differences of its values; each extrapolated by Ridders'
    method."""

    def __init__(self, residual: jb.Adapter, x: np.ndarray, theta: np.ndarray):
        self.user = UserFunction(residual, "the residual")
        self.n, self.point = x.shape[-1], np.concatenate([x, theta])
        self.has_jvp = overrides(residual, "jvp")

    def _args(self, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return point[: self.n], point[self.n :]

    def contracted(self, lam: np.ndarray, d: np.ndarray) -> np.ndarray:
        def pulled(point):
            return np.concatenate(self.user.vjp(self._args(point), lam))

        return directional(pulled, self.point, d)[0]

    def bilinear(self, d1: np.ndarray, d2: np.ndarray) -> np.ndarray:
        if self.has_jvp:
            along = self._args(d1)

            def pushed(point):
                return self.user.jvp(self._args(point), along)

            return directional(pushed, self.point, d2)[0]

        def value(point):
            return self.user.outputs(self._args(point))[0]

        return mixed(value, self.point, d1, d2)[0]
