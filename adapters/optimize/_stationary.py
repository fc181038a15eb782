"""Stationarity of a smooth objective in a box: the optimality system of ``Minimize``,
``MinimizeBounded`` and ``LeastSquares``, and its active set.

Free variables satisfy ``∂f/∂x_i = 0``; a variable held at a bound satisfies ``x_i = l_i``
(or ``u_i``). The parameters are ``theta``, then (when bounded) ``lower`` and ``upper``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ._implicit import MULTIPLIER, failure, require_positive_definite, settle


class Objective(Protocol):
    def gradient(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def second(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


class BoxSystem:
    """``F(x) = ∇f(x)`` on free variables, ``x_i - bound_i`` on held ones."""

    def __init__(self, f: Objective, n: int, p: int, bounds: tuple[np.ndarray, np.ndarray] | None):
        self.f, self.n, self.p, self.bounds = f, n, p, bounds
        self.at_lower = np.zeros(n, bool)
        self.at_upper = np.zeros(n, bool)

    def residual(self, x):
        return self._hold(self.f.gradient(x)[0], x)

    def _hold(self, g, x):
        g = g.copy()
        if self.bounds is not None:
            lower, upper = self.bounds
            g[self.at_lower] = (x - lower)[self.at_lower]
            g[self.at_upper] = (x - upper)[self.at_upper]
        return g

    def linearize(self, x):
        gx, _ = self.f.gradient(x)
        hxx, hxt = self.f.second(x)
        n, p = self.n, self.p
        jz = hxx.copy()
        jq = hxt if self.bounds is None else np.concatenate([hxt, np.zeros((n, 2 * n))], 1)
        held = self.at_lower | self.at_upper
        jz[held] = np.eye(n)[held]
        jq[held] = 0.0
        rows = np.arange(n)
        jq[rows[self.at_lower], p + rows[self.at_lower]] = -1.0
        jq[rows[self.at_upper], p + n + rows[self.at_upper]] = -1.0
        return self._hold(gx, x), jz, jq


def solve_box(
    f: Objective,
    x: np.ndarray,
    x0: np.ndarray,
    p: int,
    bounds: tuple[np.ndarray, np.ndarray] | None,
    verdict: str,
    success: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From SciPy's answer ``x``: the active set, refinement and the checks of a strict local
    minimum (free variables strictly inside the box, held ones with a multiplier of the
    right sign and clearly nonzero, the free block of the Hessian positive definite).
    Returns ``(x, J_z, J_q)``."""
    n = x.shape[-1]
    system = BoxSystem(f, n, p, bounds)
    scale = max(1.0, float(np.max(np.abs(f.gradient(x0)[0]), initial=0.0)))
    if bounds is not None:
        lower, upper = bounds
        x = np.clip(x, lower, upper)
        g = f.gradient(x)[0]
        near = 1e-6 * (1.0 + np.abs(x))  # methods with barriers stop just inside
        close_l, close_u = x - lower <= near, upper - x <= near
        tiny = MULTIPLIER * scale
        weak = (close_l | close_u) & (np.abs(g) <= tiny)
        if weak.any():
            i = int(np.flatnonzero(weak)[0])
            raise failure(
                f"{verdict}, but its answer is degenerate: x[{i}] = {x[i]:.6g} is at a bound "
                f"with a zero multiplier (∂f/∂x = {g[i]:.1e}), where the solution has no "
                "derivative"
            )
        system.at_lower = close_l & (g > tiny)
        system.at_upper = close_u & (g < -tiny)
        x = np.where(system.at_lower, lower, np.where(system.at_upper, upper, x))
    x, _, jz, jq = settle(system, x, scale, verdict, success)
    free = ~(system.at_lower | system.at_upper)
    if bounds is not None:
        lower, upper = bounds
        outside = free & ((x <= lower) | (x >= upper))
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise failure(
                f"{verdict}, but refined, its answer leaves the box at x[{i}] = {x[i]:.6g}: "
                "the active set could not be identified"
            )
        g = f.gradient(x)[0]
        tiny = MULTIPLIER * scale
        wrong = (system.at_lower & ~(g > tiny)) | (system.at_upper & ~(g < -tiny))
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise failure(
                f"{verdict}, but x[{i}] is held at a bound with multiplier {g[i]:.1e}: "
                "degenerate or not a minimum"
            )
    require_positive_definite(jz[np.ix_(free, free)], "the Hessian (on the free variables)")
    return x, jz, jq
