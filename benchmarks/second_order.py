"""What do second derivatives through the implicit solvers cost, beside a gradient?

For ``Minimize`` (L-BFGS-B), ``Root`` (hybr) and ``LeastSquares`` (trf) on problems of 10 to
100 unknowns and parameters, the median times of ``jit(grad(L))``, of a Hessian-vector
product ``jit(jvp(grad(L)))`` and of the full ``jit(hessian(L))`` in the ``p`` parameters,
for ``L(θ) = Σ sin(x*(θ))``; printed beside each other, from interleaved rounds: the
product ÷ the gradient (the target: at most 4), and the Hessian ÷ ``p`` products (the
target: at most about 1). Each row also says how the second derivatives are taken: mixed
second differences of the exact gradient, or one difference of a ``hessian`` hook or of
the residual's ``backward``. Not a test: nothing is asserted.

    python benchmarks/second_order.py           # 15 rounds
    python benchmarks/second_order.py --quick   # 2 rounds, the smallest problems: a smoke run
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _timing import medians  # noqa: E402

import jaxbridge as jb  # noqa: E402
from jaxbridge.adapters.optimize import LeastSquares, Minimize, Root  # noqa: E402

# ------------------------------------------------------------------------------- problems


class Chain(jb.Adapter):
    """``Σ (θᵢ - xᵢ)² + 5 Σ (x_{i+1} - xᵢ²)² + ½|x|²``, one parameter per unknown: a
    Rosenbrock chain pulled towards ``θ``. Vectorized, exact gradient, no ``hessian``."""

    signature = "(n),(p)->()"
    vectorized = True

    def forward(self, x, t):
        r = x[..., 1:] - x[..., :-1] ** 2
        return np.sum((t - x) ** 2, -1) + 5 * np.sum(r**2, -1) + 0.5 * np.sum(x**2, -1)

    def backward(self, res, g):
        x, t, _ = res
        head, r = x[..., :-1], x[..., 1:] - x[..., :-1] ** 2
        gx = -2 * (t - x) + x
        gx = gx + np.concatenate([-20 * r * head, np.zeros(x.shape[:-1] + (1,))], -1)
        gx = gx + np.concatenate([np.zeros(x.shape[:-1] + (1,)), 10 * r], -1)
        g = np.asarray(g)[..., None]
        return g * gx, g * 2 * (t - x)


class HookedChain(Chain):
    """The same with an exact ``hessian`` hook (and looped: one point per call)."""

    vectorized = False

    def hessian(self, x, t):
        head, r = x[:-1], x[1:] - x[:-1] ** 2
        diagonal = np.full(len(x), 3.0)
        diagonal[:-1] += -20 * r + 40 * head**2
        diagonal[1:] += 10
        off = -20 * head
        return np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1), -2 * np.eye(len(x))


class Cubic(jb.Adapter):
    """``xᵢ + xᵢ³/10 + (x_{i-1} + x_{i+1})/5 - θᵢ - θ_{i-1}/3``: a root per ``θ``, Jacobian
    diagonally dominant. Vectorized: its Jacobian is one batched ``backward`` call."""

    signature = "(n),(p)->(n)"
    vectorized = True

    def forward(self, x, t):
        return x + x**3 / 10 + (_shift(x, 1) + _shift(x, -1)) / 5 - t - _shift(t, 1) / 3

    def backward(self, res, g):
        x, t, _ = res
        gx = g * (1 + 0.3 * x**2) + (_shift(g, -1) + _shift(g, 1)) / 5
        return gx, -g - _shift(g, -1) / 3


def _shift(a, k):
    """``a`` moved ``k`` places along its last axis, zeros coming in."""
    out = np.zeros(np.shape(a))
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


class Saturating(jb.Adapter):
    """Residuals ``uⱼ + uⱼ³/10 - yⱼ``, ``u = M x``: a fit of ``x`` (n) to data ``θ = y``
    (m = 3n), ``M`` fixed. No hooks: the Jacobian from ``backward``, one call per residual."""

    n: int
    signature = "(n),(p)->(p)"

    def forward(self, x, y):
        u = _design(self.n) @ x
        return u + u**3 / 10 - y

    def backward(self, res, g):
        x, y, _ = res
        m = _design(self.n)
        u = m @ x
        return m.T @ (g * (1 + 0.3 * u**2)), -g


def _design(n: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((3 * n, n)) / np.sqrt(n)


# ------------------------------------------------------------------------------ the rows


def rows(quick: bool) -> list[tuple[str, str, Callable, jax.Array, jax.Array]]:
    """``(name, how, solver, x0, θ)`` of each row."""
    sizes = (10,) if quick else (10, 30, 100)
    out = []
    for n in sizes:
        theta = jnp.linspace(0.5, 1.0, n)
        out.append(
            (f"Minimize n=p={n}", "mixed differences", Minimize(Chain()), jnp.zeros(n), theta)
        )
    if not quick:
        n = 30
        theta = jnp.linspace(0.5, 1.0, n)
        out.append(
            (f"Minimize n=p={n}", "hessian hook", Minimize(HookedChain()), jnp.zeros(n), theta)
        )
    for n in sizes:
        theta = jnp.linspace(-1.0, 1.0, n)
        out.append((f"Root n=p={n}", "backward, values", Root(Cubic()), jnp.zeros(n), theta))
    for n in (10,) if quick else (10, 30):
        rng = np.random.default_rng(1)
        y = jnp.asarray(_design(n) @ rng.uniform(-1, 1, n) + 0.05 * rng.standard_normal(3 * n))
        name = f"LeastSquares n={n} p={3 * n}"
        out.append((name, "mixed differences", LeastSquares(Saturating(n)), jnp.zeros(n), y))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 rounds, small problems")
    quick = parser.parse_args().quick
    rounds = 2 if quick else 15
    print("L(θ) = Σ sin(x*(θ)); medians of interleaved rounds (jit, float64)")
    header = f"{'problem':<28}{'second derivatives':<20}{'grad':>9}{'hvp':>9}{'hessian':>10}"
    print(f"{header}  {'hvp/grad':>8}  {'hessian/(p hvp)':>15}")
    for name, how, solver, x0, theta in rows(quick):

        def loss(t, solver=solver, x0=x0):
            return jnp.sum(jnp.sin(solver(x0, t)))

        grad = jax.jit(jax.grad(loss))
        hvp = jax.jit(lambda t, v: jax.jvp(jax.grad(loss), (t,), (v,))[1])
        hessian = jax.jit(jax.hessian(loss))
        v = jnp.cos(jnp.arange(theta.shape[-1]))
        times = medians(
            {
                "grad": lambda: grad(theta),
                "hvp": lambda: hvp(theta, v),
                "hessian": lambda: hessian(theta),
            },
            rounds,
        )
        p = theta.shape[-1]
        ms = {k: f"{1e3 * t:.1f}ms" for k, t in times.items()}
        product, whole = times["hvp"] / times["grad"], times["hessian"] / (p * times["hvp"])
        print(
            f"{name:<28}{how:<20}{ms['grad']:>9}{ms['hvp']:>9}{ms['hessian']:>10}"
            f"  {product:>8.2f}  {whole:>15.2f}"
        )


if __name__ == "__main__":
    main()
