"""``MinimizeConstrained``: a local minimiser of ``objective(x, theta)`` subject to
``eq(x, theta) = 0`` and ``ineq(x, theta) >= 0`` (SLSQP or trust-constr), differentiable in
``theta`` through the KKT conditions on the active set."""

import dataclasses

import numpy as np
import scipy.optimize

import jaxbridge as jb

from ._functions import HostFunction, check_user
from ._implicit import TIGHT, ImplicitSolver, failure, finite_inputs, outcome
from ._kkt import KKTSecondOrder, KKTSystem, solve_kkt
from ._minimizing import run_minimize


class MinimizeConstrained(ImplicitSolver):
    """A strict local minimiser of ``objective(x, theta)`` subject to ``eq(x, theta) = 0``
    and ``ineq(x, theta) >= 0`` (SciPy's convention): ``x = MinimizeConstrained(objective,
    eq=..., ineq=...)(x0, theta)``.

    ``objective`` is an Adapter ``"(n),(p)->()"`` as for ``Minimize``; ``eq`` and ``ineq``
    are Adapters ``"(n),(p)->(m)"`` (either may be ``None``). SciPy calls their host
    ``forward`` in float64 and gets exact first derivatives: the objective's gradient from
    its ``backward``, the constraints' Jacobians from an optional host method
    ``jacobian(self, x, theta)`` → ``(∂c/∂x, ∂c/∂θ)``, else from ``backward`` with each unit
    cotangent. Second derivatives come from an optional ``hessian(self, x, theta)``
    (``(n, n), (n, p)`` for the objective, ``(m, n, n), (m, n, p)`` for a constraint), else
    from central differences of those exact first derivatives extrapolated by Ridders'
    method (4 to 24 evaluations per ``x_j``, or for a ``vectorized`` objective one batched
    call per step size for all of them; about 1e-12 relative on smooth functions).
    ``"trust-constr"`` gets these Hessians of the objective and the constraints.

    Parameters:
        objective, eq, ineq: the Adapters.
        method: ``"SLSQP"`` (the default), ``"trust-constr"``, or the gradient-free
            ``"COBYLA"`` and ``"COBYQA"``; tight default tolerances, overridden by
            ``options``.
        tol, options: passed to ``scipy.optimize.minimize``; ``options`` a tuple of (name,
            value) pairs; a ``tol`` replaces the default tolerances it sets in SciPy.
        on_failure: see ``MayFail``; an ``OptimizeError`` where the answer fails the
            checks below.

    The answer is checked, not trusted. Inequalities within ``1e-4 * (1 + max|x|)`` of their
    limit at SciPy's answer (as a distance in ``x``, ``c_j / |∇c_j|``: a constraint's units do
    not matter) are candidates for the active set; nonnegative least squares on ``∇f = Jᵀμ``
    over them and the equalities keeps those with a multiplier above ``1.5e-8`` times its own
    size, ``|pinv(Jᵀ)|`` times the terms ``∇f`` sums (``|∇f| + |∇²f| |x| + |∂²f/∂x∂θ| |θ|``),
    there (not at ``x0``: the verdict does not depend on the start). The multipliers of that active
    set come from plain least squares (never from SciPy, whose multipliers are unreliable), then
    Newton steps on the KKT equations refine ``(x, μ)`` to 1e-10 of the scale ``max(1,
    max|∇f(x0)|)`` (SciPy's answer must already be within 1e-4); an active inequality whose
    multiplier turns negative is dropped, an inactive one that ends violated is added, and the
    refinement repeats (at most 3 rounds). At the solution the KKT matrix must be nonsingular
    (independent active constraints) and, where the solution is differentiated, settled as
    ``Minimize``'s Hessian (a degenerate minimum is refused), every inequality either clearly
    inactive (further than ``1.5e-8 * (1 + max|x|)`` from its limit, as a distance) or active
    with a multiplier above that threshold (else it is degenerate: a kink of the solution
    map), and the Hessian of the Lagrangian positive definite on the active constraints'
    null space (a strict minimum). Otherwise an ``OptimizeError`` with SciPy's status and
    message. A call whose result is not differentiated checks these as ``Minimize`` does,
    from rough second derivatives unless they leave a verdict in doubt.

    Derivatives by the implicit function theorem on the KKT equations of the active set
    (inactive inequalities dropped): with ``K`` their Jacobian in ``(x, μ)`` and ``K_θ`` in
    ``θ``, ``θ̄ = -K_θᵀ K⁻ᵀ (ḡ, 0)`` and ``(ẋ, μ̇) = -K⁻¹ K_θ θ̇``; exactly zero in ``x0``.
    Second order in every composition of modes, not third, on the active set (constant near
    a non-degenerate solution): the rules are bridged calls (``_second_order``) whose own
    rules need third derivatives of the Lagrangian ``f - μᵀc``, from mixed second
    differences of its exact gradient (one ``backward`` call of each adapter, the
    constraints' with cotangent ``μ``) along two directions, extrapolated by Ridders' method
    (about 1e-10 relative; a gradient too rough for them is an ``OptimizeError``).
    """

    objective: jb.Adapter
    eq: jb.Adapter | None = None
    ineq: jb.Adapter | None = None
    _: dataclasses.KW_ONLY
    method: str = "SLSQP"

    _methods = ("SLSQP", "trust-constr", "COBYLA", "COBYQA")

    def _check(self) -> None:
        check_user("MinimizeConstrained", "objective", self.objective, "scalar")
        for role in ("eq", "ineq"):
            if getattr(self, role) is not None:
                check_user("MinimizeConstrained", role, getattr(self, role), "vector")

    def _counts(self, x0, theta) -> list[int]:
        counts = []
        for c in (self.eq, self.ineq):
            if c is not None:
                specs = c.output_specs(x0, theta)
                counts.append((specs[0] if isinstance(specs, tuple) else specs).shape[-1])
            else:
                counts.append(0)
        return counts

    def _sizes(self, x0, theta):
        return x0.shape[-1] + sum(self._counts(x0, theta)), theta.shape[-1]

    def _solve(self, x0, theta, *, derivatives):
        finite_inputs(x0=x0, theta=theta)
        n, p = x0.shape[-1], theta.shape[-1]
        f = HostFunction(self.objective, theta)
        constraints = [HostFunction(c, theta) for c in (self.eq, self.ineq) if c is not None]
        sizes = [c(x0).shape[-1] for c in constraints]
        equalities = sizes[0] if self.eq is not None else 0
        kinds = [kind for kind, c in (("eq", self.eq), ("ineq", self.ineq)) if c is not None]
        # a constraint of no outputs constrains nothing (trust-constr fails on one)
        given = [(kind, c) for kind, c, size in zip(kinds, constraints, sizes) if size]
        scipy_constraints = _scipy_constraints(self.method, *zip(*given)) if given else []
        result = run_minimize(f, x0, self.method, self.tol, self.options, None, scipy_constraints)
        verdict = outcome("minimize", self.method, result)
        system = KKTSystem(f, constraints, sizes, n, p)
        x = np.asarray(result.x, np.float64)
        return solve_kkt(system, x, x0, equalities, verdict, result.success, derivatives)

    def _second_order(self, q, z, flags, n):
        constraints = [c for c in (self.eq, self.ineq) if c is not None]
        return KKTSecondOrder(self.objective, constraints, n, z, q, flags)

    def _nothing_to_solve(self, x0, theta):
        """An empty ``x``: the constraints, functions of ``theta`` alone, hold or do not."""
        for kind, c in (("eq", self.eq), ("ineq", self.ineq)):
            if c is not None:
                values = HostFunction(c, theta)(x0)
                missed = np.abs(values) if kind == "eq" else -values
                if values.size and not missed.max() <= TIGHT * max(1.0, np.abs(values).max()):
                    raise failure(f"x is empty, and the {kind} constraints do not hold: {values!r}")
        return super()._nothing_to_solve(x0, theta)


def _scipy_constraints(method, kinds, constraints):
    if method == "SLSQP":
        return [
            {"type": kind, "fun": c, "jac": c.jacobian_x} for kind, c in zip(kinds, constraints)
        ]
    out = []
    for kind, c in zip(kinds, constraints):
        upper = 0.0 if kind == "eq" else np.inf
        out.append(
            scipy.optimize.NonlinearConstraint(
                c,
                0.0,
                upper,
                jac=c.jacobian_x,  # pyright: ignore[reportArgumentType]
                hess=lambda x, v, c=c: np.einsum("j,jab->ab", v, c.second_x(x)),
            )
        )
    return out
