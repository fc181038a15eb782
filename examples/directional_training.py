"""Directional regression: a network trained through SciPy's Bessel function, its step timed.

Directions on the sphere in five dimensions (unit vectors ``y``) are drawn from a von
Mises-Fisher distribution whose mean direction ``μ(x)`` and concentration ``κ(x)`` depend on
eight features ``x``. A small network predicts both; its loss is the distribution's negative
log-likelihood, whose normaliser needs the modified Bessel function of order 3/2 at every
sample's ``κ``:

    -log p(y) = -(κ μ·y) - (3/2) log κ + (5/2) log 2π + log I_{3/2}(κ)

JAX has no Bessel function of real order; ``jaxbridge.adapters.special.ive`` calls SciPy's
``ive`` on the host (``log I_v(κ) = log ive(v, κ) + κ``), and its derivative in ``κ`` calls it
again at orders 1/2 and 5/2. Training runs Adam for a few hundred steps under ``jit``; the
script asserts that the fitted model's held-out loss comes within 0.05 nats per sample of
the true distribution's own, and that its mean directions are within 10 degrees of the true
ones on average.

Then it times one training step and the parts it is made of, medians of interleaved
rounds: the same step with the Bessel function of order 0 in its place (JAX has that one:
``i0e``), which is the step's device work; SciPy's ``ive`` at the three orders on the host
alone; and explicit copies (``np.asarray``, ``jax.device_put``) of what the step's host
calls move each way. On a TPU the step is compared with their sum
(``docs/accelerators.md``).

    python examples/directional_training.py          # 65,536 samples, 400 steps
    python examples/directional_training.py --fast   # 4,096 samples, 150 steps (CI)
"""

import argparse
import json
import random
import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from jaxbridge.adapters.special import ive

P = 5  # the sphere's dimension
ORDER = P / 2 - 1  # of the Bessel function in the normaliser
FEATURES, HIDDEN = 8, 32


def log_bessel(kappa, native=False):
    """``log I_{3/2}(κ)`` through SciPy, or (``native``, for timing only) ``log I_0(κ)``."""
    scaled = jax.scipy.special.i0e(kappa) if native else ive(ORDER, kappa)
    return jnp.log(scaled) + kappa


def negative_log_likelihood(kappa, mu, y, native=False):
    normaliser = ORDER * jnp.log(kappa) - (P / 2) * jnp.log(2 * jnp.pi)
    normaliser = normaliser - log_bessel(kappa, native)
    return -jnp.mean(normaliser + kappa * jnp.sum(mu * y, axis=-1))


def predict(params, x):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    out = hidden @ params["w2"] + params["b2"]
    mu = out[:, :P] / jnp.linalg.norm(out[:, :P], axis=-1, keepdims=True)
    kappa = jax.nn.softplus(out[:, P]) + 0.1
    return kappa, mu


def loss(params, x, y, native=False):
    kappa, mu = predict(params, x)
    return negative_log_likelihood(kappa, mu, y, native)


def truth(x, coefficients):
    """The true mean direction and concentration at features ``x``."""
    a, c = coefficients
    mu = np.tanh(x @ a)
    mu /= np.linalg.norm(mu, axis=-1, keepdims=True)
    kappa = 2.0 + 18.0 / (1.0 + np.exp(-x @ c))
    return kappa, mu


def sample_vmf(mu, kappa, rng):
    """Wood's (1994) rejection sampler for the von Mises-Fisher distribution."""
    n = len(kappa)
    b = (-2 * kappa + np.sqrt(4 * kappa**2 + (P - 1) ** 2)) / (P - 1)
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (P - 1) * np.log(1 - x0**2)
    w = np.empty(n)
    todo = np.arange(n)
    while todo.size:
        z = rng.beta((P - 1) / 2, (P - 1) / 2, todo.size)
        bb, xx, cc, kk = b[todo], x0[todo], c[todo], kappa[todo]
        ww = (1 - (1 + bb) * z) / (1 - (1 - bb) * z)
        accept = kk * ww + (P - 1) * np.log(1 - xx * ww) - cc >= np.log(rng.uniform(size=todo.size))
        w[todo[accept]] = ww[accept]
        todo = todo[~accept]
    v = rng.standard_normal((n, P))
    v -= np.sum(v * mu, axis=-1, keepdims=True) * mu
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    return w[:, None] * mu + np.sqrt(1 - w**2)[:, None] * v


def true_loss(x, y, coefficients):
    kappa, mu = truth(x, coefficients)
    log_iv = np.log(scipy.special.ive(ORDER, kappa)) + kappa
    normaliser = ORDER * np.log(kappa) - (P / 2) * np.log(2 * np.pi) - log_iv
    return float(-np.mean(normaliser + kappa * np.sum(mu * y, axis=-1)))


def init(key):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (FEATURES, HIDDEN)) / np.sqrt(FEATURES),
        "b1": jnp.zeros(HIDDEN),
        "w2": jax.random.normal(k2, (HIDDEN, P + 1)) / np.sqrt(HIDDEN),
        "b2": jnp.zeros(P + 1),
    }


def adam_step(native=False, rate=1e-2):
    """One Adam step on the whole batch, jitted."""

    @jax.jit
    def step(params, moments, t, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y, native)
        first, second = moments
        first = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, first, grads)
        second = jax.tree.map(lambda s, g: 0.999 * s + 0.001 * g * g, second, grads)
        scale = rate * jnp.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        params = jax.tree.map(
            lambda p, m, s: p - scale * m / (jnp.sqrt(s) + 1e-8), params, first, second
        )
        return params, (first, second), value

    return step


def medians(contenders, rounds):
    for run in contenders.values():
        jax.block_until_ready(run())
    samples = {name: [] for name in contenders}
    names = list(contenders)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            start = time.perf_counter()
            jax.block_until_ready(contenders[name]())
            samples[name].append(time.perf_counter() - start)
    return {name: float(np.median(s)) for name, s in samples.items()}


def crossing_bytes(step, *args):
    """Bytes that the step's host calls move to the host and back, from its jaxpr."""
    up = down = 0

    def visit(jaxpr):
        nonlocal up, down
        for eqn in jaxpr.eqns:
            if eqn.primitive.name.startswith("jaxbridge_"):
                up += sum(v.aval.size * v.aval.dtype.itemsize for v in eqn.invars)
                down += sum(v.aval.size * v.aval.dtype.itemsize for v in eqn.outvars)
            for param in eqn.params.values():
                inner = getattr(param, "jaxpr", param)
                if hasattr(inner, "eqns"):
                    visit(inner)

    visit(jax.make_jaxpr(step)(*args).jaxpr)
    return up, down


def where_time_goes(params, moments, x, y, rounds):
    """A step's time beside its parts, each a median of interleaved rounds."""
    bridged, native = adam_step(), adam_step(native=True)
    t = jnp.float32(1.0)
    kappa = np.asarray(predict(params, x)[0], np.float64)
    up, down = crossing_bytes(bridged, params, moments, t, x, y)
    up_array = jnp.ones(up // 4, jnp.float32)
    down_host = np.ones(down // 4, np.float32)
    fresh = jax.jit(lambda a: a + 0)  # a new device array each time: JAX caches what it read
    device = jax.devices()[0]
    times = medians(
        {
            "step": lambda: bridged(params, moments, t, x, y),
            "device work": lambda: native(params, moments, t, x, y),
            "host routine": lambda: [
                scipy.special.ive(v, kappa) for v in (ORDER - 1, ORDER, ORDER + 1)
            ],
            "copies": lambda: (np.asarray(fresh(up_array)), jax.device_put(down_host, device)),
        },
        rounds,
    )
    parts = times["device work"] + times["host routine"] + times["copies"]
    return times, parts, up, down


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer samples and steps (CI)")
    options = parser.parse_args()
    samples, steps, rounds = (16_384, 300, 5) if options.fast else (65_536, 400, 15)
    print(__doc__.splitlines()[0])
    print(f"{samples:,} samples, {steps} steps of Adam, {jax.default_backend()} backend")

    rng = np.random.default_rng(0)
    coefficients = (rng.standard_normal((FEATURES, P)), rng.standard_normal(FEATURES) / 2)
    x_all = rng.standard_normal((2 * samples, FEATURES))
    kappa, mu = truth(x_all, coefficients)
    y_all = sample_vmf(mu, kappa, rng)
    x, y = jnp.asarray(x_all[:samples], jnp.float32), jnp.asarray(y_all[:samples], jnp.float32)
    x_val, y_val = x_all[samples:], y_all[samples:]

    params = init(jax.random.key(1))
    moments = (jax.tree.map(jnp.zeros_like, params), jax.tree.map(jnp.zeros_like, params))
    step = adam_step()
    held_out = jax.jit(loss)
    start = float(
        held_out(params, jnp.asarray(x_val, jnp.float32), jnp.asarray(y_val, jnp.float32))
    )
    for t in range(1, steps + 1):
        params, moments, value = step(params, moments, jnp.float32(t), x, y)
        if t % (steps // 5) == 0:
            print(f"  step {t:4d}: training loss {float(value):.4f}")

    fitted = float(
        held_out(params, jnp.asarray(x_val, jnp.float32), jnp.asarray(y_val, jnp.float32))
    )
    best = true_loss(x_val, y_val, coefficients)
    _, mu_fit = predict(params, jnp.asarray(x_val, jnp.float32))
    _, mu_true = truth(x_val, coefficients)
    angle = np.degrees(np.arccos(np.clip(np.sum(np.asarray(mu_fit) * mu_true, -1), -1, 1)))
    print(
        f"held-out loss per sample: {start:.4f} at the start, {fitted:.4f} fitted, "
        f"{best:.4f} for the true distribution; mean angle to the true directions "
        f"{angle.mean():.1f} degrees"
    )

    times, parts, up, down = where_time_goes(params, moments, x, y, rounds)
    print(f"where a training step's time goes (medians of {rounds} rounds):")
    print(f"  the step, with SciPy's ive in its loss: {times['step'] * 1e3:9.3f} ms")
    print(f"  its device work (order 0, native):      {times['device work'] * 1e3:9.3f} ms")
    print(f"  SciPy's ive at three orders, host only: {times['host routine'] * 1e3:9.3f} ms")
    print(
        f"  explicit copies of what crosses:        {times['copies'] * 1e3:9.3f} ms "
        f"({up / 1e6:.2f} MB up, {down / 1e6:.2f} MB down)"
    )
    ratio = times["step"] / parts
    print(f"  the step is {ratio:.2f}x the sum of its parts ({parts * 1e3:.3f} ms)")
    row = {
        "benchmark": "training-step",
        "backend": jax.default_backend(),
        "samples": samples,
        **{f"{k.replace(' ', '_')}_s": v for k, v in times.items()},
        "ratio": ratio,
    }
    print("  " + json.dumps(row))

    if not fitted <= best + 0.05:
        raise SystemExit(
            f"FAILED: the fitted loss {fitted:.4f} is not within 0.05 of the truth's {best:.4f}"
        )
    if not angle.mean() <= 10:
        raise SystemExit(
            f"FAILED: the mean directions are {angle.mean():.1f} degrees off (allowed 10)"
        )
    print(
        "Success: the model trained through SciPy's ive to within 0.05 nats of the true "
        "distribution."
    )


if __name__ == "__main__":
    main()
