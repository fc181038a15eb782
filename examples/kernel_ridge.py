"""Kernel ridge regression whose length scale and regularisation are learned through SciPy.

The model predicts ``f(x) = k(x, X) α`` where ``α`` solves ``(K + λ I) α = y`` on the
training points ``X`` and ``K`` is a Gaussian kernel of length scale ``ℓ``. That solve runs
on the host in SciPy (``LinearSolve(assume_a="pos")``: a Cholesky factorization), and
gradient descent tunes ``log ℓ`` and ``log λ`` to minimise the loss on held-out validation
points, differentiating through the solve. The backward pass reuses the forward's
Cholesky factor, so each step factorizes once.

The script checks that this gradient equals the one through ``jnp.linalg.solve``, prints
progress as it trains, saves a plot of the fit (with matplotlib: ``pip install -e
".[plot]"``; without it, it says so and carries on), and exits non-zero unless the
validation loss fell at least tenfold.

    python examples/kernel_ridge.py                   # ~45 s of CPU, kernel_ridge.png
    python examples/kernel_ridge.py --fast            # ~11 s of CPU: fewer points and steps
    python examples/kernel_ridge.py --plot fit.png    # the plot elsewhere
"""

import argparse
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxbridge.adapters import LinearSolve  # noqa: E402

SOLVE = LinearSolve(assume_a="pos")  # K + λI is symmetric positive definite
NOISE = 0.1


def truth(x):
    return np.sin(3 * x) + 0.3 * x


def kernel(a, b, log_scale):
    return jnp.exp(-0.5 * ((a[:, None] - b[None, :]) / jnp.exp(log_scale)) ** 2)


def predictor(params, x_train, y_train, solve=SOLVE):
    """The fitted model, a function of new points; ``params`` is ``(log ℓ, log λ)``."""
    log_scale, log_reg = params
    k = kernel(x_train, x_train, log_scale) + jnp.exp(log_reg) * jnp.eye(len(x_train))
    alpha = solve(k, y_train)
    return lambda x: kernel(x, x_train, log_scale) @ alpha


def validation_loss(params, data, solve=SOLVE):
    x_train, y_train, x_val, y_val = data
    prediction = predictor(params, x_train, y_train, solve)(x_val)
    return jnp.mean((prediction - y_val) ** 2)


def make_data(n_train, n_val, rng):
    x = rng.uniform(-3, 3, n_train + n_val)
    y = truth(x) + NOISE * rng.standard_normal(x.shape)
    return tuple(jnp.asarray(a) for a in (x[:n_train], y[:n_train], x[n_train:], y[n_train:]))


def check_gradient(params, data):
    """The gradient through SciPy's Cholesky solve against JAX's own solve."""
    bridged = jax.jit(jax.grad(validation_loss))(params, data)
    # (native JAX's float64 solve on the CPU backend: a TPU's XLA has no float64 LU)
    with jax.default_device(jax.devices("cpu")[0]):
        native = jax.grad(validation_loss)(params, data, jnp.linalg.solve)
    print(f"gradient through LinearSolve:     {np.asarray(bridged)}")
    print(f"gradient through jnp.linalg.solve: {np.asarray(native)}")
    if not np.allclose(bridged, native, rtol=1e-8, atol=1e-12):
        raise SystemExit("FAILED: the gradient through the bridged solve disagrees with JAX's")
    print("  the two gradients agree (to a relative 1e-8)")


def train(params, data, steps, learning_rate):
    step = jax.jit(jax.value_and_grad(validation_loss))
    losses = []
    for i in range(steps + 1):
        loss, grad = step(params, data)
        losses.append(float(loss))
        if i % (steps // 10) == 0:
            scale, reg = np.exp(np.asarray(params))
            print(f"  step {i:4d}  validation loss {loss:.5f}   ℓ = {scale:.4f}  λ = {reg:.2e}")
        if i < steps:
            params = params - learning_rate * grad
    return params, losses


def plot(path, data, start, fitted, losses):
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

    print("plotting the data, the truth and the fits before and after training...", flush=True)
    x_train, y_train, x_val, y_val = data
    grid = jnp.linspace(-3, 3, 300)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(2, 1))
    # The fit lies close to the truth: draw the fit wide and pale, the truth as a thin dark
    # dashed line on top of it (zorder), so that both stay visible where they overlap.
    left.plot(x_train, y_train, "C0.", ms=4, label="training points", zorder=1)
    left.plot(x_val, y_val, "C3x", ms=4, label="validation points", zorder=1)
    before = predictor(start, x_train, y_train)(grid)
    after = predictor(fitted, x_train, y_train)(grid)
    left.plot(grid, before, "C1", lw=1.5, label="before training", zorder=2)
    left.plot(grid, after, "C0", lw=4, alpha=0.45, label="after training", zorder=3)
    left.plot(grid, truth(np.asarray(grid)), "k--", lw=1.2, label="truth", zorder=4)
    left.set(xlabel="x", ylabel="y", title="kernel ridge fit, solve in SciPy")
    left.legend(fontsize="small")
    right.semilogy(losses)
    right.set(xlabel="gradient step", ylabel="validation loss", title="training")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"saved the plot to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer points and steps (CI)")
    parser.add_argument(
        "--plot", type=Path, default=Path("kernel_ridge.png"), help="where to save the plot"
    )
    options = parser.parse_args()
    n_train, n_val, steps = (40, 40, 60) if options.fast else (300, 200, 200)

    print(
        "Kernel ridge regression: learn the kernel's length scale and the regularisation by "
        "gradient\ndescent on a validation loss, through SciPy's Cholesky solve (LinearSolve)."
    )
    data = make_data(n_train, n_val, np.random.default_rng(0))
    start = jnp.log(jnp.array([1.5, 1.0]))  # too smooth and too regularised
    print("checking the gradient through LinearSolve against jnp.linalg.solve's (compiles both):")
    check_gradient(start, data)
    print(f"\ntraining on {n_train} points, validating on {n_val}, {steps} gradient steps:")
    fitted, losses = train(start, data, steps, learning_rate=3.0)
    print(
        f"validation loss {losses[0]:.5f} -> {losses[-1]:.5f}, {losses[0] / losses[-1]:.1f}x "
        f"lower (the noise variance is {NOISE**2:g}: a loss near it is as good as possible)"
    )
    plot(options.plot, data, start, fitted, losses)
    if not losses[-1] * 10 <= losses[0]:
        raise SystemExit("FAILED: the validation loss did not fall tenfold.")
    print("Success: training lowered the validation loss more than tenfold.")


if __name__ == "__main__":
    main()
