"""Stationarity of a smooth objective in a box: the optimality system of ``Minimize``,
``MinimizeBounded`` and ``LeastSquares``, and its active set.

Free variables satisfy ``∂f/∂x_i = 0``; a variable held at a bound satisfies ``x_i = l_i``
(or ``u_i``). The parameters are ``theta``, then (when bounded) ``lower`` and ``upper``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from ._differences import directional, mixed
from ._implicit import (
    MULTIPLIER,
    NEAR,
    failure,
    gradient_terms,
    require_strict_minimum,
    settle,
    settle_active_set,
)


class Objective(Protocol):
    """A scalar function's derivatives: in ``x`` and ``theta``, or (``_x``) in ``x`` alone."""

    theta: np.ndarray

    def gradient_x(self, x: np.ndarray) -> np.ndarray: ...

    def second(self, x: np.ndarray, rough: bool = False) -> tuple[np.ndarray, np.ndarray]: ...

    def second_x(self, x: np.ndarray, rough: bool = False) -> np.ndarray: ...


class BoxSystem:
    """``F(x) = ∇f(x)`` on free variables, ``x_i - bound_i`` on held ones."""

    def __init__(self, f: Objective, n: int, p: int, bounds: tuple[np.ndarray, np.ndarray] | None):
        self.f, self.n, self.p, self.bounds = f, n, p, bounds
        self.at_lower = np.zeros(n, bool)
        self.at_upper = np.zeros(n, bool)

    def residual(self, x):
        return self._hold(self.f.gradient_x(x), x)

    def _hold(self, g, x):
        g = g.copy()
        if self.bounds is not None:
            lower, upper = self.bounds
            g[self.at_lower] = (x - lower)[self.at_lower]
            g[self.at_upper] = (x - upper)[self.at_upper]
        return g

    def rough_jacobian(self, x):
        return self._held_rows(self.f.second_x(x, True))

    def _held_rows(self, hxx):
        held = self.at_lower | self.at_upper
        jz = hxx.copy()
        jz[held] = np.eye(self.n)[held]
        return jz

    def linearize(self, x):
        gx = self.f.gradient_x(x)
        hxx, hxt = self.f.second(x)
        n, p = self.n, self.p
        jz = self._held_rows(hxx)
        jq = hxt if self.bounds is None else np.concatenate([hxt, np.zeros((n, 2 * n))], 1)
        held = self.at_lower | self.at_upper
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
    derivatives: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """From SciPy's answer ``x``: the active set, refinement and the checks of a strict local
    minimum (free variables strictly inside the box, held ones with a multiplier of the
    right sign and clearly nonzero, the free block of the Hessian positive definite).
    Returns ``(x, J_z, J_q, state)``, the state ``x`` and its flags (-1 held at the lower
    bound, 1 at the upper, 0 free: ``BoxSecondOrder``); without ``derivatives``, see
    ``settle``.

    A variable within ``NEAR * (1 + |x_i|)`` of a bound with the gradient pushing outwards
    is held there; after refinement a held variable whose gradient turns inwards is released
    and a free one that left the box is held, up to ``ROUNDS`` times.
    """
    n = x.shape[-1]
    system = BoxSystem(f, n, p, bounds)
    scale = max(1.0, float(np.max(np.abs(f.gradient_x(x0)), initial=0.0)))
    if bounds is None:
        x, _, jz, jq = settle(system, x, scale, verdict, success, derivatives=derivatives)
        require_strict_minimum(system, x, jz, jq, "the Hessian", verdict)
        return x, jz, jq, np.concatenate([x, np.zeros(n)])
    lower, upper = bounds
    x = np.clip(x, lower, upper)
    g = f.gradient_x(x)
    near = NEAR * (1.0 + np.abs(x))
    answer, floors = x, []

    def tiny(held):
        # each multiplier ∂f/∂x_i against the terms it sums, not against max|∇f| (a bound
        # holding x_i by 0.1 beside one holding x_j by 1e9 is no kink); n gradient calls at
        # SciPy's answer, so once, and only where a variable is at a bound
        if not held.any():
            return np.zeros(n)
        if not floors:
            floors.append(MULTIPLIER * gradient_terms(f, answer))
        return floors[0]

    low, high = x - lower <= near, upper - x <= near
    floor = tiny(low | high)
    system.at_lower, system.at_upper = low & (g > floor), high & (g < -floor)

    def hold(x):
        return np.where(system.at_lower, lower, np.where(system.at_upper, upper, x))

    def correct(x):
        nonlocal g  # the gradient at the last refined x, for the checks below
        g = f.gradient_x(x)
        floor = tiny(system.at_lower | system.at_upper)
        release = (system.at_lower & (g < -floor)) | (system.at_upper & (g > floor))
        free = ~(system.at_lower | system.at_upper)
        below, above = free & (x < lower), free & (x > upper)
        if not (release.any() or below.any() or above.any()):
            return None
        system.at_lower = (system.at_lower & ~release) | below
        system.at_upper = (system.at_upper & ~release) | above
        return hold(x)

    x, jz, jq = settle_active_set(system, hold(x), scale, verdict, success, correct, derivatives)
    held = system.at_lower | system.at_upper
    # held with no force, or free but at the bound (to rounding: a distance, not a force)
    close = MULTIPLIER * (1 + np.abs(x))
    weak = (held & (np.abs(g) <= tiny(held))) | (
        ~held & ((x - lower <= close) | (upper - x <= close))
    )
    if weak.any():
        i = int(np.flatnonzero(weak)[0])
        raise failure(
            f"{verdict}, but the solution is degenerate: x[{i}] = {x[i]:.6g} is at a bound "
            f"with a zero multiplier (∂f/∂x = {g[i]:.1e}), so the solution map has a kink "
            "there and no derivative"
        )
    # (every free variable has room for a rough difference's step, ROUGH_STEP ≤ MULTIPLIER,
    # into the box: the rough Hessian is as good here as anywhere)
    require_strict_minimum(
        system,
        x,
        jz,
        jq,
        "the Hessian on the free variables",
        verdict,
        part=lambda jz: jz[np.ix_(~held, ~held)],
    )
    flags = system.at_upper.astype(float) - system.at_lower.astype(float)
    return x, jz, jq, np.concatenate([x, flags])


class BoxSecondOrder:
    """The second derivatives of ``BoxSystem`` (``SecondOrder``) at a solution: its free rows
    are ``∇ₓφ`` of the scalar ``φ`` (the objective, or ``½|r|²``), its held rows linear.

    From ``hessian(x, θ) -> (∂²φ/∂x², ∂²φ/∂x∂θ)`` where that is exact (the user's hook):
    central differences of it along one direction, extrapolated by Ridders' method (about
    1e-12 relative). Otherwise from ``gradient(x, θ) -> (∂φ/∂x, ∂φ/∂θ)`` joined, the exact
    first derivatives: mixed second differences along two directions (``mixed``; third
    derivatives of ``φ`` from its gradient, about 1e-10 relative). Free variables' steps stay
    inside the box; held ones move with their bound.
    """

    def __init__(
        self,
        gradient: Callable[[np.ndarray, np.ndarray], np.ndarray],
        hessian: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None,
        x: np.ndarray,
        theta: np.ndarray,
        flags: np.ndarray,
        bounds: tuple[np.ndarray, np.ndarray] | None,
    ):
        self.gradient, self.hessian = gradient, hessian
        self.n, self.p, self.bounded = x.shape[-1], theta.shape[-1], bounds is not None
        self.point = np.concatenate([x, theta])
        self.free = flags == 0
        room = np.full(self.n + self.p, np.inf)
        if bounds is not None:
            gap = np.minimum(x - bounds[0], bounds[1] - x)
            room[: self.n] = np.where(self.free, gap, np.inf)
        self.room = room

    def _g(self, point: np.ndarray) -> np.ndarray:
        return self.gradient(point[: self.n], point[self.n :])

    def _h(self, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.hessian(point[: self.n], point[self.n :])  # pyright: ignore[reportOptionalCall]

    def contracted(self, lam: np.ndarray, d: np.ndarray) -> np.ndarray:
        n, p = self.n, self.p
        weights = np.where(self.free, lam, 0.0)  # (held rows are linear)
        along = d[: n + p]
        if self.hessian is not None:

            def contract(point):
                hxx, hxt = self._h(point)
                return np.concatenate([hxx @ weights, hxt.T @ weights])

            value, _ = directional(contract, self.point, along, self.room)
        else:
            u = np.concatenate([weights, np.zeros(p)])
            value, _ = mixed(self._g, self.point, u, along, self.room)
        return np.concatenate([value, np.zeros(2 * n if self.bounded else 0)])

    def bilinear(self, d1: np.ndarray, d2: np.ndarray) -> np.ndarray:
        n, p = self.n, self.p
        if self.hessian is not None:

            def apply(point):
                hxx, hxt = self._h(point)
                return hxx @ d1[:n] + hxt @ d1[n : n + p]

            value, _ = directional(apply, self.point, d2[: n + p], self.room)
        else:
            value = mixed(self._g, self.point, d1[: n + p], d2[: n + p], self.room)[0][:n]
        return np.where(self.free, value, 0.0)
