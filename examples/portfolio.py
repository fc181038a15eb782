"""Learn a return model from observed portfolios, by gradient descent through SciPy's SLSQP.

Each day an investor holds the mean-variance portfolio for the returns they expect:

    w(μ) = argmin ½ γ wᵀ Σ w - μᵀ w   subject to   Σᵢ wᵢ = 1 (budget),  w >= 0 (no short sales),

solved on the host by ``scipy.optimize.minimize(method="SLSQP")`` through
``MinimizeConstrained``. Their expected returns come from the day's asset features through
an unknown linear model, ``μ = F β``. We see the features and the portfolios, not ``β``,
and learn ``β`` by ``jax.jit(jax.grad(...))`` of the mismatch between the portfolios our
``β`` implies and the observed ones: the gradient flows through every day's constrained
solve (``vmap``: one host call for all days) by the implicit function theorem on the KKT
conditions of the assets held.

Before training, the bridge's gradient is checked against JAX's own gradient of the closed
form on the active set (``w_S = (γ Σ_SS)⁻¹ (μ_S - ν)`` with ``ν`` fixing the budget). The
script prints a progress bar, saves a plot (with matplotlib: ``pip install -e ".[plot]"``;
without it, it says so and carries on), and exits non-zero unless the learned model
reproduces every observed portfolio to 0.01 (in each weight).

    python examples/portfolio.py          # 24 days, 300 steps: ~55 s of CPU
    python examples/portfolio.py --fast   # 8 days, 120 steps: ~15 s of CPU, weights to ~2e-3
"""

import argparse
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxbridge as jb  # noqa: E402
from jaxbridge.adapters.optimize import MinimizeConstrained  # noqa: E402

ASSETS, FEATURES, RISK_AVERSION = 6, 3, 4.0
_VOLATILITY = np.array([0.10, 0.14, 0.18, 0.22, 0.26, 0.30])
_CORRELATION = 0.3 + 0.7 * np.eye(ASSETS)
COVARIANCE = _CORRELATION * np.outer(_VOLATILITY, _VOLATILITY)


class MeanVariance(jb.Adapter):
    """``½ γ wᵀ Σ w - μᵀ w``, with the expected returns ``μ`` as its parameters."""

    signature = "(n),(p)->()"

    def forward(self, w, mu):
        return 0.5 * RISK_AVERSION * w @ COVARIANCE @ w - mu @ w

    def backward(self, res, g):
        w, mu, _ = res
        return g * (RISK_AVERSION * COVARIANCE @ w - mu), -g * w

    def hessian(self, w, mu):  # exact second derivatives for the implicit gradient
        return RISK_AVERSION * COVARIANCE, -np.eye(len(w))


class Budget(jb.Adapter):
    """``Σᵢ wᵢ - 1 = 0``."""

    signature = "(n),(p)->(m)"

    def output_specs(self, w, mu):
        return jax.ShapeDtypeStruct((1,), w.dtype)

    def forward(self, w, mu):
        return np.array([w.sum() - 1.0])

    def backward(self, res, g):
        w, mu, _ = res
        return g[0] * np.ones_like(w), np.zeros_like(mu)

    # Optional hooks: exact Jacobians and (zero) second derivatives, cheaper than the
    # bridge's fallbacks (a backward call per output, differences of Jacobians).
    def jacobian(self, w, mu):
        return np.ones((1, len(w))), np.zeros((1, len(mu)))

    def hessian(self, w, mu):
        return np.zeros((1, len(w), len(w))), np.zeros((1, len(w), len(mu)))


class NoShortSales(jb.Adapter):
    """``w >= 0``."""

    signature = "(n),(p)->(n)"

    def forward(self, w, mu):
        return w.copy()

    def backward(self, res, g):
        _, mu, _ = res
        return g, np.zeros_like(mu)

    def jacobian(self, w, mu):
        return np.eye(len(w)), np.zeros((len(w), len(mu)))

    def hessian(self, w, mu):
        n = len(w)
        return np.zeros((n, n, n)), np.zeros((n, n, len(mu)))


PORTFOLIO = MinimizeConstrained(MeanVariance(), eq=Budget(), ineq=NoShortSales())


def portfolios(beta, features):
    """The optimal portfolio of every day, for the model ``μ = F β``."""
    mu = features @ beta  # (days, assets)
    start = jnp.full(mu.shape, 1.0 / ASSETS)
    return jax.vmap(PORTFOLIO)(start, mu)


def loss(beta, features, observed):
    return jnp.mean(jnp.sum((portfolios(beta, features) - observed) ** 2, axis=-1))


def closed_form(mu, held):
    """The optimum when the assets ``held`` (a 0/1 mask) are known: stationarity on them and
    the budget, ``w_S = (γ Σ_SS)⁻¹ (μ_S - ν)`` with ``ν`` fixing the budget, in JAX (an
    independent reference for the gradient). The other assets get an identity block."""
    a = RISK_AVERSION * COVARIANCE * jnp.outer(held, held) + jnp.diag(1 - held)
    to_mu, to_ones = jnp.linalg.solve(a, held * mu), jnp.linalg.solve(a, held)
    nu = (held @ to_mu - 1) / (held @ to_ones)
    return to_mu - nu * to_ones


def check_gradient(beta, features, observed):
    held = (portfolios(beta, features) > 1e-9).astype(features.dtype)

    def reference_loss(beta):
        w = jax.vmap(closed_form)(features @ beta, held)
        return jnp.mean(jnp.sum((w - observed) ** 2, axis=-1))

    bridged = jax.jit(jax.grad(loss))(beta, features, observed)
    # (native JAX's float64 solve on the CPU backend: a TPU's XLA has no float64 LU)
    with jax.default_device(jax.devices("cpu")[0]):
        native = jax.jit(jax.grad(reference_loss))(beta)
    print(f"gradient through SLSQP (implicit): {np.asarray(bridged)}")
    print(f"gradient of the closed form (JAX): {np.asarray(native)}")
    if not np.allclose(bridged, native, rtol=1e-8, atol=1e-12):
        raise SystemExit(
            "FAILED: the gradient through MinimizeConstrained disagrees with the closed form."
        )
    print("  the two gradients agree (to a relative 1e-8)")


def progress(step, steps, value, elapsed, width=30):
    filled = round(width * step / steps)
    bar = "#" * filled + "." * (width - filled)
    end = "\n" if step == steps else "\r"
    text = f"  [{bar}] step {step:4d}/{steps}  loss {value:.3e}  ({elapsed:.0f} s)"
    print(text, end=end, flush=True)


def train(beta, features, observed, steps, learning_rate=0.01):
    """Adam on the loss; returns the learned ``β`` and the loss history."""
    value_and_grad = jax.jit(jax.value_and_grad(loss))
    m, v = jnp.zeros_like(beta), jnp.zeros_like(beta)
    history = []
    began = time.perf_counter()
    for step in range(1, steps + 1):
        value, grad = value_and_grad(beta, features, observed)
        history.append(float(value))
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        beta = beta - learning_rate * (m / (1 - 0.9**step)) / (
            jnp.sqrt(v / (1 - 0.999**step)) + 1e-12
        )
        if step % max(1, steps // 20) == 0 or step == steps:
            progress(step, steps, value, time.perf_counter() - began)
    return beta, history


def plot(path, observed, before, after, history):
    try:
        import matplotlib
    except ImportError:
        print(
            "matplotlib is not installed, so there is no plot "
            '(pip install -e ".[plot]" for one); the model trained all the same.'
        )
        return
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    print("plotting day 1's portfolios and the training loss...", flush=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    index = np.arange(ASSETS)
    left.bar(index - 0.25, observed[0], 0.25, label="observed")
    left.bar(index, before[0], 0.25, label="before training")
    left.bar(index + 0.25, after[0], 0.25, label="after training")
    left.set(xlabel="asset", ylabel="weight", title="day 1's portfolio (SLSQP in SciPy)")
    left.legend(fontsize="small")
    right.semilogy(history)
    right.set(xlabel="Adam step", ylabel="mean squared mismatch", title="training")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"saved the plot to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer days and steps (CI)")
    parser.add_argument(
        "--plot", type=Path, default=Path("portfolio.png"), help="where to save the plot"
    )
    options = parser.parse_args()
    days, steps = (8, 120) if options.fast else (24, 300)

    print(
        "Portfolio: learn the return model behind observed mean-variance portfolios, by Adam "
        "with\ngradients through SciPy's SLSQP (MinimizeConstrained: a budget, no short sales).\n"
    )
    rng = np.random.default_rng(0)
    features = jnp.asarray(rng.normal(size=(days, ASSETS, FEATURES)))
    true_beta = jnp.array([0.06, -0.03, 0.04])
    observed = portfolios(true_beta, features)
    held = np.asarray(observed) > 1e-9
    print(
        f"{days} days of {ASSETS} assets; the investors hold {held.sum(1).min()} to "
        f"{held.sum(1).max()} assets a day (no short sales)"
    )

    beta = jnp.zeros(FEATURES) + 0.01
    print("checking the gradient through SLSQP against the closed form's (compiles both):")
    check_gradient(beta, features, observed)
    before = np.asarray(portfolios(beta, features))
    print(f"\nlearning β by Adam through {days} SLSQP solves a step:")
    beta, history = train(beta, features, observed, steps)
    after = np.asarray(portfolios(beta, features))
    gap = float(np.max(np.abs(after - np.asarray(observed))))
    print(f"loss {history[0]:.3e} -> {history[-1]:.3e}; largest weight error {gap:.1e}")
    print(f"learned β = {np.asarray(beta)}, true β = {np.asarray(true_beta)}")
    plot(options.plot, np.asarray(observed), before, after, history)
    if not gap < 0.01:
        raise SystemExit("FAILED: the learned model does not reproduce the observed portfolios.")
    print(
        "Success: the learned model reproduces every observed portfolio: each weight within 0.01."
    )


if __name__ == "__main__":
    main()
