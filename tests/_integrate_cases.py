"""Right-hand sides and integrands for the ``scipy.integrate`` adapters' tests: small
``Adapter``s with hand-written host derivatives, each checked by ``check_adapter`` itself
(``test_rhs_and_integrands_pass_check_adapter``)."""

from __future__ import annotations

import numpy as np

import jaxbridge as jb

# Robertson's rate constants (k1, k2, k3), and the test-set reference solution at t = 40:
# Hairer & Wanner, "Solving Ordinary Differential Equations II" (2nd ed., Springer 1996),
# problem ROBER of their test set. Its components sum to 1 - 6.8e-13 where the exact
# solution conserves 1 exactly, so it is good to about 1e-12; a Radau solve at rtol 1e-12
# here agrees with it to 2.1e-12 (relative) in every component.
ROBERTSON_RATES = (0.04, 3.0e7, 1.0e4)
ROBERTSON_AT_40 = (0.7158270687193306, 9.185534764557338e-06, 0.2841637457452280)


class RobertsonNoJacobian(jb.Adapter):
    """Robertson's stiff kinetics; ``theta`` is the log of the rate constants."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        k1, k2, k3 = np.exp(theta)
        y1, y2, y3 = y
        return np.array([-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2**2 - k3 * y2 * y3, k2 * y2**2])

    def backward(self, res, g):
        t, y, theta, _ = res
        k1, k2, k3 = np.exp(theta)
        y1, y2, y3 = y
        by_log_rate = np.array(  # ∂f/∂log k
            [
                [-k1 * y1, 0.0, k3 * y2 * y3],
                [k1 * y1, -(k2 * y2**2), -k3 * y2 * y3],
                [0.0, k2 * y2**2, 0.0],
            ]
        )
        return None, g @ _robertson_jacobian(y, theta), g @ by_log_rate


class Robertson(RobertsonNoJacobian):
    """Robertson's kinetics with the host Jacobian hook the implicit methods use."""

    def jacobian(self, t, y, theta):
        return _robertson_jacobian(y, theta)


def _robertson_jacobian(y, theta):
    k1, k2, k3 = np.exp(theta)
    _, y2, y3 = y
    return np.array(
        [
            [-k1, k3 * y3, k3 * y2],
            [k1, -2 * k2 * y2 - k3 * y3, -k3 * y2],
            [0.0, 2 * k2 * y2, 0.0],
        ]
    )


class Decay(jb.Adapter):
    """``y' = -k y`` with ``theta = (k,)``: ``y(t) = y0 exp(-k (t - t0))``."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        return -theta[0] * y

    def backward(self, res, g):
        _, y, theta, _ = res
        return None, -theta[0] * g, np.array([-(g @ y)])


class VectorizedDecay(jb.Adapter):
    """``Decay`` written for leading batch axes (``vectorized``): the Jacobian then comes
    from one backward call on a stack of unit cotangents."""

    signature = "(),(n),(p)->(n)"
    vectorized = True

    def forward(self, t, y, theta):
        return -theta[..., :1] * y

    def backward(self, res, g):
        _, y, theta, _ = res
        return None, -theta[..., :1] * g, -np.sum(g * y, axis=-1, keepdims=True)


class Rotation(jb.Adapter):
    """``y' = A y`` with ``A = [[-a, w], [-w, -a]]``, ``theta = (a, w)``: a damped rotation,
    solved exactly by ``expm(A (t - t0)) y0``."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        return rotation_matrix(theta) @ y

    def backward(self, res, g):
        _, y, _, _ = res
        by_a = -(g @ y)
        by_w = g[0] * y[1] - g[1] * y[0]
        return None, rotation_matrix(res[2]).T @ g, np.array([by_a, by_w])

    def jvp(self, res, tangents):
        _, y, theta, _ = res
        _, dy, dtheta = tangents
        out = np.zeros(2)
        if dy is not None:
            out += rotation_matrix(theta) @ dy
        if dtheta is not None:
            out += np.array([[-y[0], y[1]], [-y[1], -y[0]]]) @ dtheta
        return out


def rotation_matrix(theta):
    a, w = theta
    return np.array([[-a, w], [-w, -a]])


class Damped(jb.Adapter):
    """A nonlinear, dissipative, time-dependent right-hand side for any ``n`` and ``p``:
    ``f = -y - y³/3 + sin(t) s + cos(s) reverse(y) / 2`` with ``s = Σ θ``."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        s = np.sum(theta)
        return -y - y**3 / 3 + np.sin(t) * s + 0.5 * np.cos(s) * y[::-1]

    def backward(self, res, g):
        t, y, theta, _ = res
        s = np.sum(theta)
        ybar = -(1 + y**2) * g + 0.5 * np.cos(s) * g[::-1]
        sbar = np.sin(t) * np.sum(g) - 0.5 * np.sin(s) * (g @ y[::-1])
        return np.cos(t) * s * np.sum(g), ybar, np.full(theta.shape, sbar)


class BlowUp(jb.Adapter):
    """``y' = y²``: from ``y0 = 1`` at ``t = 0`` the solution ``1 / (1 - t)`` blows up at 1."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        with np.errstate(over="ignore"):  # it does overflow: that is the point
            return y**2

    def backward(self, res, g):
        _, y, theta, _ = res
        return None, 2 * y * g, np.zeros(theta.shape)


class BadDerivative(Decay):
    """``Decay`` whose backward gives NaN before ``t = 0.5``: the solve succeeds, the
    adjoint's integration cannot."""

    def backward(self, res, g):
        t = res[0]
        cts = super().backward(res, g)
        return cts if t >= 0.5 else (None, np.full(g.shape, np.nan), cts[2])


class GaussianCosine(jb.Adapter):
    """``exp(-x²) cos(s x)`` with ``s = Σ θ``; over the real line it integrates to
    ``√π exp(-s²/4)``."""

    signature = "(),(p)->()"

    def forward(self, x, theta):
        return np.exp(-(x**2)) * np.cos(np.sum(theta) * x)

    def backward(self, res, g):
        x, theta, f = res
        s = np.sum(theta)
        by_s = -np.exp(-(x**2)) * np.sin(s * x) * x
        by_x = -2 * x * f - np.exp(-(x**2)) * np.sin(s * x) * s
        return g * by_x, np.full(theta.shape, g * by_s)


class Exponential(jb.Adapter):
    """``exp(θ x)`` (``p = 1``)."""

    signature = "(),(p)->()"

    def forward(self, x, theta):
        return np.exp(theta[0] * x)

    def backward(self, res, g):
        x, theta, f = res
        return g * theta[0] * f, np.array([g * x * f])


class Reciprocal(jb.Adapter):
    """``1 / x``, whose integral over [0, 1] diverges."""

    signature = "(),(p)->()"

    def forward(self, x, theta):
        return 1 / x

    def backward(self, res, g):
        x, theta, _ = res
        return -g / x**2, np.zeros(theta.shape)


class BadGradient(GaussianCosine):
    """``GaussianCosine`` whose ``∂f/∂θ`` is NaN for ``x > 1``."""

    def backward(self, res, g):
        by_x, by_theta = super().backward(res, g)
        return by_x, by_theta if res[0] <= 1 else np.full(by_theta.shape, np.nan)


class VanDerPol(jb.Adapter):
    """Van der Pol's oscillator, ``y1' = y2``, ``y2' = μ (1 - y1²) y2 - y1``; ``theta =
    [log μ]``. At μ = 1000 (MATLAB's vdp1000) it is stiff, with jumps of width 1/μ."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        mu = np.exp(theta[0])
        y1, y2 = y
        return np.array([y2, mu * (1 - y1**2) * y2 - y1])

    def jacobian(self, t, y, theta):
        mu = np.exp(theta[0])
        y1, y2 = y
        return np.array([[0.0, 1.0], [-2 * mu * y1 * y2 - 1, mu * (1 - y1**2)]])

    def backward(self, res, g):
        t, y, theta, _ = res
        mu = np.exp(theta[0])
        y1, y2 = y
        return None, g @ self.jacobian(t, y, theta), np.array([g[1] * mu * (1 - y1**2) * y2])
