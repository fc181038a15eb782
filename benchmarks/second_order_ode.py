"""What does a second derivative through ``OdeSolve`` cost, beside the gradient?

For BDF on Robertson's kinetics (3 unknowns, 3 parameters: the log rates) and on a linear
chain of 20 unknowns and 20 parameters (``y_i' = k_{i-1} y_{i-1} - k_i y_i``, the log
rates), each with ``jacobian`` and ``backward_jvp`` hooks, a loss reading every output
time: ``jit`` of the gradient, of a Hessian-vector product (``jax.jvp`` of ``jax.grad``)
and of the full ``jax.hessian``; printed side by side, the Hessian-vector product ÷ the
gradient, and the Hessian ÷ p Hessian-vector products. The default sensitivity (the steps,
for BDF with a hook) and the adjoint; Robertson also without ``backward_jvp`` (the second
derivatives by differences of ``backward``). Then ``Quad`` of ``θ₁ exp(θ₀ x)`` in
``(θ, a, b)``: ``jacfwd`` of ``jacfwd`` and ``jacrev`` of ``jacfwd`` ÷ ``jax.hessian``, with
a ``backward_jvp`` hook and by differences. Medians of interleaved rounds. Not a test:
nothing is asserted.

    python benchmarks/second_order_ode.py           # 7 rounds
    python benchmarks/second_order_ode.py --quick   # 1 round, fewer rows: a smoke run
"""

from __future__ import annotations

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _timing import medians  # noqa: E402

import jaxbridge as jb  # noqa: E402
from jaxbridge.adapters.integrate import OdeSolve, Quad  # noqa: E402


class Robertson(jb.Adapter):
    """Robertson's kinetics, ``theta`` the log rate constants; a ``jacobian`` hook and a host
    ``jvp``."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        k1, k2, k3 = np.exp(theta)
        y1, y2, y3 = y
        return np.array([-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2**2 - k3 * y2 * y3, k2 * y2**2])

    def backward(self, res, g):
        _, y, theta, _ = res
        return None, g @ self.jacobian(None, y, theta), g @ _by_log_rate(y, np.exp(theta))

    def jacobian(self, t, y, theta):
        return _robertson_jacobian(y, np.exp(theta))

    def jvp(self, res, tangents):  # (the directional sensitivity's rhs in one call)
        _, y, theta, _ = res
        _, dy, dtheta = (np.zeros(np.shape(r)) if t is None else t for t, r in zip(tangents, res))
        k = np.exp(theta)
        return _robertson_jacobian(y, k) @ dy + _by_log_rate(y, k) @ dtheta


class RobertsonHooked(Robertson):
    """``Robertson`` with exact second derivatives (``backward_jvp``)."""

    def backward_jvp(self, res, g, tangents):
        _, y, theta, _ = res
        _, dy, dtheta = (np.zeros(np.shape(r)) if t is None else t for t, r in zip(tangents, res))
        k = np.exp(theta)
        dk = k * dtheta
        # backward is (Jᵀ g, Pᵀ g), both bilinear in (y, k): differentiate each factor
        dj = _robertson_jacobian(dy, k) - _k1_column(k) + _robertson_jacobian(y, dk)
        dp = _by_log_rate(y, dk) + _by_log_rate_dy(y, dy, k)
        return None, g @ dj, g @ dp


def _robertson_jacobian(y, k):
    _, y2, y3 = y
    k1, k2, k3 = k
    return np.array(
        [
            [-k1, k3 * y3, k3 * y2],
            [k1, -2 * k2 * y2 - k3 * y3, -k3 * y2],
            [0.0, 2 * k2 * y2, 0.0],
        ]
    )


def _k1_column(k):
    # (the ±k1 column of the Jacobian, which does not move with y)
    out = np.zeros((3, 3))
    out[0, 0], out[1, 0] = -k[0], k[0]
    return out


def _by_log_rate(y, k):
    y1, y2, y3 = y
    k1, k2, k3 = k
    return np.array(
        [
            [-k1 * y1, 0.0, k3 * y2 * y3],
            [k1 * y1, -(k2 * y2**2), -k3 * y2 * y3],
            [0.0, k2 * y2**2, 0.0],
        ]
    )


def _by_log_rate_dy(y, dy, k):
    y1, y2, y3 = y
    d1, d2, d3 = dy
    k1, k2, k3 = k
    cross = k3 * (d2 * y3 + y2 * d3)
    return np.array(
        [
            [-k1 * d1, 0.0, cross],
            [k1 * d1, -2 * k2 * y2 * d2, -cross],
            [0.0, 2 * k2 * y2 * d2, 0.0],
        ]
    )


class Chain(jb.Adapter):
    """``y_1' = -k_1 y_1``, ``y_i' = k_{i-1} y_{i-1} - k_i y_i``, ``theta = log k``; hooks for
    ``∂f/∂y``, a host ``jvp`` and the exact second derivatives."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        flow = np.exp(theta) * y
        out = -flow
        out[1:] += flow[:-1]
        return out

    def backward(self, res, g):
        _, y, theta, _ = res
        k, d = np.exp(theta), _downstream(g)
        return None, k * d, k * y * d

    def jacobian(self, t, y, theta):
        k = np.exp(theta)
        return np.diag(-k) + np.diag(k[:-1], -1)

    def jvp(self, res, tangents):
        _, y, theta, _ = res
        _, dy, dtheta = (np.zeros(np.shape(r)) if t is None else t for t, r in zip(tangents, res))
        return self.forward(None, dtheta * y + dy, theta)  # (f is linear in k y)

    def backward_jvp(self, res, g, tangents):
        _, y, theta, _ = res
        _, dy, dtheta = (np.zeros(np.shape(r)) if t is None else t for t, r in zip(tangents, res))
        k, d = np.exp(theta), _downstream(g)
        dk = k * dtheta
        return None, dk * d, (dk * y + k * dy) * d


def _downstream(g):
    """``g_{i+1} - g_i`` (with ``g_{n+1} = 0``): how a unit moved from ``i`` to ``i + 1`` is
    weighed."""
    d = -np.asarray(g, np.float64)
    d[:-1] += g[1:]
    return d


def rows(rounds: int, quick: bool) -> None:
    robertson = (
        "Robertson (n = p = 3)",
        jnp.array([1.0, 0.0, 0.0]),
        jnp.log(jnp.array([0.04, 3.0e7, 1.0e4])),
        jnp.array([0.0, 0.4, 4.0, 40.0]),
        jnp.array([1.0, 1.0e4, 1.0]),  # (y2 is about 1e-5)
    )
    n = 20
    chain = (
        "linear chain (n = p = 20)",
        jnp.ones(n),
        jnp.log(jnp.logspace(-1.0, 1.0, n)),
        jnp.linspace(0.0, 10.0, 5),
        jnp.ones(n),
    )
    cases = [(robertson, RobertsonHooked(), "auto"), (chain, Chain(), "auto")]
    if not quick:
        cases += [
            (robertson, RobertsonHooked(), "adjoint"),
            (robertson, Robertson(), "auto"),
            (chain, Chain(), "adjoint"),
        ]
    print(
        f"{'problem':27s} {'sensitivity':12s} {'2nd derivatives':16s} {'grad ms':>9s} "
        f"{'HVP ms':>9s} {'HVP/grad':>9s} {'hessian ms':>11s} {'H/(p HVP)':>10s}"
    )
    for (name, y0, theta, ts, scale), rhs, sensitivity in cases:
        solve = OdeSolve(rhs, method="BDF", rtol=1e-6, atol=1e-10, sensitivity=sensitivity)

        def loss(theta, solve=solve, y0=y0, ts=ts, scale=scale):
            return jnp.sum((solve(y0, theta, ts)[1:] * scale) ** 2)

        v = jnp.linspace(1.0, -1.0, theta.size)
        grad = jax.jit(jax.grad(loss))
        hvp = jax.jit(lambda theta, v, loss=loss: jax.jvp(jax.grad(loss), (theta,), (v,))[1])
        hessian = jax.jit(jax.hessian(loss))
        times = medians(
            {
                "grad": lambda grad=grad, theta=theta: grad(theta),
                "hvp": lambda hvp=hvp, theta=theta, v=v: hvp(theta, v),
                "hessian": lambda hessian=hessian, theta=theta: hessian(theta),
            },
            rounds,
        )
        how = "backward_jvp" if hasattr(rhs, "backward_jvp") else "differences"
        p = theta.size
        print(
            f"{name:27s} {solve.sensitivity_for(y0.size):12s} {how:16s} "
            f"{times['grad'] * 1e3:9.2f} {times['hvp'] * 1e3:9.2f} "
            f"{times['hvp'] / times['grad']:9.2f} {times['hessian'] * 1e3:11.2f} "
            f"{times['hessian'] / (p * times['hvp']):10.2f}"
        )


class Exp(jb.Adapter):
    """``θ₁ exp(θ₀ x)``: ``backward`` only (second derivatives by differences)."""

    signature = "(),(p)->()"

    def forward(self, x, theta):
        return theta[1] * np.exp(theta[0] * x)

    def backward(self, res, g):
        x, theta, f = res
        return g * theta[0] * f, g * np.array([x * f, np.exp(theta[0] * x)])


class ExpHooked(Exp):
    def backward_jvp(self, res, g, tangents):
        x, theta, f = res
        dtheta = tangents[1]
        e = np.exp(theta[0] * x)
        dx = theta[1] * e * dtheta[0] * (1 + theta[0] * x) + theta[0] * e * dtheta[1]
        return g * dx, g * np.array([x * (x * f * dtheta[0] + e * dtheta[1]), x * e * dtheta[0]])


def quad_rows(rounds: int) -> None:
    print(
        f"\n{'Quad (θ, a, b)':27s} {'2nd derivatives':16s} {'hessian ms':>11s} "
        f"{'fwd(fwd)/H':>11s} {'rev(fwd)/H':>11s}"
    )
    x = jnp.array([0.7, 1.3, -0.4, 1.1])
    for integrand in (ExpHooked(), Exp()):
        quad = Quad(integrand, epsabs=0.0, epsrel=1e-10)

        def value(x, quad=quad):
            return quad(x[:2], x[2], x[3])

        runs = {
            "hessian": jax.jit(jax.hessian(value)),
            "fwdfwd": jax.jit(jax.jacfwd(jax.jacfwd(value))),
            "revfwd": jax.jit(jax.jacrev(jax.jacfwd(value))),
        }
        times = medians({k: lambda f=f: f(x) for k, f in runs.items()}, rounds)
        how = "backward_jvp" if hasattr(integrand, "backward_jvp") else "differences"
        print(
            f"{'θ₁ exp(θ₀ x), p = 2':27s} {how:16s} {times['hessian'] * 1e3:11.2f} "
            f"{times['fwdfwd'] / times['hessian']:11.2f} {times['revfwd'] / times['hessian']:11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round, fewer rows")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 7, 1 with --quick)")
    options = parser.parse_args()
    rounds = options.rounds or (1 if options.quick else 7)
    rows(rounds, options.quick)
    quad_rows(rounds)


if __name__ == "__main__":
    main()
