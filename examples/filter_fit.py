"""Identify an unknown IIR filter from its input and output, by Levenberg–Marquardt through
SciPy's ``sosfilt``, with the Jacobian from ``jax.jacfwd``.

A fourth-order Butterworth low-pass filter (two second-order sections, from
``scipy.signal.butter``) is the unknown system: white noise goes in, a noisy output comes
out. The model is a cascade of two sections whose ten free coefficients (``a0`` stays 1)
are fitted so that ``sosfilt(sos, x)`` matches the measured output in least squares. The
filter runs on the host in SciPy; ``jax.jacfwd`` pushes ten tangents through it at once
(forward mode through the cascade: one host call for all of them), and each step solves
the damped normal equations. The start is a different filter (cut-off 0.4 instead of
0.25, so different poles).

The gain can move between the two numerators without changing the filter, so the
coefficients themselves are not identifiable; the frequency response is. The script exits
non-zero unless the fitted response is within 1% (of the peak) of the true one at every
frequency.

    python examples/filter_fit.py          # 2000 samples: ~6 s of CPU
    python examples/filter_fit.py --fast   # 400 samples: ~7 s of CPU (compiling dominates)
"""

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.signal  # noqa: E402

from jaxbridge.adapters.linalg import solve  # noqa: E402
from jaxbridge.adapters.signal import sosfilt  # noqa: E402


def sections(theta: jax.Array) -> jax.Array:
    """The (2, 6) cascade from ten free coefficients: ``a0 = 1`` in each section."""
    theta = theta.reshape(2, 5)
    return jnp.concatenate([theta[:, :3], jnp.ones((2, 1)), theta[:, 3:]], axis=1)


def free(sos) -> np.ndarray:
    return np.concatenate([sos[:, :3], sos[:, 4:]], axis=1).reshape(-1)


def fit(x, y, theta, steps=30):
    """Levenberg–Marquardt on ``sosfilt(sections(theta), x) - y``; returns theta and the
    sum of squares before and after."""

    def residual(theta):
        return sosfilt(sections(theta), x) - y

    jacobian = jax.jit(jax.jacfwd(residual))
    residual = jax.jit(residual)
    damping = 1e-3
    r = residual(theta)
    start = cost = float(r @ r)
    print(f"  start     sum of squares {start:.3e}", flush=True)
    for iteration in range(1, steps + 1):
        j = jacobian(theta)
        normal, gradient = j.T @ j, j.T @ r
        while True:
            step = solve(normal + damping * jnp.diag(jnp.diag(normal)), -gradient)
            trial = residual(theta + step)
            trial_cost = float(trial @ trial)
            if np.isfinite(trial_cost) and trial_cost < cost:
                theta, r, damping = theta + step, trial, damping / 3
                print(f"  step {iteration:3d}  sum of squares {trial_cost:.3e}", flush=True)
                break
            damping *= 4
            if damping > 1e8:
                return theta, start, cost
        if cost - trial_cost < 1e-12 * cost:
            cost = trial_cost
            break
        cost = trial_cost
    return theta, start, cost


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="400 samples instead of 2000")
    samples = 400 if parser.parse_args().fast else 2000

    rng = np.random.default_rng(0)
    true = scipy.signal.butter(4, 0.25, output="sos")
    x = rng.normal(size=samples)
    y = scipy.signal.sosfilt(true, x) + 1e-3 * rng.normal(size=samples)

    print(
        "Filter fit: identify an unknown IIR filter (a 4th-order Butterworth low-pass) from "
        "its noisy\ninput and output, by Levenberg-Marquardt through SciPy's sosfilt, the "
        "Jacobian by jax.jacfwd.\n"
    )
    start = free(scipy.signal.butter(4, 0.4, output="sos"))
    print(f"fitting 10 filter coefficients to {samples} samples (the first step compiles):")
    theta, before, after = fit(jnp.asarray(x), jnp.asarray(y), jnp.asarray(start))
    print(f"sum of squares: {before:.3e} at the start, {after:.3e} fitted")

    frequencies = np.linspace(0, np.pi, 512)
    _, want = scipy.signal.sosfreqz(true, worN=frequencies)
    _, got = scipy.signal.sosfreqz(np.asarray(sections(theta)), worN=frequencies)
    error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    print(f"largest error of the frequency response: {error:.2e} of its peak")
    if not error < 0.01:
        raise SystemExit("FAILED: the fitted filter's response is not within 1% of the true one.")
    print(
        "Success: the fitted filter's frequency response is within 1% (of its peak) of the "
        "true one at every frequency."
    )


if __name__ == "__main__":
    main()
