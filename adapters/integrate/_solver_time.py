"""The rhs's derivatives in a solver's own time ``s = sign (t - start)``, where SciPy took
the steps that ``_steps`` and ``_bdf`` differentiate: the products their passes make."""

from __future__ import annotations

from typing import Any

import numpy as np


class SolverTime:
    """Products with the derivatives of the solver's ``sign f(start + sign s, y, θ)``, along
    ``θ̇`` (``dtheta``) forwards; ``thetabar`` sums the reverse products' cotangents of ``θ``."""

    def __init__(self, dyn: Any, steps: Any, dtheta: np.ndarray | None = None) -> None:
        self.dyn, self.start, self.sign, self.dtheta = dyn, steps.start, steps.sign, dtheta
        self.thetabar = np.zeros(len(dyn.theta))

    def pull(
        self, s: float, y: np.ndarray, cotangent: np.ndarray, f: np.ndarray | None = None
    ) -> np.ndarray:
        """The cotangent of ``y``; ``f``: the solver's derivative there, where known."""
        ybar, thetabar = self.dyn.vjp(
            self.start + self.sign * s,
            y,
            self.sign * cotangent,
            None if f is None else self.sign * f,
        )
        self.thetabar = self.thetabar + thetabar
        return ybar

    def push(self, s: float, y: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The tangent of the solver's derivative along ``v`` and ``θ̇``."""
        return self.sign * self.dyn.jvp(self.start + self.sign * s, y, v, self.dtheta)
