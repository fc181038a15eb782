"""What the drivers of SciPy's own minimisation loops share (``_lbfgsb``, ``_bfgs``): the
SciPy versions whose private code they follow, and the objective evaluated as SciPy's
wrappers evaluate it, once per new point. Host code only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._shared._scipy_version import checked_against

TESTED = ((1, 15), (1, 16), (1, 17), (1, 18))
"""SciPy versions whose loops the drivers follow (each checked against
``scipy.optimize.minimize``); under any other, ``scipy.optimize.minimize`` itself is
called."""


def followed() -> bool:
    """Whether the installed SciPy is one of ``TESTED``."""
    return checked_against(TESTED)


class Evaluations:
    """``fun_and_grad`` at the last point asked about, called once per new point (as SciPy's
    ``ScalarFunction`` over ``MemoizeJac`` calls it), with SciPy's counts of each kind: a
    value or a gradient counts when it is first asked for at a new point."""

    def __init__(self, fun_and_grad: Any, x0: np.ndarray):
        self.fun_and_grad = fun_and_grad
        self.x = x0.copy()
        self.f, self.g = fun_and_grad(x0.copy())
        self.nfev, self.ngev = 1, 1
        self.f_fresh, self.g_fresh = True, True  # whether SciPy would count it as asked

    def _at(self, x: np.ndarray) -> None:
        # (np.array_equal, less its checks of type)
        if not (x.shape == self.x.shape and (x == self.x).all()):
            self.x = np.array(x, np.float64)
            self.f, self.g = self.fun_and_grad(self.x.copy())
            self.f_fresh = self.g_fresh = False

    def value(self, x: np.ndarray) -> float:
        self._at(x)
        if not self.f_fresh:
            self.nfev, self.f_fresh = self.nfev + 1, True
        return self.f

    def gradient(self, x: np.ndarray) -> np.ndarray:
        self._at(x)
        if not self.g_fresh:
            self.ngev, self.g_fresh = self.ngev + 1, True
        return self.g
