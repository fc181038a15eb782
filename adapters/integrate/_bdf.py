"""Derivatives of a BDF solve through the steps SciPy took (``sensitivity="steps"``).

SciPy's BDF (variable order 1-5, quasi-constant step size) keeps the solution as the
modified divided differences ``D`` of its interpolating polynomial at spacing ``h``. Once
its orders and step sizes are chosen, one accepted step is a fixed map of ``D``:

- a change of spacing to the step's ``h`` (every rescaling the step made, rejected attempts
  included, composes to one): ``D ← (R U)ᵀ D`` over its first ``q + 1`` rows, ``R U`` of
  the ratio of the sizes (SciPy's ``compute_R``);
- the prediction ``y_p = Σ_{i≤q} D_i`` and ``ψ = Σ_{1≤i≤q} γ_i D_i / α_q``;
- the correction ``d``, which solves ``d = c f(t_new, y_p + d) - ψ`` with ``c = h / α_q``
  (differentiated by the implicit function theorem: ``(I - c J)`` at ``y_new``);
- the new differences ``D_{q+1} = d``, ``D_i = Σ_{i≤j≤q} D_j + d``; row 0 is ``y_new``.

The solve starts from ``D = [y0, h₀ f(t0, y0)]``, and ``solve_ivp`` reads the outputs off
the polynomial of each step's end, ``D_0 + Σ_i D_i Π_{j<i} (s - t_new + j h')/((j + 1) h')``,
in the next step's spacing ``h'`` and order. The backward and the forward mode differentiate
this map exactly, with the step sizes and orders held as the solver chose them
(discretise-then-optimise): per step one Jacobian ``∂f/∂y`` (the rhs's ``jacobian`` hook,
or ``n`` backward calls), a linear solve of ``n`` unknowns and one product with the rhs's
derivatives; no integration of their own.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.integrate
import scipy.sparse

from .._shared._scipy_version import STEPS_FOLLOWED
from ._checks import failure
from ._lapack import direct, solved
from ._solver_time import SolverTime

if STEPS_FOLLOWED:  # (a private module: imported only where its layout is known)
    from scipy.integrate._ivp.bdf import compute_R


@functools.cache
def _unit(order: int) -> np.ndarray:
    return compute_R(order, 1.0)


def _respaced(order: int, ratio: float) -> np.ndarray:
    """``R U``: SciPy's change of the differences' spacing by ``ratio``, ``D ← (R U)ᵀ D``."""
    if ratio == 1.0:
        return np.eye(order + 1)
    return compute_R(order, ratio) @ _unit(order)


@dataclass
class BdfSteps:
    """The accepted steps of one BDF solve, in the solver's own time ``s = sign (t -
    start)``: the first step size ``h0`` (``D_1 = h0 f(t0, y0)``) and the solver's
    coefficients ``γ`` and ``α``, and per step its start, end, size, order and new state,
    and the spacing and order its end's polynomial has."""

    start: float
    sign: float
    y0: np.ndarray
    h0: float = 0.0
    gamma: np.ndarray = field(default_factory=lambda: np.zeros(0))
    alpha: np.ndarray = field(default_factory=lambda: np.zeros(0))
    t_old: list[float] = field(default_factory=list)
    t_new: list[float] = field(default_factory=list)
    h: list[float] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    y_new: list[np.ndarray] = field(default_factory=list)
    h_next: list[float] = field(default_factory=list)
    order_next: list[int] = field(default_factory=list)

    method = "BDF"

    def solver(self) -> type:
        """SciPy's BDF class, recording each accepted step here."""
        steps = self

        class Recording(direct(scipy.integrate.BDF)):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                steps.h0 = self.h_abs  # (the solver's time runs forwards: direction 1)
                steps.gamma, steps.alpha = self.gamma, self.alpha

            def _step_impl(self) -> tuple[bool, Any]:
                t, order = self.t, self.order
                accepted, message = super()._step_impl()
                if accepted:
                    steps.t_old.append(t)
                    steps.t_new.append(self.t)
                    steps.h.append(self.t - t)
                    steps.order.append(int(order))
                    steps.y_new.append(self.y)
                    steps.h_next.append(self.h_abs)
                    steps.order_next.append(int(self.order))
                return accepted, message

        return Recording

    @property
    def nbytes(self) -> int:
        return sum(y.nbytes for y in self.y_new)

    def placed(self, ts: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """For each output time after the first, the step whose end's polynomial gave it
        (``solve_ivp``: the first step that ends at or after it) and the weights of that
        polynomial's differences there, ``(1, p_1, ..., p_q')``."""
        ends = np.asarray(self.t_new)
        s = np.minimum(self.sign * (ts[1:] - self.start), ends[-1])
        index = np.minimum(np.searchsorted(ends, s, side="left"), len(ends) - 1)
        weights = []
        for s_i, k in zip(s, index):
            h, q = self.h_next[k], self.order_next[k]
            x = (s_i - (ends[k] - h * np.arange(q))) / (h * (1 + np.arange(q)))
            weights.append(np.concatenate([[1.0], np.cumprod(x)]))
        return index, weights

    def _end(self, k: int) -> tuple[int, np.ndarray]:
        """The order of step ``k``'s end polynomial, and the respacing of the state after
        the step to it (the outputs are read from it)."""
        q = self.order_next[k]
        return q, _respaced(q, self.h_next[k] / self.h[k])

    def _ratio(self, k: int) -> float:
        """The step's size over the spacing its state came in (the last step's size)."""
        return self.h[k] / (self.h[k - 1] if k else self.h0)

    def _corrector(self, dyn: Any, k: int) -> tuple[Any, float]:
        """``I - c J`` at step ``k``'s new state (sparse if the Jacobian is), and ``c``."""
        q = self.order[k]
        c = self.h[k] / self.alpha[q]
        jacobian = self.sign * dyn.jac_y(self.start + self.sign * self.t_new[k], self.y_new[k])
        if scipy.sparse.issparse(jacobian):
            return (scipy.sparse.eye(dyn.n) - c * jacobian).tocsc(), c
        return np.eye(dyn.n) - c * jacobian, c


def bdf_vjp(
    dyn: Any, steps: BdfSteps, ts: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The cotangents of ``y0`` and ``θ`` of ``Σ_{i>0} g_i · y(t_i)``, by the reverse pass
    through the recorded steps."""
    n = dyn.n
    index, weights = steps.placed(ts)
    nonzero = np.flatnonzero(np.any(g[1:] != 0, axis=1))
    if len(nonzero) == 0:
        return np.zeros(n), np.zeros(len(dyn.theta))
    products = SolverTime(dyn, steps)
    pull = products.pull
    last = int(index[nonzero[-1]])
    sbar = np.zeros((steps.order[last] + 2, n))  # the cotangent of the state after a step
    for k in range(last, -1, -1):
        q = steps.order[k]
        here = np.flatnonzero(index == k)  # outputs from the polynomial of its end
        if len(here):
            q_end, respaced = steps._end(k)
            for i in here:
                sbar[: q_end + 1] += respaced @ np.outer(weights[i], g[i + 1])
        # the state after the step from the step's differences D and its correction d
        dbar = sbar.sum(axis=0)
        differences_bar = np.cumsum(sbar[: q + 1], axis=0)
        if dbar.any():
            corrector, c = steps._corrector(dyn, k)
            w = solved(corrector.T, dbar, "the adjoint through the BDF steps")
            differences_bar += pull(steps.t_new[k], steps.y_new[k], c * w)  # through y_p
            differences_bar[1:] -= np.outer(steps.gamma[1 : q + 1] / steps.alpha[q], w)  # through ψ
        previous = steps.order[k - 1] + 2 if k else 2
        sbar = np.zeros((previous, n))
        sbar[: q + 1] = _respaced(q, steps._ratio(k)) @ differences_bar
    # the first state, [y0, h0 f(t0, y0)]
    ybar = sbar[0] + pull(0.0, steps.y0, steps.h0 * sbar[1])
    thetabar = products.thetabar
    if not (np.isfinite(ybar).all() and np.isfinite(thetabar).all()):
        raise failure("the adjoint through the BDF steps met a non-finite derivative (NaN or inf)")
    return ybar, thetabar


def bdf_jvp(
    dyn: Any, steps: BdfSteps, ts: np.ndarray, v0: np.ndarray, dtheta: np.ndarray
) -> np.ndarray:
    """The tangents of the outputs after the first, ``(k - 1, n)``, along ``v(t0) = v0``
    and ``θ̇``, by the forward pass through the recorded steps."""
    index, weights = steps.placed(ts)
    out = np.empty((len(index), dyn.n))
    last = int(index.max()) if len(index) else -1
    if last < 0:
        return out
    push = SolverTime(dyn, steps, dtheta).push
    state = np.stack([v0, steps.h0 * push(0.0, steps.y0, v0)])
    for k in range(last + 1):
        q = steps.order[k]
        differences = _respaced(q, steps._ratio(k)).T @ state[: q + 1]
        predicted = differences.sum(axis=0)
        psi = steps.gamma[1 : q + 1] @ differences[1:] / steps.alpha[q]
        corrector, c = steps._corrector(dyn, k)
        d = solved(
            corrector,
            c * push(steps.t_new[k], steps.y_new[k], predicted) - psi,
            "the tangent through the BDF steps",
        )
        state = np.empty((q + 2, dyn.n))
        state[q + 1] = d
        state[: q + 1] = np.cumsum(differences[::-1], axis=0)[::-1] + d
        here = np.flatnonzero(index == k)
        if len(here):
            q_end, respaced = steps._end(k)
            end = respaced.T @ state[: q_end + 1]  # the end polynomial's differences
            for i in here:
                out[i] = weights[i] @ end
    if not np.isfinite(out).all():
        raise failure("the tangent through the BDF steps met a non-finite derivative (NaN or inf)")
    return out
