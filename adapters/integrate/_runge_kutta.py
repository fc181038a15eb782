"""Derivatives of an explicit Runge-Kutta solve (RK23, RK45) through the steps SciPy took.

The continuous adjoint, integrated backwards along the solve's interpolant, pays an
interpolation and a solver's step control per evaluation: 4-5 times the solve for RK45.
Once its steps are chosen, an explicit method's solve is a fixed sequence of stages,
``K_i = f(t + c_i h, y + h Σ_j a_ij K_j)``, ``y_new = y + h Σ_i b_i K_i``, and its outputs
are the steps' dense polynomials, ``y + h Kᵀ P p(x)``. So the forward records each accepted
step's stages, and the backward and the forward mode differentiate exactly those
(discretise-then-optimise, with the step sizes held as the controller chose them): one
product with the rhs's derivatives per stage, about the solve's own number of
evaluations, and the two modes exact transposes of each other. The outputs' dependence on
the output times is the continuous one, ``f(t_i, y_i)``, as in the other methods.

DOP853's dense output adds stages of its own: it keeps the continuous adjoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.integrate

from ._host_calls import failure

RECORDED = {"RK23": scipy.integrate.RK23, "RK45": scipy.integrate.RK45}
"""The methods whose derivatives go through their steps."""


@dataclass
class Steps:
    """The accepted steps of one solve, in the solver's own time ``s = sign (t - start)``:
    each step's start, size, states before and after, and stages ``K`` (``K[-1]`` is
    ``f`` at the step's end, its successor's ``K[0]``)."""

    method: str
    start: float
    sign: float
    t_old: list[float] = field(default_factory=list)
    t_new: list[float] = field(default_factory=list)
    h: list[float] = field(default_factory=list)
    y_old: list[np.ndarray] = field(default_factory=list)
    y_new: list[np.ndarray] = field(default_factory=list)
    K: list[np.ndarray] = field(default_factory=list)

    def solver(self) -> type:
        """SciPy's solver class for the method, recording each accepted step here."""
        steps = self

        class Recording(RECORDED[self.method]):
            def _step_impl(self) -> tuple[bool, Any]:
                t, y = self.t, self.y
                accepted, message = super()._step_impl()
                if accepted:
                    steps.t_old.append(t)
                    steps.t_new.append(self.t)
                    steps.h.append(self.h_previous)
                    steps.y_old.append(y)
                    steps.y_new.append(self.y)
                    steps.K.append(self.K.copy())
                return accepted, message

        return Recording

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for arrays in (self.y_old, self.y_new, self.K) for a in arrays)

    def _placed(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each output time after the first, the step whose dense polynomial gave it
        (``solve_ivp``: the first step that ends at or after it) and its powers
        ``p(x) = (x, x², ...)`` there."""
        ends = np.asarray(self.t_new)
        s = np.minimum(self.sign * (ts[1:] - self.start), ends[-1])
        index = np.minimum(np.searchsorted(ends, s, side="left"), len(ends) - 1)
        x = (s - np.asarray(self.t_old)[index]) / np.asarray(self.h)[index]
        order = RECORDED[self.method].P.shape[1]
        return index, np.cumprod(np.tile(x[:, None], (1, order)), axis=1)


def through_steps_vjp(
    dyn: Any, steps: Steps, ts: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The cotangents of ``y0`` and ``θ`` of ``Σ_{i>0} g_i · y(t_i)``, by the reverse pass
    through the recorded stages."""
    method = RECORDED[steps.method]
    A, B, C, P = method.A, method.B, method.C, method.P
    n_stages = method.n_stages
    sign = steps.sign
    n, p = dyn.n, len(dyn.theta)
    index, powers = steps._placed(ts)
    ybar, thetabar = np.zeros(n), np.zeros(p)
    nonzero = np.flatnonzero(np.any(g[1:] != 0, axis=1))
    if len(nonzero) == 0:
        return ybar, thetabar
    carry = np.zeros(n)  # the cotangent of the next step's K[0], which is this step's K[-1]

    def pull(s: float, y: np.ndarray, stage: np.ndarray, kbar: np.ndarray) -> np.ndarray:
        # the stage, sign f(t, y) in the solver's time (what the solve's own call of forward
        # returned there, on the same arguments to the bit), and its cotangent kbar
        nonlocal thetabar
        ybar_k, thetabar_k = dyn.vjp(steps.start + sign * s, y, sign * kbar, sign * stage)
        thetabar = thetabar + thetabar_k
        return ybar_k

    for k in range(int(index[nonzero[-1]]), -1, -1):  # ybar: the cotangent of y_new
        t_old, h, y_old, K = steps.t_old[k], steps.h[k], steps.y_old[k], steps.K[k]
        kbar = np.zeros_like(K)
        ybar_old = np.zeros(n)
        here = np.flatnonzero(index == k)
        if len(here):  # the outputs y_old + h Kᵀ P p(x)
            gs = g[1:][here]
            kbar += h * (P @ powers[here].T) @ gs
            ybar_old += gs.sum(axis=0)
        kbar[-1] += carry  # K[-1] = f(t_old + h, y_new)
        if kbar[-1].any():
            ybar = ybar + pull(t_old + h, steps.y_new[k], K[-1], kbar[-1])
        ybar_old += ybar  # y_new = y_old + h Σ b_i K_i
        kbar[:n_stages] += h * np.outer(B, ybar)
        for i in range(n_stages - 1, 0, -1):  # K_i = f(t_old + c_i h, y_old + h Σ a_ij K_j)
            if not kbar[i].any():
                continue
            ybar_i = pull(t_old + C[i] * h, y_old + h * (K[:i].T @ A[i, :i]), K[i], kbar[i])
            ybar_old += ybar_i
            kbar[:i] += h * np.outer(A[i, :i], ybar_i)
        carry, ybar = kbar[0], ybar_old
    if carry.any():  # the first step's K[0] = f(t0, y0)
        ybar = ybar + pull(steps.t_old[0], steps.y_old[0], steps.K[0][0], carry)
    if not (np.isfinite(ybar).all() and np.isfinite(thetabar).all()):
        raise failure(
            f"the adjoint through the {steps.method} steps met a non-finite derivative (NaN or inf)"
        )
    return ybar, thetabar


def through_steps_jvp(
    dyn: Any, steps: Steps, ts: np.ndarray, v0: np.ndarray, dtheta: np.ndarray
) -> np.ndarray:
    """The tangents of the outputs after the first, ``(k - 1, n)``, along ``v(t0) = v0``
    and ``θ̇``, by the forward pass through the recorded stages."""
    method = RECORDED[steps.method]
    A, B, C, P = method.A, method.B, method.C, method.P
    n_stages = method.n_stages
    sign = steps.sign
    index, powers = steps._placed(ts)
    out = np.empty((len(index), dyn.n))
    last = int(index.max()) if len(index) else -1

    def push(s: float, y: np.ndarray, v: np.ndarray) -> np.ndarray:
        return sign * dyn.jvp(steps.start + sign * s, y, v, dtheta)

    v = v0
    kdot0 = push(steps.t_old[0], steps.y_old[0], v0) if last >= 0 else None
    for k in range(last + 1):
        t_old, h, y_old, K = steps.t_old[k], steps.h[k], steps.y_old[k], steps.K[k]
        kdot = np.empty_like(K)
        kdot[0] = kdot0
        for i in range(1, n_stages):
            kdot[i] = push(
                t_old + C[i] * h, y_old + h * (K[:i].T @ A[i, :i]), v + h * (kdot[:i].T @ A[i, :i])
            )
        v_new = v + h * (kdot[:n_stages].T @ B)
        kdot[-1] = push(t_old + h, steps.y_new[k], v_new)
        here = np.flatnonzero(index == k)
        if len(here):
            out[here] = v + h * (powers[here] @ P.T) @ kdot
        v, kdot0 = v_new, kdot[-1]
    if not np.isfinite(out).all():
        raise failure(
            f"the tangent through the {steps.method} steps met a non-finite derivative (NaN or inf)"
        )
    return out
