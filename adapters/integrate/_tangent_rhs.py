"""``TangentRhs``: an ODE with its directional sensitivity, ``(y, ẏ)' = (f, ∂f/∂y ẏ + ∂f/∂θ θ̇)``,
as the right-hand side of a larger ODE, for the second-order rules (``_second_order``).

Its state is ``z = (y, ẏ)`` (2n), its parameters ``φ = (θ, θ̇)`` (2p). Its ``backward`` needs
how ``f``'s ``backward`` moves along ``(ẏ, θ̇)``: the rhs's own ``backward_jvp``, or
differences of its exact ``backward`` (``_second_derivatives``). Host methods only: an
``OdeSolve`` of it is differentiated once, never twice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse

import jaxbridge as jb

from .._shared._user_function import UserFunction
from ._ode import jacobian_hook
from ._second_derivatives import STEP, backward_jvp


class TangentRhs(jb.Adapter):
    """``F(t, (y, ẏ), (θ, θ̇)) = (f(t, y, θ), ∂f/∂y ẏ + ∂f/∂θ θ̇)`` for the user's ``rhs``."""

    rhs: jb.Adapter

    signature = "(),(m),(q)->(m)"

    @property
    def jacobian(self) -> Any:
        """``∂F/∂z``, where the rhs has a ``jacobian`` hook: ``[[J, 0], [L, J]]`` with ``L``
        the derivative of ``J`` along ``(ẏ, θ̇)`` (differences of the hook, extrapolated);
        otherwise no hook (``∂F/∂z`` from ``backward`` calls, as for any rhs)."""
        if jacobian_hook(self.rhs) is None:
            raise AttributeError("jacobian")  # (so that getattr(..., None) finds none)
        return self._jacobian

    def _host(self, n: int) -> UserFunction:
        return UserFunction(self.rhs, "OdeSolve's rhs", (n,))

    def forward(self, t, z, phi):
        n, p = len(z) // 2, len(phi) // 2
        host = self._host(n)
        args = (np.asarray(t, np.float64), np.asarray(z[:n], np.float64), phi[:p])
        f = host.value(*args)
        df = host.jvp(args, (None, np.asarray(z[n:], np.float64), phi[p:]))
        return np.concatenate([f, df])

    def backward(self, res, g):
        t, z, phi = (np.asarray(a, np.float64) for a in res[:3])
        n, p = len(z) // 2, len(phi) // 2
        host = self._host(n)
        args = (t, z[:n], phi[:p])
        lam, mu = np.asarray(g[:n], np.float64), np.asarray(g[n:], np.float64)
        value = host.value(*args)
        tbar, ybar, thetabar = host.pullback((*args, value), lam, 3)
        _, dybar, dvbar = host.pullback((*args, value), mu, 3)
        # how μᵀ ∂f/∂(t, y, θ) moves along (ẏ, θ̇): the terms in f's second derivatives
        second = backward_jvp(host, args, mu, (None, z[n:], phi[p:]))
        return (
            tbar + second[0],
            np.concatenate([ybar + second[1], dybar]),
            np.concatenate([thetabar + second[2], dvbar]),
        )

    def _jacobian(self, t, z, phi):
        n, p = len(z) // 2, len(phi) // 2
        hook = jacobian_hook(self.rhs)
        assert hook is not None
        t = np.asarray(t, np.float64)
        y, dy = np.asarray(z[:n], np.float64), np.asarray(z[n:], np.float64)
        theta, dtheta = np.asarray(phi[:p], np.float64), np.asarray(phi[p:], np.float64)
        jy = hook(t, y, theta)
        size = max(
            float(np.max(np.abs(dy), initial=0.0)), float(np.max(np.abs(dtheta), initial=0.0))
        )
        if size == 0.0:
            lower = jy * 0.0
        else:
            scale = max(
                1.0,
                float(np.max(np.abs(y), initial=0.0)),
                float(np.max(np.abs(theta), initial=0.0)),
            )
            h = STEP * scale / size

            def at(step: float) -> Any:
                return hook(t, y + step * dy, theta + step * dtheta)

            lower = (8 * (at(h / 2) - at(-h / 2)) - (at(h) - at(-h))) / (6 * h)
        if scipy.sparse.issparse(jy) or scipy.sparse.issparse(lower):
            return scipy.sparse.bmat([[jy, None], [lower, jy]], format="csc")
        jy = np.asarray(jy, np.float64)
        return np.block([[jy, np.zeros((n, n))], [np.asarray(lower), jy]])


def _largest(x: np.ndarray) -> float:
    return float(np.max(np.abs(x), initial=0.0))
