"""A Gaussian process whose Matérn smoothness ν is learned by gradient, through ``kv``.

The Matérn kernel  k(r) = 2^{1-ν} / Γ(ν) · z^ν K_ν(z),  z = sqrt(2ν) r / ℓ,  has a
smoothness ν that sets how often the process is differentiable. Learning it needs the
derivative of the Bessel function K_ν in its order, which JAX does not have (nor any
closed form): ``jaxbridge.adapters.special.kv`` gives it exactly, from an integral that is
closed under both derivatives.

The script samples data from a process with known ν and ℓ, then maximises the marginal
likelihood over (log ν, log ℓ) with SciPy's L-BFGS-B, fed the value and gradient of a
jitted JAX function (``jnp.linalg.cholesky`` for the solve, ``kv`` for the kernel). It
exits non-zero unless the optimum found by gradient is at least as good as the best point
of a dense grid search (computed with SciPy alone) and lies within one grid step of it.

    python examples/matern_gp.py           # about 15 s (the grid search takes most)
    python examples/matern_gp.py --fast    # about 5 s: fewer points, a coarser grid (CI)
"""

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.special  # noqa: E402

from jaxbridge.adapters.special import kv  # noqa: E402

NOISE = 1e-2  # the observation noise's variance, known


def matern(r, nu, length):
    """The Matérn correlation at distances ``r`` (1 at r = 0), in JAX."""
    z = jnp.sqrt(2 * nu) * r / length
    safe = jnp.where(z > 0, z, 1.0)  # K_ν(0) is infinite; the limit of k is 1
    log_scale = (1 - nu) * jnp.log(2.0) - jax.scipy.special.gammaln(nu) + nu * jnp.log(safe)
    return jnp.where(z > 0, jnp.exp(log_scale) * kv(nu, safe), 1.0)


def negative_log_likelihood(params, r, y):
    nu, length = jnp.exp(params)
    k = matern(r, nu, length) + NOISE * jnp.eye(len(y))
    c = jnp.linalg.cholesky(k)
    alpha = jax.scipy.linalg.cho_solve((c, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(c))) + 0.5 * len(y) * jnp.log(2 * jnp.pi)


def nll_scipy(nu, length, r, y):
    """The same likelihood with NumPy and SciPy alone: the grid search's reference."""
    z = np.sqrt(2 * nu) * r / length
    with np.errstate(invalid="ignore", divide="ignore"):
        k = 2 ** (1 - nu) / scipy.special.gamma(nu) * z**nu * scipy.special.kv(nu, z)
    k = np.where(z > 0, k, 1.0) + NOISE * np.eye(len(y))
    c, lower = scipy.linalg.cho_factor(k, lower=True)
    alpha = scipy.linalg.cho_solve((c, lower), y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(c))) + 0.5 * len(y) * np.log(2 * np.pi)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer points and a coarser grid")
    options = parser.parse_args()
    n, grid = (40, 41) if options.fast else (80, 51)

    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 10, n))
    r = np.abs(x[:, None] - x[None, :])
    true_nu, true_length = 1.5, 1.2
    k = np.asarray(matern(jnp.asarray(r), true_nu, true_length)) + NOISE * np.eye(n)
    y = np.linalg.cholesky(k) @ rng.standard_normal(n)
    print(f"{n} samples of a Matérn process with ν = {true_nu}, ℓ = {true_length}")

    value_and_grad = jax.jit(jax.value_and_grad(negative_log_likelihood))

    def objective(params):
        value, gradient = value_and_grad(jnp.asarray(params), jnp.asarray(r), jnp.asarray(y))
        return float(value), np.asarray(gradient)

    start = np.log([0.5, 3.0])
    result = scipy.optimize.minimize(objective, start, jac=True, method="L-BFGS-B")
    nu, length = np.exp(result.x)
    gradient = objective(result.x)[1]
    print(
        f"by gradient (L-BFGS-B, {result.nit} steps): ν = {nu:.4f}, ℓ = {length:.4f}, "
        f"negative log-likelihood {result.fun:.6f}, |gradient| {np.abs(gradient).max():.1e}"
    )

    nus = np.exp(np.linspace(np.log(0.3), np.log(8.0), grid))
    lengths = np.exp(np.linspace(np.log(0.3), np.log(5.0), grid))
    values = np.array([[nll_scipy(a, b, r, y) for b in lengths] for a in nus])
    i, j = np.unravel_index(np.argmin(values), values.shape)
    print(
        f"by grid search ({grid}×{grid}, SciPy only): ν = {nus[i]:.4f}, ℓ = {lengths[j]:.4f}, "
        f"negative log-likelihood {values[i, j]:.6f}"
    )

    step = np.log(nus[1] / nus[0]), np.log(lengths[1] / lengths[0])
    near = abs(np.log(nu / nus[i])) <= step[0] and abs(np.log(length / lengths[j])) <= step[1]
    as_good = result.fun <= values[i, j] + 1e-9
    if not (result.success and as_good and near):
        raise SystemExit("The gradient's optimum does not match the grid search.")
    print("The learned smoothness matches the grid search's maximum likelihood.")


if __name__ == "__main__":
    main()
