"""Tune a controller by gradient descent through SciPy's Lyapunov solver, then check it
against the optimum from the Riccati equation.

The plant is the classic inverted pendulum on a cart, linearised about upright:
``dx/dt = A x + B u`` with state (cart position, cart velocity, pole angle, pole angular
velocity) and the force on the cart as input. It is unstable. A state-feedback gain ``K``
(``u = -K x``) is rated by the quadratic cost

    J(K) = trace(P),   (A - BK)ᵀ P + P (A - BK) + Q + Kᵀ R K = 0,

the expected value of ∫ xᵀQx + uᵀRu dt from a random start with identity covariance.
``P`` comes from ``LyapunovSolve`` (SciPy's Bartels–Stewart on the host), whose convention
is ``a x + x aᵀ = q``: so ``a = (A - BK)ᵀ`` and ``q = -(Q + KᵀRK)``. ``jax.grad`` goes
through the solve, and gradient descent with a backtracking line search improves ``K``
from a stabilising pole-placement start (``scipy.signal.place_poles``).

The best gain is known in closed form: ``K* = R⁻¹ Bᵀ P*`` with ``P*`` from
``scipy.linalg.solve_continuous_are``. The script exits non-zero unless the tuned gain is
within 1% of it.

    python examples/lqr_control.py          # up to 3000 steps, converges fully: ~12 s of CPU
    python examples/lqr_control.py --fast   # 800 steps, enough for 1%: ~11 s of CPU
"""

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.signal  # noqa: E402

from jaxbridge.adapters import LyapunovSolve  # noqa: E402


def cart_pole(cart_mass=1.0, pole_mass=0.2, pole_length=0.5, gravity=9.81):
    """``A`` and ``B`` of the cart-pole linearised about upright (a point mass on the pole)."""
    m, length, g = cart_mass, pole_length, gravity
    a = np.array(
        [
            [0, 1, 0, 0],
            [0, 0, -pole_mass * g / m, 0],
            [0, 0, 0, 1],
            [0, 0, (m + pole_mass) * g / (m * length), 0],
        ]
    )
    b = np.array([[0], [1 / m], [0], [-1 / (m * length)]])
    return a, b


def is_stable(a, b, k):
    return np.max(np.linalg.eigvals(a - b @ np.asarray(k)).real) < 0


def descend(cost, k, steps, a, b, optimum):
    """Gradient descent on ``cost`` from ``k`` with an Armijo backtracking line search.

    ``optimum`` (the Riccati gain) is only printed beside the progress, never used.
    """
    value_and_grad = jax.jit(jax.value_and_grad(cost))
    value = jax.jit(cost)
    # Near the optimum J is flat to rounding long before K stops moving: stop on the
    # gradient instead, once it is a million times smaller than at the start.
    began = time.perf_counter()
    tolerance = 1e-6 * jnp.linalg.norm(value_and_grad(k)[1])
    step = 1e-3
    for i in range(steps + 1):
        j, grad = value_and_grad(k)
        converged = jnp.linalg.norm(grad) < tolerance
        if i % (steps // 8) == 0 or i == steps or converged:
            gap = np.linalg.norm(k - optimum) / np.linalg.norm(optimum)
            elapsed = time.perf_counter() - began
            print(
                f"  step {i:5d}  J(K) = {j:.8f}   |K - K*| / |K*| = {gap:.2e}   ({elapsed:.0f} s)",
                flush=True,
            )
        if converged:
            print("  converged: the gradient is a million times smaller than at the start")
            break
        if i == steps:
            break
        step *= 2  # try a longer step first: backtracking alone could only shrink it
        for _ in range(40):
            candidate = k - step * grad
            # An unstable A - BK still gives the Lyapunov equation a solution (an indefinite
            # P, a meaningless cost), so stability is checked, not inferred from J.
            if is_stable(a, b, candidate) and value(candidate) <= j - step / 2 * jnp.sum(grad**2):
                break
            step /= 2
        else:
            print(f"  step {i:5d}  no step lowers J any more: stopped at rounding level")
            break
        k = candidate
    return k


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer steps (CI)")
    steps = 800 if parser.parse_args().fast else 3000

    print(
        "LQR control: tune the feedback gain that balances an inverted pendulum on a cart, by "
        "gradient\ndescent on a cost computed through SciPy's Lyapunov solver, and compare it "
        "with the Riccati optimum.\n"
    )
    a, b = cart_pole()
    n, m = b.shape
    q, r = np.eye(n), np.eye(m)
    print(f"cart-pole: open-loop eigenvalues {np.array2string(np.linalg.eigvals(a), precision=3)}")

    # The optimum, by the Riccati equation: K* = R⁻¹ Bᵀ P*.
    p_star = scipy.linalg.solve_continuous_are(a, b, q, r)
    k_star = np.linalg.solve(r, b.T @ p_star)

    lyapunov = LyapunovSolve()
    a_, b_, q_, r_ = (jnp.asarray(x) for x in (a, b, q, r))

    def cost(k):
        closed = a_ - b_ @ k
        p = lyapunov(closed.T, -(q_ + k.T @ r_ @ k))  # closedᵀ P + P closed = -(Q + KᵀRK)
        return jnp.trace(p)

    # The optimum must be a stationary point of the cost computed through the bridge.
    print("the gradient of J through LyapunovSolve at the Riccati optimum (compiles it first):")
    grad_at_optimum = np.linalg.norm(jax.grad(cost)(jnp.asarray(k_star)))
    print(f"  Riccati optimum: K* = {np.array2string(k_star, precision=4)}")
    print(f"  J(K*) = trace(P*) = {np.trace(p_star):.8f}, |∇J(K*)| = {grad_at_optimum:.1e}")
    if not grad_at_optimum < 1e-8 * np.linalg.norm(k_star):
        raise SystemExit(
            "FAILED: the gradient through LyapunovSolve does not vanish at the optimum."
        )

    k0 = scipy.signal.place_poles(a, b, [-1.0, -1.5, -2.0, -2.5]).gain_matrix
    print(f"\npole-placement start: K0 = {np.array2string(k0, precision=4)}")
    print(f"gradient descent through LyapunovSolve, {steps} steps:")
    k = np.asarray(descend(cost, jnp.asarray(k0), steps, a, b, k_star))

    gap = np.linalg.norm(k - k_star) / np.linalg.norm(k_star)
    print(f"\ntuned gain:      K  = {np.array2string(k, precision=4)}")
    print(f"Riccati optimum: K* = {np.array2string(k_star, precision=4)}")
    print(f"relative distance |K - K*| / |K*| = {gap:.2e} (tolerance 1e-2)")
    if not gap < 1e-2:
        raise SystemExit("FAILED: the tuned gain is not within 1% of the Riccati optimum.")
    print(
        "Success: the gain tuned by gradient descent is within 1% of the Riccati optimum K* "
        "(from scipy.linalg.solve_continuous_are)."
    )


if __name__ == "__main__":
    main()
