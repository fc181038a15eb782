"""A bilevel fit by Newton's method: two ridge penalties of a logistic regression, tuned on a
validation set, with the Hessian taken by ``jax.hessian`` through ``Minimize``.

The inner problem fits the weights ``w`` of a logistic regression to 60 training points,
with one ridge penalty ``exp(θ_g)`` for each of two groups of four features:

    w*(θ) = argmin_w  Σᵢ log(1 + exp(-yᵢ xᵢᵀw)) + ½ Σ_g exp(θ_g) |w_g|²

(``Minimize``: SciPy's L-BFGS-B on the host, the objective a NumPy adapter with an exact
gradient and no ``hessian`` hook). The outer problem picks ``θ`` to minimise the mean
log-loss ``V(θ)`` of ``w*(θ)`` on 200 validation points. ``V`` depends on ``θ`` only
through the inner solution, so its Hessian needs the second derivatives of ``w*(θ)``:
``jax.hessian`` goes forward over reverse through the implicit function theorem's rules,
whose own derivatives take the objective's third derivatives from differences of its
exact gradient. Newton's method then converges in a handful of steps, where the outer
gradient alone would crawl along the valley's floor.

The reference is independent of the bridge: SciPy's Nelder–Mead on ``V`` computed by
SciPy alone (each evaluation an L-BFGS-B solve of the inner problem), and second
differences of that ``V`` for the Hessian at the optimum. The script exits non-zero
unless Newton's method reaches Nelder–Mead's optimum to 1e-5 and its Hessian agrees with
the differences to 1e-4.

    python examples/bilevel_penalties.py     # a few seconds of CPU, most of it compiling
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402

import jaxbridge as jb  # noqa: E402
from jaxbridge.adapters.linalg import solve  # noqa: E402
from jaxbridge.adapters.optimize import Minimize  # noqa: E402

# ------------------------------------------------------------------------------ the data

FEATURES = 8
GROUPS = np.repeat([0, 1], 4)  # features 0-3, then 4-7
_rng = np.random.default_rng(3)
_TRUE = np.concatenate([_rng.normal(0, 1.2, 4), _rng.normal(0, 0.4, 4)])


def _draw(count):
    x = _rng.normal(size=(count, FEATURES))
    positive = _rng.uniform(size=count) < 1 / (1 + np.exp(-x @ _TRUE))
    return x, np.where(positive, 1.0, -1.0)


X_TRAIN, Y_TRAIN = _draw(60)
X_VALID, Y_VALID = _draw(200)


# --------------------------------------------------------------------- the inner problem


def penalised_loss(w, theta):
    """The inner objective and its exact gradients in ``w`` and ``θ``, in NumPy."""
    margins = Y_TRAIN * (X_TRAIN @ w)
    penalty = np.exp(theta)[GROUPS]
    value = np.sum(np.logaddexp(0, -margins)) + 0.5 * np.sum(penalty * w * w)
    gw = -(X_TRAIN.T @ (Y_TRAIN / (1 + np.exp(margins)))) + penalty * w
    gt = 0.5 * np.bincount(GROUPS, penalty * w * w, minlength=2)
    return value, gw, gt


class PenalisedLogistic(jb.Adapter):
    """The inner objective as an adapter: ``(w, θ) -> f``, its gradient from ``backward``."""

    signature = "(n),(p)->()"

    def forward(self, w, theta):
        return penalised_loss(w, theta)[0]

    def backward(self, res, g):
        w, theta, _ = res
        _, gw, gt = penalised_loss(w, theta)
        return g * gw, g * gt


fit = Minimize(PenalisedLogistic())


def validation_loss(theta):
    """``V(θ)``: the mean log-loss on the validation set of the inner fit, through JAX."""
    w = fit(jnp.zeros(FEATURES), theta)
    return jnp.mean(jnp.logaddexp(0.0, -jnp.asarray(Y_VALID) * (jnp.asarray(X_VALID) @ w)))


# -------------------------------------------------------------------------- the reference


def validation_loss_by_scipy(theta):
    """``V(θ)`` by SciPy alone: the inner fit by L-BFGS-B at tight tolerances."""
    w = scipy.optimize.minimize(
        lambda w: penalised_loss(w, theta)[:2],
        np.zeros(FEATURES),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000},
    ).x
    return float(np.mean(np.logaddexp(0, -Y_VALID * (X_VALID @ w))))


def second_differences(f, x, step=1e-2):
    """The Hessian of ``f`` at ``x`` by central second differences. The step is not smaller:
    L-BFGS-B stops with ``V`` about 1e-10 off at some points, which the differences divide
    by the step squared (at 1e-3 that made one entry 5% off); at 1e-2 their own truncation
    error is 1e-5 of the Hessian (measured against exact Newton solves of the inner fit)."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * step, np.eye(n)[j] * step
            h[i, j] = (
                f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)
            ) / (4 * step * step)
    return h


def main() -> None:
    print(
        "Bilevel fit: tune two ridge penalties of a logistic regression on a validation set "
        "by Newton's\nmethod, the Hessian by jax.hessian through Minimize (SciPy's "
        "L-BFGS-B). The first step compiles.\n"
    )
    gradient = jax.jit(jax.grad(validation_loss))
    hessian = jax.jit(jax.hessian(validation_loss))
    theta = jnp.zeros(2)
    print(f"{'step':>4}  {'θ':>22}  {'V(θ)':>12}  {'|∇V|':>9}")
    for step in range(30):
        g = gradient(theta)
        value = float(validation_loss(theta))
        print(
            f"{step:>4}  {np.array2string(np.asarray(theta), precision=6):>22}  {value:>12.9f}",
            end="",
        )
        print(f"  {float(jnp.linalg.norm(g)):>9.2e}")
        if float(jnp.linalg.norm(g)) < 1e-10:
            break
        h = hessian(theta)
        direction = -solve(h, g)  # (SciPy's LU: also float64 on a TPU, which XLA's lacks)
        if not (np.all(np.linalg.eigvalsh(np.asarray(h)) > 0) and float(direction @ g) < 0):
            direction = -g / float(jnp.linalg.norm(g))  # far from the optimum: descend
        length = 1.0
        while float(validation_loss(theta + length * direction)) > value and length > 1e-6:
            length /= 2  # (a backtracking line search; Newton's full step near the optimum)
        theta = theta + length * direction
    else:
        raise SystemExit("FAILED: Newton's method did not converge in 30 steps.")

    print("\nThe reference, by SciPy alone: Nelder-Mead on V, each V an L-BFGS-B solve ...")
    reference = scipy.optimize.minimize(
        validation_loss_by_scipy,
        np.zeros(2),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-15, "maxiter": 2000},
    ).x
    found = np.asarray(theta)
    distance = float(np.max(np.abs(found - reference)))
    expected = second_differences(validation_loss_by_scipy, reference)
    got = np.asarray(hessian(theta))
    mismatch = float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))
    print(f"Nelder-Mead's optimum {reference}, Newton's {found}: {distance:.1e} apart")
    print(f"the Hessian through Minimize:\n{got}\nsecond differences of SciPy's V:\n{expected}")
    print(f"relative difference {mismatch:.1e}")
    if not (distance < 1e-5 and mismatch < 1e-4):
        raise SystemExit("FAILED: Newton's optimum or its Hessian disagrees with SciPy's.")
    print(
        "Success: Newton's method through Minimize's Hessian reached the optimum of SciPy's "
        "Nelder-Mead (to 1e-5), and its Hessian agrees with second differences of SciPy's "
        "solves (to 1e-4)."
    )


if __name__ == "__main__":
    main()
