"""The KKT system of ``MinimizeConstrained`` on an active set, and the checks of a strict
local minimum there.

Unknowns ``z = (x, μ)`` with one multiplier per constraint (equalities, then inequalities
``c(x) >= 0``); ``L = f - μᵀc``. The equations: ``∇ₓf - Jᵀμ = 0``, ``c_j = 0`` for the
equalities and the active inequalities, ``μ_j = 0`` for the inactive ones (dropped from the
problem: they carry no derivative).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.optimize

from .._shared._user_function import UserFunction
from ._differences import mixed
from ._functions import HostFunction
from ._implicit import (
    MULTIPLIER,
    NEAR,
    failure,
    gradient_terms,
    require_strict_minimum,
    settle_active_set,
)


class KKTSystem:
    def __init__(
        self, f: HostFunction, constraints: list[HostFunction], sizes: list[int], n: int, p: int
    ):
        self.f, self.constraints, self.sizes, self.n, self.p = f, constraints, sizes, n, p
        self.m = sum(self.sizes)
        self.active = np.ones(self.m, bool)  # equalities are always active

    def values(self, x):
        return np.concatenate([c(x) for c in self.constraints] or [np.zeros(0)])

    def jacobians(self, x):
        parts = [c.jacobian(x) for c in self.constraints]
        if not parts:
            return np.zeros((0, self.n)), np.zeros((0, self.p))
        return np.concatenate([j for j, _ in parts]), np.concatenate([t for _, t in parts])

    def residual(self, z):
        x, mu = z[: self.n], z[self.n :]
        jx, _ = self.jacobians(x)
        stationarity = self.f.gradient_x(x) - jx.T @ mu
        return np.concatenate([stationarity, np.where(self.active, self.values(x), mu)])

    def rough_jacobian(self, z):
        return self.linearize(z, rough=True)[1]

    def linearize(self, z, rough=False):
        x, mu = z[: self.n], z[self.n :]
        n, m = self.n, self.m
        gx = self.f.gradient_x(x)
        hxx, hxt = self.f.second(x, rough)
        jx, jt = self.jacobians(x)
        stops = np.cumsum(self.sizes, dtype=int)
        for c, start, stop in zip(self.constraints, stops - np.asarray(self.sizes, int), stops):
            weights = mu[start:stop]
            if np.any(weights != 0):
                # the second derivatives of μ·c at fixed μ: one call per difference point,
                # not one per constraint (``HostFunction.contracted``)
                cxx, cxt = c.contracted(weights).second(x, rough)
                hxx, hxt = hxx - cxx, hxt - cxt
        inactive = np.flatnonzero(~self.active)
        jz = np.zeros((n + m, n + m))
        jz[:n, :n], jz[:n, n:] = hxx, -jx.T
        jz[n:, :n] = np.where(self.active[:, None], jx, 0.0)
        jz[n + inactive, n + inactive] = 1.0
        jq = np.concatenate([hxt, np.where(self.active[:, None], jt, 0.0)])
        f = np.concatenate([gx - jx.T @ mu, np.where(self.active, self.values(x), mu)])
        return f, jz, jq


def solve_kkt(
    system: KKTSystem,
    x: np.ndarray,
    x0: np.ndarray,
    equalities: int,
    verdict: str,
    success: bool,
    derivatives: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """From SciPy's answer ``x``: the active set, refinement of ``(x, μ)`` and the checks. The
    first ``equalities`` constraints are equalities. Returns ``(x, J_z, J_q, state)``, the
    state ``z = (x, μ)`` and its flags (1 for an active constraint's multiplier, else 0:
    ``KKTSecondOrder``).

    Candidates are the inequalities within ``NEAR`` of their limit; nonnegative least squares
    on ``∇f = Jᵀμ`` over them (and the equalities) picks those with a positive multiplier.
    The multipliers of that active set are then plain least squares (never SciPy's), and
    Newton steps on the KKT equations refine ``(x, μ)``.
    """
    n, m = system.n, system.m
    scale = max(1.0, float(np.max(np.abs(system.f.gradient_x(x0)), initial=0.0)))
    inequality = np.arange(m) >= equalities
    answer, terms = x, []

    def tiny(x, rows):
        # each multiplier against its own size, |pinv(J_Rᵀ)| times the terms ∇f sums (as
        # Linprog's): not against max|∇f|, which read the multiplier of a constraint in
        # other units, or beside a larger one, as zero. (The terms: n gradient calls at
        # SciPy's answer, once, and only where an inequality may be active.)
        floor = np.zeros(m)
        if (rows & inequality).any():
            if not terms:
                terms.append(gradient_terms(system.f, answer))
            jx, _ = system.jacobians(x)
            floor[rows] = MULTIPLIER * np.abs(np.linalg.pinv(jx[rows].T)) @ terms[0]
        return floor

    def within(x, values, distance):
        # an inequality's value as a distance in x (c_j / |∇c_j|), as the box's bounds are:
        # a constraint in other units is no nearer its limit
        jx, _ = system.jacobians(x)
        return values <= distance * (1 + np.max(np.abs(x))) * np.linalg.norm(jx, axis=1)

    candidates = ~inequality | within(x, system.values(x), NEAR)
    multipliers = _nonnegative(system, x, candidates, equalities)
    system.active = ~inequality | (candidates & (multipliers > tiny(x, candidates)))

    def correct(z):
        x, mu, values = z[:n], z[n:], system.values(z[:n])
        dropped = inequality & system.active & (mu < -tiny(x, system.active))
        violated = inequality & ~system.active & (values < 0)
        if not (dropped.any() or violated.any()):
            return None
        system.active = (system.active & ~dropped) | violated
        return np.concatenate([x, np.where(system.active, _multipliers(system, x), 0.0)])

    start = np.concatenate([x, _multipliers(system, x)])
    z, jz, jq = settle_active_set(system, start, scale, verdict, success, correct, derivatives)
    x, mu, values = z[:n], z[n:], system.values(z[:n])
    # active with no force, or inactive but at its limit (to rounding: a distance in x)
    weak = inequality & (
        (system.active & (mu <= tiny(x, system.active)))
        | (~system.active & within(x, values, MULTIPLIER))
    )
    if weak.any():
        j = int(np.flatnonzero(weak)[0])
        raise failure(
            f"{verdict}, but the solution is degenerate: inequality {j - equalities} is at its "
            f"limit (c = {values[j]:.1e}) with multiplier {mu[j]:.1e}, so the solution map "
            "has a kink there and no derivative"
        )

    def reduced(jz):  # the Hessian of the Lagrangian on the active constraints' null space
        rows = jz[n:, :n][system.active]
        basis = scipy.linalg.null_space(rows) if len(rows) else np.eye(n)
        return basis.T @ jz[:n, :n] @ basis

    what = "the Hessian of the Lagrangian on the active constraints"
    require_strict_minimum(system, z, jz, jq, what, verdict, part=reduced)
    flags = np.concatenate([np.zeros(n), system.active.astype(float)])
    return x, jz, jq, np.concatenate([z, flags])


def _multipliers(system: KKTSystem, x: np.ndarray) -> np.ndarray:
    """Least squares ``μ_A`` of ``∇f = J_Aᵀ μ_A`` on the current active set; 0 elsewhere."""
    jx, _ = system.jacobians(x)
    mu = np.zeros(system.m)
    rows = system.active
    if rows.any():
        mu[rows] = np.linalg.lstsq(jx[rows].T, system.f.gradient_x(x), rcond=None)[0]
    return mu


def _nonnegative(system: KKTSystem, x: np.ndarray, rows: np.ndarray, equalities: int) -> np.ndarray:
    """Multipliers of ``∇f = J_Rᵀ μ_R`` by least squares with the inequalities' ``μ >= 0``
    (the equalities' split into two nonnegative parts); 0 off ``rows``."""
    jx, _ = system.jacobians(x)
    chosen = np.flatnonzero(rows)
    mu = np.zeros(system.m)
    if not len(chosen):  # (SciPy 1.17's nnls frees memory twice on a matrix with no columns)
        return mu
    columns = jx[chosen].T
    free = chosen < equalities
    matrix = np.concatenate([columns, -columns[:, free]], axis=1)
    solution = scipy.optimize.nnls(matrix, system.f.gradient_x(x))[0]
    mu[chosen] = solution[: len(chosen)]
    mu[chosen[free]] -= solution[len(chosen) :]
    return mu


class KKTSecondOrder:
    """The KKT equations' second derivatives on the active set (``SecondOrder``), from the
    Lagrangian ``L(x, μ, θ) = f - μᵀc``: its rows are ``∇ₓL``, ``c_j = -∂L/∂μ_j`` on the
    active set and ``μ_j`` (linear) off it, so ``λ · F = u · ∇L`` up to a linear part with
    ``u = (λₓ, -λ_μ)`` on the active set, and both ``D`` and ``F''`` are mixed second
    differences (``mixed``) of ``∇L = (∇ₓf - Jᵀμ, -c, ∇_θf - J_θᵀμ)``, which costs one
    forward and one backward call of each adapter (the constraints' with cotangent ``μ``):
    third derivatives of ``f`` and ``c`` from their exact first ones."""

    def __init__(
        self,
        objective: object,
        constraints: list,
        n: int,
        z: np.ndarray,
        theta: np.ndarray,
        flags: np.ndarray,
    ):
        self.f = UserFunction(objective, "the objective")  # pyright: ignore[reportArgumentType]
        self.constraints = [UserFunction(c, "a constraint") for c in constraints]
        self.n, self.k = n, z.shape[-1]
        self.active = flags[n:] != 0
        self.point = np.concatenate([z, theta])

    def _lagrangian_gradient(self, point: np.ndarray) -> np.ndarray:
        n, k = self.n, self.k
        x, mu, theta = point[:n], point[n:k], point[k:]
        gx, gt = self.f.vjp((x, theta), np.ones(()))
        values, start = [], 0
        for c in self.constraints:
            res = c.residuals((x, theta))
            size = res[2].shape[-1]
            cx, ct = c.pullback(res, mu[start : start + size], 2)
            gx, gt, start = gx - cx, gt - ct, start + size
            values.append(res[2])
        return np.concatenate([gx, -np.concatenate(values or [np.zeros(0)]), gt])

    def contracted(self, lam: np.ndarray, d: np.ndarray) -> np.ndarray:
        n, k = self.n, self.k
        u = np.concatenate([lam[:n], -np.where(self.active, lam[n:], 0.0), np.zeros(len(d) - k)])
        return mixed(self._lagrangian_gradient, self.point, u, d)[0]

    def bilinear(self, d1: np.ndarray, d2: np.ndarray) -> np.ndarray:
        n, k = self.n, self.k
        second = mixed(self._lagrangian_gradient, self.point, d1, d2)[0]
        return np.concatenate([second[:n], -np.where(self.active, second[n:k], 0.0)])
