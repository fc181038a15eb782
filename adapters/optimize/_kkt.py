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

from ._functions import HostFunction
from ._implicit import MULTIPLIER, failure, require_positive_definite, settle

NEAR = 1e-6
"""An inequality with ``c_j <= NEAR`` at SciPy's answer is a candidate for the active set."""


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
        stationarity = self.f.gradient(x)[0] - jx.T @ mu
        return np.concatenate([stationarity, np.where(self.active, self.values(x), mu)])

    def linearize(self, z):
        x, mu = z[: self.n], z[self.n :]
        n, m = self.n, self.m
        gx, _ = self.f.gradient(x)
        hxx, hxt = self.f.second(x)
        jx, jt = self.jacobians(x)
        for c, (start, stop) in zip(self.constraints, self._ranges()):
            weights = mu[start:stop]
            if np.any(weights != 0):
                cxx, cxt = c.second(x)
                hxx = hxx - np.einsum("j,jab->ab", weights, cxx)
                hxt = hxt - np.einsum("j,jab->ab", weights, cxt)
        jz = np.zeros((n + m, n + m))
        jz[:n, :n], jz[:n, n:] = hxx, -jx.T
        jz[n:, :n] = np.where(self.active[:, None], jx, 0.0)
        jz[n + np.flatnonzero(~self.active), n + np.flatnonzero(~self.active)] = 1.0
        jq = np.concatenate([hxt, np.where(self.active[:, None], jt, 0.0)])
        f = np.concatenate([gx - jx.T @ mu, np.where(self.active, self.values(x), mu)])
        return f, jz, jq

    def _ranges(self):
        stops = np.cumsum(self.sizes, dtype=int)
        return list(zip(stops - np.asarray(self.sizes, int), stops))


def solve_kkt(
    system: KKTSystem, x: np.ndarray, x0: np.ndarray, equalities: int, verdict: str, success: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From SciPy's answer ``x``: the active set (multipliers by least squares from
    ``∇f = Jᵀμ``, never SciPy's), refinement of ``(x, μ)`` and the checks. The first
    ``equalities`` constraints are equalities. Returns ``(z, J_z, J_q)``."""
    n = system.n
    scale = max(1.0, float(np.max(np.abs(system.f.gradient(x0)[0]), initial=0.0)))
    tiny = MULTIPLIER * scale
    values = system.values(x)
    inequality = np.arange(system.m) >= equalities
    system.active = ~inequality | (values <= NEAR)
    mu = _multipliers(system, x)
    weak = inequality & system.active & (np.abs(mu) <= tiny)
    if weak.any():
        j = int(np.flatnonzero(weak)[0]) - equalities
        raise failure(
            f"{verdict}, but its answer is degenerate: inequality {j} is at its limit "
            f"(c = {values[equalities + j]:.1e}) with a zero multiplier, where the solution "
            "has no derivative"
        )
    system.active &= ~(inequality & (mu < -tiny))  # pulling the wrong way: not binding
    mu = np.where(system.active, _multipliers(system, x), 0.0)
    z, _, jz, jq = settle(system, np.concatenate([x, mu]), scale, verdict, success)
    x, mu = z[:n], z[n:]
    values = system.values(x)
    if (inequality & ~system.active & ~(values > 0)).any():
        j = int(np.flatnonzero(inequality & ~system.active & ~(values > 0))[0]) - equalities
        raise failure(
            f"{verdict}, but refined, its answer violates inequality {j} (c = "
            f"{values[equalities + j]:.1e}): the active set could not be identified"
        )
    if (inequality & system.active & ~(mu > tiny)).any():
        j = int(np.flatnonzero(inequality & system.active & ~(mu > tiny))[0]) - equalities
        raise failure(
            f"{verdict}, but active inequality {j} has multiplier {mu[equalities + j]:.1e} "
            "at the solution: degenerate, or not a minimum"
        )
    jx = jz[n:, :n][system.active]
    basis = scipy.linalg.null_space(jx) if len(jx) else np.eye(n)
    require_positive_definite(
        basis.T @ jz[:n, :n] @ basis, "the Hessian of the Lagrangian on the active constraints"
    )
    return x, jz, jq


def _multipliers(system: KKTSystem, x: np.ndarray) -> np.ndarray:
    """Least squares ``μ_A`` of ``∇f = J_Aᵀ μ_A`` on the current active set; 0 elsewhere."""
    jx, _ = system.jacobians(x)
    mu = np.zeros(system.m)
    rows = system.active
    if rows.any():
        mu[rows] = np.linalg.lstsq(jx[rows].T, system.f.gradient(x)[0], rcond=None)[0]
    return mu
