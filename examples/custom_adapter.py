"""Writing an adapter: SciPy's Bessel function J_v(z) in JAX, then a fit through it.

JAX has no Bessel function of real order (``jax.scipy.special`` stops at integer orders),
and ``scipy.special.jv`` is the one people trust. This tutorial brings it into JAX in
four steps and then uses it:

1. Subclass ``jaxbridge.Adapter``: a gufunc ``signature``, a NumPy ``forward``, and a NumPy
   ``backward`` that uses the recurrence  d/dz J_v(z) = (J_{v-1}(z) - J_{v+1}(z)) / 2.
2. Check it with ``jaxbridge.testing.check_adapter``: host results against the declared
   specs, jit against eager, gradients against finite differences, vmap and scan against
   Python loops.
3. Use it like any JAX function: recover the scale ``s`` in  y = J_v(s t)  from noisy
   samples of several datasets at once, by gradient descent under ``jit(vmap(grad))``.
4. The script exits non-zero unless every fitted scale is within 1% of the truth.

Why the order is a constructor parameter, ``BesselJ(order=1.5)``, and not an argument:
the derivative with respect to the order has no closed form (it is a series), so the
adapter cannot give one. As an argument, the order would be a traced array, and a
backward must return a cotangent for every floating argument whether or not the caller
asked for it: returning zero would be silently wrong, and raising would break every
gradient, even the ones with respect to ``z`` alone. As a static parameter it is not an
array at all, so no gradient can be asked for it; passing a traced value is refused with
a clear error when the adapter is built (shown at the end). Each order compiles its own
program, which is what one wants for a handful of orders.

    python examples/custom_adapter.py           # ~10 s of CPU (three orders)
    python examples/custom_adapter.py --fast    # ~6 s of CPU: one order, fewer samples and steps
"""

import argparse
import numbers

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.special  # noqa: E402

import jaxbridge as jb  # noqa: E402
from jaxbridge.testing import check_adapter  # noqa: E402


class BesselJ(jb.Adapter):
    """The Bessel function of the first kind ``J_v(z)``, elementwise in ``z``, for a fixed
    real order ``v``: ``BesselJ(order=1.5)(z)``.

    For a non-integer order, ``J_v(z)`` is complex for ``z < 0``; like ``scipy.special.jv``
    the result there is NaN, so keep ``z >= 0`` (integer orders take any real ``z``).
    """

    order: float  # an annotated attribute: a static, hashable constructor parameter

    signature = "()->()"  # one scalar in, one scalar out
    vectorized = True  # jv is a ufunc: it takes leading batch axes as they come
    domains = {"z": "positive"}  # where check_adapter draws inputs: J_v is real there

    def __post_init__(self):
        # A JAX tracer here means someone wants the order's gradient, which has no closed
        # form: refuse it now, by name, rather than fail later inside JAX.
        if not isinstance(self.order, numbers.Real):
            raise TypeError(
                f"BesselJ: 'order' must be a Python or NumPy real number, got "
                f"{type(self.order).__name__}. The order is a static parameter and has no "
                "gradient; to fit an order, search over a few BesselJ(order=...) adapters."
            )

    def forward(self, z):
        # jv keeps float32 inputs in float32 (check_adapter's "specs" check insists)
        return scipy.special.jv(self.order, z)

    def backward(self, res, g):
        z, _ = res  # (*inputs, *outputs): J_v(z) itself is not needed here
        v = self.order
        dj_dz = (scipy.special.jv(v - 1, z) - scipy.special.jv(v + 1, z)) / 2
        return (g * dj_dz,)  # one cotangent per input, shaped like z


def check(order: float) -> None:
    """``check_adapter`` in float64 and float32; it raises AssertionError on a failure."""
    z = np.linspace(0.3, 6.0, 7)
    print(f"checking BesselJ(order={order}) with check_adapter, float64 and float32...", flush=True)
    check_adapter(BesselJ(order=order), z)
    check_adapter(BesselJ(order=order), z.astype(np.float32))
    print(f"check_adapter(BesselJ(order={order}), z): specs, jit, grad, vmap, scan all pass")


def fit_scales(order: float, true_scales: np.ndarray, samples: int, steps: int) -> np.ndarray:
    """Fit ``s`` in ``y = J_v(s t) + noise`` for every dataset at once; return the fits."""
    bessel = BesselJ(order=order)
    rng = np.random.default_rng(0)
    t = jnp.linspace(0.5, 10.0, samples)
    clean = scipy.special.jv(order, true_scales[:, None] * np.asarray(t))  # SciPy directly
    noise = 0.02
    ys = jnp.asarray(clean + noise * rng.standard_normal(clean.shape))

    def loss(s, y):
        return jnp.mean((bessel(s * t) - y) ** 2)

    # J_v(s t) oscillates in s, so the loss has a local minimum every half period or so.
    # Start from the best of a coarse grid (vmapped over grid and datasets: one host call),
    # then refine by gradient descent (vmapped over datasets: one host call per pass).
    grid = jnp.linspace(0.5, 3.0, 26)
    grid_losses = jax.jit(jax.vmap(jax.vmap(loss, (0, None)), (None, 0)))(grid, ys)
    s = grid[jnp.argmin(grid_losses, axis=1)]

    loss_and_grad = jax.jit(jax.vmap(jax.value_and_grad(loss)))
    # Near the fit the loss's curvature in s is 2 mean(t² J_v'(s t)²), between 1.4 and 4.4
    # for these scales and orders: steps of 0.2 contract the error by 0.1 to 0.7 per step.
    learning_rate = 0.2
    print(f"order {order}: fitting {len(true_scales)} datasets of {samples} noisy samples")
    print(f"  true scales      {np.array2string(true_scales, precision=4)}")
    print(f"  from the grid    {np.array2string(np.asarray(s), precision=4)}")
    for step in range(steps + 1):
        losses, grads = loss_and_grad(s, ys)
        if step % (steps // 4) == 0:
            print(f"  step {step:4d}  loss {np.array2string(np.asarray(losses), precision=6)}")
        if step < steps:
            s = s - learning_rate * grads
    print(f"  fitted scales    {np.array2string(np.asarray(s), precision=4)}")
    print(f"  (the noise has variance {noise**2:g}: a loss near it fits as well as the data allow)")
    return np.asarray(s)


def show_order_has_no_gradient() -> None:
    z = jnp.array(2.0)
    try:
        jax.grad(lambda v: BesselJ(order=v)(z))(1.5)
    except TypeError as error:
        print(f"asking for the order's gradient: TypeError: {error}")
    else:
        raise SystemExit("FAILED: BesselJ accepted a traced order; it should have refused it.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer samples and steps (CI)")
    fast = parser.parse_args().fast
    samples, steps = (60, 40) if fast else (400, 100)
    orders = (1.5,) if fast else (0.5, 1.5, 2.5)

    print(
        "Custom adapter: wrap scipy.special.jv (the Bessel function J_v of real order, which JAX "
        "lacks)\nas a JAX function, check its derivatives with check_adapter, then fit scales "
        "through it.\n"
    )
    for order in orders:
        check(order)
    print()
    true_scales = np.array([0.77, 1.13, 1.64, 2.26])  # off the grid's 0.1 spacing
    failures = []
    for order in orders:
        fitted = fit_scales(order, true_scales, samples, steps)
        error = np.abs(fitted / true_scales - 1)
        percent = "  ".join(f"{e:.3%}" for e in error)
        print(f"  relative error   {percent} (tolerance 1%)\n")
        if not np.all(error < 0.01):
            failures.append(order)
    show_order_has_no_gradient()
    if failures:
        raise SystemExit(
            f"FAILED: the fitted scales missed the truth by over 1% for orders {failures}."
        )
    print(
        "\nSuccess: BesselJ passed check_adapter, and every fitted scale is within 1% of the "
        "true one."
    )


if __name__ == "__main__":
    main()
