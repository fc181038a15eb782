"""Newton's method through SciPy: an optimal controller in a handful of steps, with the
Hessian taken by ``jax.hessian`` through a bridged Lyapunov solver.

The plant is a chain of masses joined by damped springs, pushed by a force on the first
mass: ``dx/dt = A x + B u`` with the positions and velocities as state. A state-feedback
gain ``K`` (``u = -K x``) is rated by the quadratic cost

    J(K) = trace(P),   (A - BK)ᵀ P + P (A - BK) + Q + Kᵀ R K = 0,

which ``LyapunovSolve`` (SciPy's Bartels–Stewart on the host, convention
``a x + x aᵀ = q``) gives with ``a = (A - BK)ᵀ`` and ``q = -(Q + KᵀRK)``. Gradient descent
on ``J`` crawls (``lqr_control.py`` needs hundreds of steps for 1%); Newton's method,
``K ← K - H⁻¹ ∇J``, converges quadratically once close. ``jax.hessian`` is forward mode
over reverse mode: it goes through the solver's tangent rule and its adjoint, both solves
with the one saved Schur form.

The optimum is known in closed form, ``K* = R⁻¹ Bᵀ P*`` with ``P*`` from
``scipy.linalg.solve_continuous_are``. The script exits non-zero unless Newton's method
reaches it to 1e-9 within 20 steps.

    python examples/newton_lqr.py     # ~8 s of CPU, most of it compiling the Hessian
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

from jaxbridge.adapters import LyapunovSolve  # noqa: E402
from jaxbridge.adapters.linalg import solve as linear_solve  # noqa: E402


def spring_chain(masses=4, stiffness=2.0, damping=0.3):
    """``A`` and ``B`` of ``masses`` unit masses in a line, neighbours joined by springs
    (the first also to a wall), with the force applied to the first mass."""
    k = stiffness * (2 * np.eye(masses) - np.eye(masses, k=1) - np.eye(masses, k=-1))
    k[-1, -1] = stiffness  # the last mass has one neighbour only
    a = np.block([[np.zeros((masses, masses)), np.eye(masses)], [-k, -damping * np.eye(masses)]])
    b = np.zeros((2 * masses, 1))
    b[masses] = 1.0
    return a, b


def main() -> None:
    print(
        "Newton LQR: find the optimal feedback gain of a chain of four masses on springs by "
        "Newton's\nmethod on a cost computed through SciPy's Lyapunov solver, the Hessian "
        "from jax.hessian.\nThe first step compiles the gradient and the Hessian.\n"
    )
    a, b = spring_chain()
    n, m = b.shape
    q, r = np.eye(n), np.eye(m)
    solve = LyapunovSolve()

    def cost(k):
        closed = jnp.asarray(a) - jnp.asarray(b) @ k
        p = solve(closed.T, -(q + k.T @ r @ k))
        return jnp.trace(p)

    gradient = jax.jit(jax.grad(cost))
    hessian = jax.jit(jax.hessian(cost))
    stable = lambda k: np.max(np.linalg.eigvals(a - b @ np.asarray(k)).real) < 0  # noqa: E731

    optimum = np.linalg.solve(r, b.T @ scipy.linalg.solve_continuous_are(a, b, q, r))
    k = jnp.zeros((m, n))  # the open-loop chain is damped, so K = 0 is stabilising
    assert stable(k)
    print(f"{'step':>4}  {'J(K)':>12}  {'|∇J|':>9}  {'|K - K*| / |K*|':>16}")
    for step in range(21):
        g = gradient(k)
        error = float(np.linalg.norm(k - optimum) / np.linalg.norm(optimum))
        print(
            f"{step:>4}  {float(cost(k)):>12.8f}  {float(jnp.linalg.norm(g)):>9.2e}  {error:>16.2e}"
        )
        if error < 1e-9:
            break
        h = hessian(k).reshape(m * n, m * n)
        direction = -linear_solve(h, g.reshape(-1)).reshape(m, n)
        if float(jnp.vdot(direction, g)) >= 0:  # not a descent direction far from K*
            direction = -g
        # damped Newton: halve the step until it keeps the loop stable and lowers J
        t = 1.0
        while not (stable(k + t * direction) and cost(k + t * direction) < cost(k)):
            t /= 2
        k = k + t * direction

    if error >= 1e-9:
        raise SystemExit(
            f"FAILED: Newton's method stalled: |K - K*| / |K*| = {error:.1e} after {step} steps."
        )
    print(f"Converged in {step} Newton steps.")
    print(
        "Success: Newton's method reached the Riccati optimum K* "
        "(from scipy.linalg.solve_continuous_are) to a relative 1e-9."
    )


if __name__ == "__main__":
    main()
