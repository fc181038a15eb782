"""Derivatives of a solve through the steps SciPy took (``sensitivity="steps"``): the
explicit Runge-Kutta methods (RK23, RK45) and Radau IIA here, BDF in ``_bdf``.

The continuous adjoint, integrated backwards along the solve's interpolant, pays an
interpolation and a solver's step control per evaluation, and takes steps of its own:
4-5 times the solve for RK45 and Radau. Once its steps are chosen, a Runge-Kutta solve is
a fixed map from ``y0`` and ``θ`` to its outputs, and the forward records each accepted
step; the backward and the forward mode differentiate exactly that map
(discretise-then-optimise, with the step sizes held as the controller chose them), the
two modes exact transposes of each other:

- explicit: ``K_i = f(t + c_i h, y + h Σ_j a_ij K_j)``, ``y_new = y + h Σ_i b_i K_i``,
  outputs ``y + h Kᵀ P p(x)`` (``p(x) = (x, x², ...)``): one product with the rhs's
  derivatives per stage, about the solve's own number of evaluations.
- Radau IIA: the stages ``Z`` solve ``Z = h (A ⊗ I) F(y + Z)``, ``y_new = y + Z_3``,
  outputs ``y + Zᵀ P p(x)``; differentiated by the implicit function theorem, a linear
  system in the 3 stages with their Jacobians (``I - h (A ⊗ I) diag(J_j)``) per step:
  three Jacobians (the rhs's ``jacobian`` hook, or ``n`` backward calls each) and three
  products per step.

The outputs' dependence on the output times is the continuous one, ``f(t_i, y_i)``, as in
the other methods. DOP853's dense output adds stages of its own, and LSODA switches between
methods inside Fortran: they have the adjoint alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.sparse

from .._shared._scipy_version import STEPS_FOLLOWED
from ._bdf import BdfSteps, bdf_jvp, bdf_vjp
from ._checks import failure
from ._lapack import direct, solved
from ._solver_time import SolverTime

if STEPS_FOLLOWED:  # (a private module: imported only where its layout is known)
    import scipy.integrate._ivp.radau as _radau

RECORDED = {
    "BDF": scipy.integrate.BDF,
    "RK23": scipy.integrate.RK23,
    "RK45": scipy.integrate.RK45,
    "Radau": scipy.integrate.Radau,
}
"""The methods whose derivatives can go through their steps."""

_S6 = 6**0.5
RADAU_A = np.array(
    [
        [(88 - 7 * _S6) / 360, (296 - 169 * _S6) / 1800, (-2 + 3 * _S6) / 225],
        [(296 + 169 * _S6) / 1800, (88 + 7 * _S6) / 360, (-2 - 3 * _S6) / 225],
        [(16 - _S6) / 36, (16 + _S6) / 36, 1 / 9],
    ]
)
"""Radau IIA's Butcher matrix (order 5), the one SciPy's transformed Newton iteration
solves with (its ``T``, ``TI`` and eigenvalues ``MU_*`` diagonalise its inverse)."""


@dataclass
class Steps:
    """The accepted steps of one solve, in the solver's own time ``s = sign (t - start)``:
    each step's start and end, size, states before and after, and stages (explicit: the
    ``K`` of ``f`` values, ``K[-1]`` at the step's end and its successor's ``K[0]``;
    Radau: the increments ``Z``)."""

    method: str
    start: float
    sign: float
    t_old: list[float] = field(default_factory=list)
    t_new: list[float] = field(default_factory=list)
    h: list[float] = field(default_factory=list)
    y_old: list[np.ndarray] = field(default_factory=list)
    y_new: list[np.ndarray] = field(default_factory=list)
    stages: list[np.ndarray] = field(default_factory=list)

    @property
    def implicit(self) -> bool:
        """Radau IIA's steps (their stages ``Z``), not an explicit method's (``K``)."""
        return self.method == "Radau"

    def solver(self) -> type:
        """SciPy's solver class for the method, recording each accepted step here."""
        steps = self
        implicit = self.implicit

        class Recording(direct(RECORDED[self.method])):
            def _step_impl(self) -> tuple[bool, Any]:
                t, y = self.t, self.y
                accepted, message = super()._step_impl()
                if accepted:
                    steps.t_old.append(t)
                    steps.t_new.append(self.t)
                    steps.h.append(self.t - t if implicit else self.h_previous)
                    steps.y_old.append(y)
                    steps.y_new.append(self.y)
                    steps.stages.append((self.Z if implicit else self.K).copy())
                return accepted, message

        return Recording

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for arrays in (self.y_old, self.y_new, self.stages) for a in arrays)

    def placed(self, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each output time after the first, the step whose dense polynomial gave it
        (``solve_ivp``: the first step that ends at or after it) and ``P p(x)`` there, the
        weights of the stages in it."""
        ends = np.asarray(self.t_new)
        s = np.minimum(self.sign * (ts[1:] - self.start), ends[-1])
        index = np.minimum(np.searchsorted(ends, s, side="left"), len(ends) - 1)
        x = (s - np.asarray(self.t_old)[index]) / np.asarray(self.h)[index]
        P = _radau.P if self.implicit else RECORDED[self.method].P
        powers = np.cumprod(np.tile(x[:, None], (1, P.shape[1])), axis=1)
        weights = powers @ P.T
        if not self.implicit:  # (explicit: y + h Kᵀ P p; Radau's Z carry their h)
            weights *= np.asarray(self.h)[index][:, None]
        return index, weights


def recorder(method: str, start: float, sign: float, y0: np.ndarray) -> Steps | BdfSteps:
    """An empty record of the steps of a solve from ``(start, y0)``."""
    return BdfSteps(start, sign, y0) if method == "BDF" else Steps(method, start, sign)


def through_steps_vjp(
    dyn: Any, steps: Steps | BdfSteps, ts: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The cotangents of ``y0`` and ``θ`` of ``Σ_{i>0} g_i · y(t_i)``, by the reverse pass
    through the recorded steps."""
    if isinstance(steps, BdfSteps):
        return bdf_vjp(dyn, steps, ts, g)
    n = dyn.n
    index, weights = steps.placed(ts)
    ybar = np.zeros(n)
    nonzero = np.flatnonzero(np.any(g[1:] != 0, axis=1))
    if len(nonzero) == 0:
        return ybar, np.zeros(len(dyn.theta))
    products = SolverTime(dyn, steps)
    pull = products.pull
    step_vjp = _radau_step_vjp if steps.implicit else _explicit_step_vjp
    carry = np.zeros(n)  # explicit: the next step's K[0] cotangent (this step's K[-1])
    for k in range(int(index[nonzero[-1]]), -1, -1):  # ybar: the cotangent of y_new
        stages_bar = np.zeros_like(steps.stages[k])
        ybar_old = np.zeros(n)
        here = np.flatnonzero(index == k)
        if len(here):  # the outputs y_old + (stages)ᵀ weights
            gs = g[1:][here]
            stages_bar += weights[here].T @ gs
            ybar_old += gs.sum(axis=0)
        ybar, carry = step_vjp(dyn, steps, k, pull, ybar, stages_bar, ybar_old, carry)
    if carry.any():  # the first step's K[0] = f(t0, y0)
        ybar = ybar + pull(steps.t_old[0], steps.y_old[0], carry, steps.stages[0][0])
    thetabar = products.thetabar
    if not (np.isfinite(ybar).all() and np.isfinite(thetabar).all()):
        raise failure(
            f"the adjoint through the {steps.method} steps met a non-finite derivative (NaN or inf)"
        )
    return ybar, thetabar


def _explicit_step_vjp(dyn, steps, k, pull, ybar, kbar, ybar_old, carry):
    """Step ``k`` of an explicit method backwards: ``ybar`` (of ``y_new``) and ``kbar`` (of
    its stages, from its outputs) to the cotangent of ``y_old`` and the carry."""
    method = RECORDED[steps.method]
    A, B, C, n_stages = method.A, method.B, method.C, method.n_stages
    t_old, h, y_old, K = steps.t_old[k], steps.h[k], steps.y_old[k], steps.stages[k]
    kbar[-1] += carry  # K[-1] = f(t_old + h, y_new)
    if kbar[-1].any():
        ybar = ybar + pull(t_old + h, steps.y_new[k], kbar[-1], K[-1])
    ybar_old += ybar  # y_new = y_old + h Σ b_i K_i
    kbar[:n_stages] += h * np.outer(B, ybar)
    for i in range(n_stages - 1, 0, -1):  # K_i = f(t_old + c_i h, y_old + h Σ a_ij K_j)
        if not kbar[i].any():
            continue
        # (the stage's value is what the solve's forward returned there: same arguments)
        ybar_i = pull(t_old + C[i] * h, y_old + h * (K[:i].T @ A[i, :i]), kbar[i], K[i])
        ybar_old += ybar_i
        kbar[:i] += h * np.outer(A[i, :i], ybar_i)
    return ybar_old, kbar[0]


def _radau_step_vjp(dyn, steps, k, pull, ybar, zbar, ybar_old, carry):
    """Step ``k`` of Radau IIA backwards (see the module's docstring)."""
    t_old, h, y_old, Z = steps.t_old[k], steps.h[k], steps.y_old[k], steps.stages[k]
    ybar_old += ybar  # y_new = y_old + Z[-1]
    zbar[-1] += ybar
    times = t_old + h * _radau.C
    system = _collocation(dyn, steps, times, y_old + Z, h)
    v = (h * RADAU_A.T) @ solved(
        system.T, zbar.ravel(), "the adjoint through the Radau steps"
    ).reshape(3, -1)
    for j in range(3):
        ybar_old += pull(times[j], y_old + Z[j], v[j])
    return ybar_old, carry


def _collocation(dyn, steps, times, stages, h):
    """``I - h (A ⊗ I) diag(J_j)`` at the step's stages (sparse if the Jacobians are)."""
    jacobians = [
        steps.sign * dyn.jac_y(steps.start + steps.sign * s, y) for s, y in zip(times, stages)
    ]
    n = stages.shape[1]
    if any(scipy.sparse.issparse(j) for j in jacobians):
        blocks = scipy.sparse.block_diag([scipy.sparse.csr_array(j) for j in jacobians])
        coupling = scipy.sparse.kron(scipy.sparse.csr_array(h * RADAU_A), scipy.sparse.eye(n))
        return (scipy.sparse.eye(3 * n) - coupling @ blocks).tocsc()
    coupling = np.kron(h * RADAU_A, np.eye(n))
    return np.eye(3 * n) - coupling @ scipy.linalg.block_diag(*jacobians)


def through_steps_jvp(
    dyn: Any, steps: Steps | BdfSteps, ts: np.ndarray, v0: np.ndarray, dtheta: np.ndarray
) -> np.ndarray:
    """The tangents of the outputs after the first, ``(k - 1, n)``, along ``v(t0) = v0``
    and ``θ̇``, by the forward pass through the recorded steps."""
    if isinstance(steps, BdfSteps):
        return bdf_jvp(dyn, steps, ts, v0, dtheta)
    index, weights = steps.placed(ts)
    out = np.empty((len(index), dyn.n))
    last = int(index.max()) if len(index) else -1
    push = SolverTime(dyn, steps, dtheta).push
    step_jvp = _radau_step_jvp if steps.implicit else _explicit_step_jvp
    v = v0
    explicit = not steps.implicit
    carry = push(steps.t_old[0], steps.y_old[0], v0) if explicit and last >= 0 else None
    for k in range(last + 1):
        v_new, stages_dot, carry = step_jvp(dyn, steps, k, push, v, carry)
        here = np.flatnonzero(index == k)
        if len(here):
            out[here] = v + weights[here] @ stages_dot
        v = v_new
    if not np.isfinite(out).all():
        raise failure(
            f"the tangent through the {steps.method} steps met a non-finite derivative (NaN or inf)"
        )
    return out


def _explicit_step_jvp(dyn, steps, k, push, v, kdot0):
    method = RECORDED[steps.method]
    A, B, C, n_stages = method.A, method.B, method.C, method.n_stages
    t_old, h, y_old, K = steps.t_old[k], steps.h[k], steps.y_old[k], steps.stages[k]
    kdot = np.empty_like(K)
    kdot[0] = kdot0
    for i in range(1, n_stages):
        kdot[i] = push(
            t_old + C[i] * h, y_old + h * (K[:i].T @ A[i, :i]), v + h * (kdot[:i].T @ A[i, :i])
        )
    v_new = v + h * (kdot[:n_stages].T @ B)
    kdot[-1] = push(t_old + h, steps.y_new[k], v_new)
    return v_new, kdot, kdot[-1]


def _radau_step_jvp(dyn, steps, k, push, v, carry):
    t_old, h, y_old, Z = steps.t_old[k], steps.h[k], steps.y_old[k], steps.stages[k]
    times = t_old + h * _radau.C
    system = _collocation(dyn, steps, times, y_old + Z, h)
    u = np.stack([push(times[j], y_old + Z[j], v) for j in range(3)])
    zdot = solved(
        system, ((h * RADAU_A) @ u).ravel(), "the tangent through the Radau steps"
    ).reshape(3, -1)
    return v + zdot[-1], zdot, carry
