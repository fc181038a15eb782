"""``MinimizeBounded`` and ``MinimizeConstrained`` judge each multiplier on its own scale
(#54): a bound or inequality is weakly active when its multiplier is zero to rounding of the
terms it sums, not when it is small beside the largest gradient entry, and an inequality's
value is read as a distance in ``x``. Each case was refused on a clean point by the global
floor ``1.5e-8 max(1, max|∇f|)``; references are central differences of SciPy's own
solutions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import jaxbridge as jb
from jaxbridge.adapters.optimize import MinimizeBounded, MinimizeConstrained


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


class Weighted(jb.Adapter):
    """``½ w |x - θ|²``."""

    w: float = 1.0

    signature = "(n),(n)->()"

    def forward(self, x, theta):
        return 0.5 * self.w * np.sum((x - theta) ** 2)

    def backward(self, res, g):
        x, theta, _ = res
        return g * self.w * (x - theta), -g * self.w * (x - theta)


class AtMostOne(jb.Adapter):
    """``(s (1 - x₀), 1 - x₁) >= 0``: the first in units ``s`` times the second's."""

    s: float

    signature = "(n),(p)->(m)"

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct((2,), x.dtype)

    def forward(self, x, theta):
        return np.array([self.s * (1 - x[0]), 1 - x[1]])

    def backward(self, res, g):
        x, theta, _ = res
        return np.array([-self.s * g[0], -g[1]]), np.zeros_like(theta)


def central(fun, at, h=1e-3):
    at = np.asarray(at, np.float64)
    return np.stack([(fun(at + h * e) - fun(at - h * e)) / (2 * h) for e in np.eye(len(at))], -1)


def scipy_box(theta, upper):
    def f(x):
        return 0.5 * np.sum((x - theta) ** 2), x - theta

    bounds = list(zip([-5.0, -5.0], upper))
    options = {"gtol": 1e-10, "ftol": 1e-15}
    return scipy.optimize.minimize(
        f, np.zeros(2), jac=True, method="L-BFGS-B", bounds=bounds, options=options
    ).x


def test_a_bound_held_by_0_1_beside_one_held_by_1e7():
    """x₁ at its upper bound 1 with ∂f/∂x₁ = -0.1, x₀ at 1 with -1e7: the floor 1.5e-8 ×
    1e7 = 0.15 called x₁'s multiplier zero. x follows the upper bounds, not θ."""
    theta, lower, upper = jnp.array([1 + 1e7, 1.1]), jnp.full(2, -5.0), jnp.ones(2)
    solve = MinimizeBounded(Weighted())
    x0 = jnp.zeros(2)
    np.testing.assert_array_equal(solve(x0, theta, lower, upper), [1.0, 1.0])
    by_upper = jax.jacrev(lambda u: solve(x0, theta, lower, u))(upper)
    by_theta = jax.jacfwd(lambda t: solve(x0, t, lower, upper))(theta)
    expected_upper = central(lambda u: scipy_box(np.asarray(theta), u), upper)
    expected_theta = central(lambda t: scipy_box(t, np.asarray(upper)), theta)
    np.testing.assert_allclose(expected_upper, np.eye(2), atol=1e-9)  # (SciPy agrees)
    np.testing.assert_allclose(by_upper, expected_upper, atol=1e-9)
    np.testing.assert_allclose(by_theta, expected_theta, atol=1e-9)


def scipy_constrained(theta, s):
    def f(x):
        return 0.5 * np.sum((x - theta) ** 2), x - theta

    constraint = {
        "type": "ineq",
        "fun": lambda x: np.array([s * (1 - x[0]), 1 - x[1]]),
        "jac": lambda x: np.array([[-s, 0.0], [0.0, -1.0]]),
    }
    options = {"ftol": 1e-15, "maxiter": 500}
    return scipy.optimize.minimize(
        f, np.zeros(2), jac=True, method="SLSQP", constraints=[constraint], options=options
    ).x


@pytest.mark.parametrize(
    ("s", "theta", "w"),
    [
        (1e9, [2.0, 0.5], 1.0),  # active, multiplier 1e-9 in the constraint's units
        (1e-10, [0.5, 0.5], 1.0),  # inactive, c = 5e-11 but x₀ 0.5 from its limit
        (1.0, [2.0, 0.5], 1e-9),  # active, multiplier 1e-9: the objective in other units
        # active in small units (multiplier 1e6, 1e10): the KKT matrix's condition number
        # was the constraint's units', 1e-12 and below, refused as "not isolated"
        (1e-6, [2.0, 0.5], 1.0),
        (1e-10, [2.0, 0.5], 1.0),
    ],
    ids=[
        "constraint-in-large-units",
        "constraint-in-small-units",
        "objective-in-small-units",
        "active-in-units-of-1e-6",
        "active-in-units-of-1e-10",
    ],
)
def test_an_inequality_in_other_units_is_judged_in_its_own(s, theta, w):
    """Each was refused as degenerate (a multiplier below 1.5e-8 max(1, max|∇f|), or a value
    below 1.5e-8 in the constraint's units). The minimiser of ``w f`` is that of ``f``:
    SciPy's differences are of the problem with ``w = 1``, which it solves."""
    solve = MinimizeConstrained(Weighted(w), ineq=AtMostOne(s))
    x0, theta = jnp.zeros(2), jnp.array(theta)
    expected = central(lambda t: scipy_constrained(t, s), theta)
    np.testing.assert_allclose(solve(x0, theta), scipy_constrained(np.asarray(theta), s), atol=1e-9)
    np.testing.assert_allclose(jax.jacrev(lambda t: solve(x0, t))(theta), expected, atol=1e-9)
    np.testing.assert_allclose(jax.jacfwd(lambda t: solve(x0, t))(theta), expected, atol=1e-9)
