"""Metric learning: the weights of a distance learned by gradient descent through SciPy's
``cdist``, for a kernel regression whose target depends on two of six coordinates.

We see noisy values of ``y = sin(π x₀) + x₁²`` at random points of ``[-1, 1]⁶``: four of
the six coordinates do not matter, but the model is not told which. It predicts by
Nadaraya-Watson kernel regression, a weighted mean of the training values with weights
``exp(-d(x, xᵢ))``, where ``d`` is the weighted squared distance
``Cdist("sqeuclidean")(X, Xtrain, w=w)`` (SciPy's ``cdist``, on the host) and
``w = softplus(u)`` one weight per coordinate (their size sets the bandwidth). The loss is
the leave-one-out error on the training set; its gradient in ``u`` goes through
``Cdist``'s derivative in ``w``. Adam, written out in a ``jax.jit``-ed step with the host
call inside, drives the weights of the four idle coordinates down and those of the two
that matter up.

The script exits non-zero unless the gradient at the start agrees with central
differences of the same loss computed with SciPy and NumPy alone (to 1e-6), the learned
weights put at least 90% of their mass on the two coordinates that matter, and the
held-out error (computed with SciPy's ``cdist``) is below a quarter of that of equal
weights at their best scale (chosen on the held-out points themselves, which favours them).

    python examples/metric_learning.py          # 240 training points: ~3 s of CPU
    python examples/metric_learning.py --fast   # 120: the same
"""

import argparse
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial.distance import cdist  # noqa: E402

from jaxbridge.adapters.spatial import Cdist  # noqa: E402

DIMENSIONS, RELEVANT, NOISE = 6, [0, 1], 0.05


def target(x: np.ndarray) -> np.ndarray:
    return np.sin(np.pi * x[:, 0]) + x[:, 1] ** 2


def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = rng.uniform(-1, 1, (n, DIMENSIONS))
    return x, target(x) + NOISE * rng.standard_normal(n)


def scipy_predict(w, queries, x, y, leave_one_out=False):
    """The kernel regression with SciPy and NumPy alone: the reference."""
    logits = -cdist(queries, x, "sqeuclidean", w=w)
    if leave_one_out:
        np.fill_diagonal(logits, -np.inf)
    kernel = np.exp(logits - logits.max(axis=1, keepdims=True))
    return kernel @ y / kernel.sum(axis=1)


def main() -> int:
    title = str(__doc__).splitlines()[0]
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--fast", action="store_true", help="120 training points")
    n = 120 if parser.parse_args().fast else 240
    print(title)

    rng = np.random.default_rng(0)
    x, y = sample(n, rng)
    x_test, y_test = sample(400, rng)
    distances = Cdist("sqeuclidean")

    def loss(u):
        """The leave-one-out mean squared error on the training set."""
        logits = -distances(x, x, w=jax.nn.softplus(u))
        logits = jnp.where(jnp.eye(n, dtype=bool), -jnp.inf, logits)
        return jnp.mean((jax.nn.softmax(logits, axis=1) @ y - y) ** 2)

    def scipy_loss(u):
        w = np.logaddexp(0.0, u)  # softplus
        return np.mean((scipy_predict(w, x, x, y, leave_one_out=True) - y) ** 2)

    u = np.full(DIMENSIONS, np.log(np.expm1(2.0)))  # every weight 2
    differences = np.array(
        [(scipy_loss(u + h) - scipy_loss(u - h)) / 2e-6 for h in 1e-6 * np.eye(DIMENSIONS)]
    )
    gradient_error = np.max(np.abs(jax.grad(loss)(u) - differences)) / np.max(np.abs(differences))
    print(f"gradient at the start vs SciPy's central differences: relative {gradient_error:.1e}")

    @jax.jit
    def adam_step(u, m, v, t):
        value, gradient = jax.value_and_grad(loss)(u)
        m = 0.9 * m + 0.1 * gradient
        v = 0.999 * v + 0.001 * gradient**2
        step = (m / (1 - 0.9**t)) / (jnp.sqrt(v / (1 - 0.999**t)) + 1e-12)
        return u - 0.2 * step, m, v, value

    m = v = jnp.zeros(DIMENSIONS)
    for t in range(1, 201):
        u, m, v, value = adam_step(u, m, v, t)
        if t % 50 == 1:
            print(f"  step {t - 1:3d}: leave-one-out error {float(value):.4f}")
    w = np.logaddexp(0.0, np.asarray(u))
    mass = w[RELEVANT].sum() / w.sum()
    print(f"learned weights {np.array2string(w, precision=3)}: {mass:.1%} on x0 and x1")

    def test_error(w):
        return np.mean((scipy_predict(w, x_test, x, y) - y_test) ** 2)

    learned = test_error(w)
    scales = np.geomspace(0.01, 100.0, 161)
    equal = [test_error(np.full(DIMENSIONS, scale)) for scale in scales]
    best = min(equal)
    print(
        f"held-out error: learned weights {learned:.4f}, equal weights at their best scale "
        f"({scales[np.argmin(equal)]:.2f}) {best:.4f}"
    )

    if not (gradient_error < 1e-6 and mass >= 0.9 and learned < 0.25 * best):
        print(
            f"FAILED: the gradient is off by {gradient_error:.1e} (relative), the weights put "
            f"{mass:.1%} on x0 and x1, the held-out error is {learned / best:.2f} times "
            "equal weights'."
        )
        return 1
    print(
        "Success: the learned weights put over 90% of their mass on the two coordinates that "
        "matter, and the held-out error (SciPy's cdist) is under a quarter of the best equal "
        "weights'."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
