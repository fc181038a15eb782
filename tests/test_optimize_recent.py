"""What the optimize adapters remember of the user's calls (``_functions.Recent``): the
checks do not ask again for what SciPy asked at its start and at its answer, a caller that
changes what it was given changes nothing remembered, and another point is never served."""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from _optimize_problems import Kepler, PlainRosenbrock

from jaxbridge.adapters.optimize import Minimize, Root
from jaxbridge.adapters.optimize._functions import HostFunction

POINTS: dict[str, list[bytes]] = {"forward": [], "backward": []}
"""The points the counted adapters were called at, by method (adapters are frozen)."""


def counted():
    for calls in POINTS.values():
        calls.clear()
    return POINTS


class Recorded:
    """Records the point of each ``forward`` and ``backward`` call in ``POINTS``."""

    def forward(self, x, theta):
        POINTS["forward"].append(np.asarray(x, np.float64).tobytes())
        return super().forward(x, theta)  # pyright: ignore[reportAttributeAccessIssue]

    def backward(self, res, g):
        POINTS["backward"].append(np.asarray(res[0], np.float64).tobytes())
        return super().backward(res, g)  # pyright: ignore[reportAttributeAccessIssue]


class Counted(Recorded, Kepler):
    """Kepler's equation, its calls recorded."""


class CountedRosenbrock(Recorded, PlainRosenbrock):
    """Rosenbrock's function without a hook, its calls recorded."""


def repeats(points: list[bytes]) -> int:
    return len(points) - len(set(points))


def test_a_value_and_a_jacobian_are_never_asked_twice_at_one_point_by_root():
    """SciPy asks for the value at ``x0`` twice itself (its shape check, then MINPACK's first
    step), and the scale of the check a third time: one call. Its last value is at its
    answer, which the loose check reads."""
    residual, points = Counted(), counted()
    x0, theta = np.array([1.0]), np.array([0.5, 1.2])
    with jax.enable_x64(True):
        x = Root(residual)(jnp.asarray(x0), jnp.asarray(theta))
    assert repeats(points["forward"]) == 0
    assert points["forward"][0] == x0.tobytes()
    direct = scipy.optimize.root(lambda x: residual.forward(x, theta), x0, method="hybr")
    np.testing.assert_allclose(x, direct.x, rtol=1e-10)


def test_the_checks_reuse_scipys_gradients_at_its_start_and_its_answer():
    """L-BFGS-B evaluates value and gradient at ``x0`` and at its answer; the check's scale
    (the gradient at ``x0``) and its first residual (the gradient at the answer) are those."""
    objective, points = CountedRosenbrock(), counted()
    x0, theta = np.array([-1.2, 1.0]), np.array([1.1, 5.5])
    with jax.enable_x64(True):
        Minimize(objective)(jnp.asarray(x0), jnp.asarray(theta))
    assert repeats(points["forward"]) == 0
    assert repeats(points["backward"]) == 0


def test_what_a_caller_changes_is_not_what_is_remembered():
    theta, x = np.array([0.5, 1.2]), np.array([0.7])
    f = HostFunction(Kepler(), theta)
    expected_value = Kepler().forward(x, theta)
    expected_jacobian = HostFunction(Kepler(), theta).jacobian_x(x)
    for _ in range(3):  # what was computed, then what was remembered, changed by the caller
        value, jacobian = f(x), f.jacobian_x(x)
        np.testing.assert_array_equal(value, expected_value)
        np.testing.assert_array_equal(jacobian, expected_jacobian)
        value[:] = 99.0
        jacobian[:] = 99.0
    x[:] = 0.3  # the caller's point moved: the remembered one did not
    np.testing.assert_array_equal(f(x), Kepler().forward(np.array([0.3]), theta))


def test_the_first_point_and_the_last_two_are_remembered_and_no_other():
    adapter, calls = Counted(), counted()["forward"]
    f = HostFunction(adapter, np.array([0.5, 1.2]))
    points = [np.array([v]) for v in (0.1, 0.2, 0.3, 0.4)]
    for x in points:
        f(x)
    assert len(calls) == 4
    for x in (points[0], points[2], points[3]):  # the first, and the last two
        f(x)
    assert len(calls) == 4
    f(points[1])  # forgotten: asked again, and right
    assert len(calls) == 5
    np.testing.assert_array_equal(f(points[1]), Kepler().forward(points[1], np.array([0.5, 1.2])))
