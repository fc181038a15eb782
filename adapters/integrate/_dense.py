"""A solve's dense output as the adjoint and the tangent read it: ``y(t)``, one time at a
time, thousands of times per backward.

SciPy's ``OdeSolution`` finds the step by a binary search and evaluates its polynomial
through generic array code (``np.tile``, shape checks): 11-21 µs a call here, against a
few µs for the arithmetic. The integrations that read it move through the steps in order,
so the step of the last call is checked first; the polynomials of the methods the
adjoint meets most (RK45, RK23, Radau, BDF) are evaluated by SciPy's own operations in
SciPy's own order, so every value is SciPy's to the bit (tested); other steps (DOP853's,
LSODA's) are asked for theirs. Under a SciPy version whose classes this was not checked
against, the solution is asked for every value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._shared._scipy_version import checked_against

FOLLOWED = checked_against(((1, 15), (1, 16), (1, 17), (1, 18)))
"""Whether SciPy's ``OdeSolution`` and dense-output classes are those read here (their code
is the same in each of these versions)."""

if FOLLOWED:  # (private modules: imported only where their layout is known)
    from scipy.integrate._ivp.bdf import BdfDenseOutput
    from scipy.integrate._ivp.radau import RadauDenseOutput
    from scipy.integrate._ivp.rk import RkDenseOutput


class Interpolant:
    """A solve's dense output as a function of ``t`` (the solver ran in ``|t - start|``).

    The last few values are remembered: an implicit method's Newton iterations ask for
    the same times again (Radau: each of its three stages per iteration).
    """

    def __init__(self, solution: Any, start: float, sign: float) -> None:
        self.solution, self.start, self.sign = solution, start, sign
        self._recent: dict[float, np.ndarray] = {}
        if FOLLOWED:
            # the solver's time runs upwards from 0, so its steps' ends ascend
            self._ends = [float(s) for s in solution.ts]
            self._left = solution.side == "left"  # which step owns a time at a step's end
            self._step = len(self._ends) - 2  # the adjoint starts at the end

    def __call__(self, t: float) -> np.ndarray:
        y = self._recent.get(t)
        if y is None:
            if len(self._recent) >= 8:
                self._recent.clear()
            s = self.sign * (t - self.start)
            if FOLLOWED:
                y = _evaluate(self.solution.interpolants[self._find(s)], s)
            else:
                y = self.solution(s)
            self._recent[t] = y
        return y

    def _find(self, s: float) -> int:
        """The step ``OdeSolution`` would evaluate at ``s`` (its ``searchsorted``, clamped
        at both ends): the last call's step or a neighbour, else by a binary search."""
        last = len(self._ends) - 2
        for i in (self._step, self._step - 1, self._step + 1):
            if 0 <= i <= last and self._owns(i, s):
                self._step = i
                return i
        side = "left" if self._left else "right"
        i = min(max(int(np.searchsorted(self.solution.ts, s, side=side)) - 1, 0), last)
        self._step = i
        return i

    def _owns(self, i: int, s: float) -> bool:
        """Whether step ``i`` holds ``s``, its start or its end by ``OdeSolution``'s rule
        (the first and last steps also what lies beyond them: the search clamps)."""
        ends = self._ends
        above = i == 0 or (ends[i] < s if self._left else ends[i] <= s)
        below = i == len(ends) - 2 or (s <= ends[i + 1] if self._left else s < ends[i + 1])
        return above and below


def _evaluate(step: Any, s: float) -> np.ndarray:
    """``step(s)`` as SciPy computes it for a scalar time, less its generic array code."""
    kind = type(step)
    if kind is RkDenseOutput or kind is RadauDenseOutput:
        x = (s - step.t_old) / step.h
        y = np.dot(step.Q, np.cumprod(np.full(step.order + 1, x)))
        if kind is RkDenseOutput:  # (Radau's Q has the step size in it already)
            y = step.h * y
        y += step.y_old
        return y
    if kind is BdfDenseOutput:
        y = np.dot(step.D[1:].T, np.cumprod((s - step.t_shift) / step.denom))
        y += step.D[0]
        return y
    return step(s)
