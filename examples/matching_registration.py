"""Register two unlabelled point clouds: a rotation and a shift fitted by gradient descent
on a matching loss, the matching from SciPy's ``linear_sum_assignment`` inside ``jit``.

We see 40 points and the same points rotated by an unknown angle, shifted, perturbed by a
little noise and shuffled: which point went where is unknown. The loss matches the moved
points to the targets by the assignment of least total squared distance
(``LinearSumAssignment``, on the host, ``jax.jit``-ed with the rest) and sums the matched
distances; its gradient in the angle and shift holds the matching fixed, as the optimum's
derivative does wherever the matching is unique. The loss is not convex in the angle:
gradient descent from 24 starting angles at once (``vmap``) recovers the motion.

The same matching is a transport problem: ``Linprog`` (HiGHS) solves it as a linear
program over doubly stochastic plans and must find the same optimal cost. Its gradient in
the costs is the optimal plan itself, the assignment's permutation matrix (the plan is
unique). That program is degenerate (n of its 2n - 1 basic variables are 0, as in every
assignment problem), so the plan has no derivative: ``Linprog`` must refuse one, naming
the degeneracy, rather than return a number.

The script exits non-zero unless the fitted angle is within 1e-3 rad and the shift within
1e-3 of the true ones, the linear program's cost is the assignment's, its gradient is the
assignment, and the plan's derivative is refused.

    python examples/matching_registration.py          # 40 points: ~3 s of CPU
    python examples/matching_registration.py --fast   # 16 points: the same
"""

import argparse
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402

from jaxbridge import host_errors  # noqa: E402
from jaxbridge.adapters.optimize import LinearSumAssignment, Linprog, OptimizeError  # noqa: E402

ANGLE, SHIFT, NOISE = 0.35, np.array([0.4, -0.25]), 1e-3


def moved(params, points):
    """``points`` rotated by ``params[0]`` and shifted by ``params[1:]``."""
    c, s = jnp.cos(params[0]), jnp.sin(params[0])
    return points @ jnp.array([[c, s], [-s, c]]) + params[1:]


def squared_distances(a, b):
    return jnp.sum((a[:, None, :] - b[None, :, :]) ** 2, -1)


def matching_loss(params, points, targets):
    cost = squared_distances(moved(params, points), targets)
    rows, cols = LinearSumAssignment()(cost)
    return cost[rows, cols].mean()


def transport_check(cost: np.ndarray) -> tuple[float, np.ndarray, str]:
    """The assignment as a transport problem over plans ``P >= 0`` with unit row and column
    sums, through ``Linprog``: its optimal cost, the cost's gradient in ``cost`` (n, n), and
    the error that the plan's derivative raises."""
    n = len(cost)
    rows = np.kron(np.eye(n), np.ones(n))  # Σ_j P_ij = 1
    cols = np.kron(np.ones(n), np.eye(n))[1:]  # Σ_i P_ij = 1 (one is implied by the others)
    a_eq, b_eq = np.vstack([rows, cols]), np.ones(2 * n - 1)
    lower, upper = np.zeros(n * n), np.full(n * n, np.inf)

    def solved(c):
        return Linprog()(c, None, None, a_eq, b_eq, lower, upper)

    c = jnp.asarray(cost.ravel())
    value = float(solved(c)[1])
    gradient = np.asarray(jax.grad(lambda c: solved(c)[1])(c)).reshape(n, n)
    try:
        with host_errors():
            jax.jvp(lambda c: solved(c)[0], (c,), (jnp.ones_like(c),))
    except OptimizeError as error:
        return value, gradient, str(error)
    return value, gradient, ""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", action="store_true", help="16 points instead of 40")
    n = 16 if parser.parse_args().fast else 40
    print(f"Matching registration: {n} unlabelled points, a rotation and a shift to recover")

    rng = np.random.default_rng(7)
    points = rng.uniform(-1, 1, (n, 2))
    truth = jnp.array([ANGLE, *SHIFT])
    targets = np.asarray(moved(truth, points)) + NOISE * rng.normal(size=(n, 2))
    targets = jnp.asarray(targets[rng.permutation(n)])
    points = jnp.asarray(points)

    # the loss is not convex in the angle: descend from 24 starting angles at once (vmap:
    # one host call matches all 24) and keep the best
    step = jax.jit(jax.vmap(jax.value_and_grad(matching_loss), (0, None, None)))
    starts = np.linspace(-np.pi, np.pi, 24, endpoint=False)
    params = jnp.asarray(np.stack([starts, np.zeros(24), np.zeros(24)], -1))
    for i in range(150):
        losses, gradients = step(params, points, targets)
        params = params - 0.2 * gradients
        if i % 30 == 0:
            best = int(jnp.argmin(losses))
            angle = float(params[best, 0])
            print(f"  step {i:3d}: best loss {float(losses[best]):.3e}, angle {angle:+.4f}")
    params = params[int(jnp.argmin(step(params, points, targets)[0]))]
    angle_error = abs(float(params[0]) - ANGLE)
    shift_error = float(np.abs(np.asarray(params[1:]) - SHIFT).max())
    print(f"  fitted angle {float(params[0]):.5f} (true {ANGLE}), shift {np.asarray(params[1:])}")

    cost = np.asarray(squared_distances(moved(params, points), targets))
    rows, cols = scipy.optimize.linear_sum_assignment(cost)
    lp_cost, lp_gradient, refusal = transport_check(cost)
    assignment_cost = float(cost[rows, cols].sum())
    permutation = np.zeros_like(cost)
    permutation[rows, cols] = 1.0
    gradient_error = float(np.abs(lp_gradient - permutation).max())
    print(f"  transport LP cost {lp_cost:.10f}, assignment {assignment_cost:.10f}")
    print(f"  the LP cost's gradient is {gradient_error:.1e} from the assignment's matrix")
    print(f"  the LP plan's derivative: {(refusal.splitlines() or ['not refused'])[0][:90]}...")

    if angle_error > 1e-3 or shift_error > 1e-3:
        print(f"FAILED: angle off by {angle_error:.2e}, shift by {shift_error:.2e}")
        return 1
    if abs(lp_cost - assignment_cost) > 1e-9 * max(1.0, assignment_cost):
        print(f"FAILED: the transport LP costs {lp_cost}, the assignment {assignment_cost}")
        return 1
    if gradient_error > 1e-9:
        print("FAILED: the transport LP's gradient in the costs is not the assignment")
        return 1
    if "degenerate" not in refusal:
        print("FAILED: Linprog gave a derivative of a degenerate transport plan")
        return 1
    print(
        "Success: the fitted rotation and shift are within 1e-3 of the true ones; Linprog's "
        "transport plan costs what the assignment does, its gradient is the assignment, and "
        "its degenerate plan's derivative is refused."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
