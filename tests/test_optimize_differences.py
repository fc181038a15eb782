"""Second derivatives by differences of exact gradients, when an objective has no ``hessian``
hook: every column's points of a round in one call of a vectorized objective, the same
numbers as one call per point, accurate against the closed form, inside a box."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters.optimize import Minimize
from jaxbridge.adapters.optimize._differences import RIDDERS_STEPS, derivative_columns
from jaxbridge.adapters.optimize._functions import HostFunction


class Chained(jb.Adapter):
    """``Σ (a - x_i)² + b (x_{i+1} - x_i²)²``, theta ``(a, b)``: vectorized, no hook;
    ``calls`` counts its ``backward`` calls and the batch sizes they saw."""

    signature = "(n),(p)->()"
    vectorized = True

    def __post_init__(self):
        object.__setattr__(self, "calls", [])

    def forward(self, x, theta):
        a, b = theta[..., 0:1], theta[..., 1:2]
        head, tail = x[..., :-1], x[..., 1:]
        return np.sum((a - head) ** 2 + b * (tail - head**2) ** 2, -1)

    def backward(self, res, g):
        x, theta, _ = res
        self.calls.append(x.shape[:-1])
        a, b = theta[..., 0:1], theta[..., 1:2]
        head, tail = x[..., :-1], x[..., 1:]
        r = tail - head**2
        gx = np.zeros(np.broadcast_shapes(x.shape, theta.shape[:-1] + (1,)))
        gx[..., :-1] += -2 * (a - head) - 4 * b * r * head
        gx[..., 1:] += 2 * b * r
        gt = np.stack([np.sum(2 * (a - head), -1), np.sum(r**2, -1)], -1)
        g = np.asarray(g)[..., None]
        return g * gx, g * gt


class LoopedChained(Chained):
    vectorized = False


class HookedChained(Chained):
    def hessian(self, x, theta):
        return chained_hessian(x, theta)


def chained_hessian(x, theta):
    """``(∂²f/∂x², ∂²f/∂x∂θ)`` in closed form."""
    a, b = theta
    n = len(x)
    hxx, hxt = np.zeros((n, n)), np.zeros((n, 2))
    for i in range(n - 1):
        r = x[i + 1] - x[i] ** 2
        hxx[i, i] += 2 - 4 * b * r + 8 * b * x[i] ** 2
        hxx[i, i + 1] -= 4 * b * x[i]
        hxx[i + 1, i] -= 4 * b * x[i]
        hxx[i + 1, i + 1] += 2 * b
        hxt[i, 0] -= 2
        hxt[i, 1] -= 4 * r * x[i]
        hxt[i + 1, 1] += 2 * r
    return hxx, hxt


N = 20
X = np.random.default_rng(0).uniform(-1.5, 1.5, N)
THETA = np.array([0.8, 4.0])


@pytest.mark.parametrize("rough", [False, True])
def test_a_vectorized_objective_is_called_once_per_round(rough):
    """20 columns: one ``backward`` call per round for every column's points (a looped
    objective: 4 to 24 calls per column; rough, one), with the same numbers. Central
    differences do not read ``x`` itself; the rough ones, one-sided, read it once."""
    vectorized, looped = Chained(), LoopedChained()
    got = HostFunction(vectorized, THETA).second(X, rough)
    expected = HostFunction(looped, THETA).second(X, rough)
    for g, e in zip(got, expected):
        assert np.array_equal(g, e)
    rounds = vectorized.calls
    if rough:  # x + h e_j for every j, then x alone
        assert len(rounds) == 2 and rounds[0] == (N,)
        assert len(looped.calls) == N + 1
    else:  # x ± h e_j for every j
        assert 1 <= len(rounds) <= RIDDERS_STEPS and rounds[0] == (2 * N,)
        assert len(looped.calls) >= 4 * N


def test_differences_match_the_closed_form():
    hxx, hxt = HostFunction(Chained(), THETA).second(X)
    exact_xx, exact_xt = chained_hessian(X, THETA)
    scale = np.abs(exact_xx).max()
    np.testing.assert_allclose(hxx, exact_xx, rtol=0, atol=1e-11 * scale)
    np.testing.assert_allclose(hxt, exact_xt, rtol=0, atol=1e-11 * np.abs(exact_xt).max())


def test_one_sided_differences_at_the_bounds_of_a_box():
    """Coordinates at a bound (or nearer to it than the step) are differenced into the box;
    the batched points stay inside it, and the Hessian is still accurate."""
    lower, upper = X - 1.0, X + 1.0
    lower[:5] = X[:5]  # at the lower bound
    upper[5:10] = X[5:10] + 1e-5  # nearer than the first step
    seen = []

    class Boxed(Chained):
        def backward(self, res, g):
            seen.append(np.array(res[0]))
            return super().backward(res, g)

    hxx, hxt = HostFunction(Boxed(), THETA, box=(lower, upper)).second(X)
    points = np.concatenate([p.reshape(-1, N) for p in seen])
    assert np.all(points >= lower) and np.all(points <= upper)
    exact_xx, exact_xt = chained_hessian(X, THETA)
    # one-sided differences of a quartic: about 1e-9 of the scale
    np.testing.assert_allclose(hxx, exact_xx, rtol=0, atol=1e-8 * np.abs(exact_xx).max())
    np.testing.assert_allclose(hxt, exact_xt, rtol=0, atol=1e-8 * np.abs(exact_xt).max())
    expected = HostFunction(LoopedChained(), THETA, box=(lower, upper)).second(X)
    assert np.array_equal(hxx, expected[0]) and np.array_equal(hxt, expected[1])


def test_minimize_without_a_hook_differentiates_as_with_one():
    """The minimiser's sensitivity through batched differences agrees with the exact hook's
    (a 1%-wrong Hessian would be far off)."""
    x0 = jnp.full(8, 0.5)
    theta = jnp.array([0.9, 3.0])
    with jax.enable_x64(True):
        plain = jax.jacrev(Minimize(Chained()), 1)(x0, theta)
        hooked = jax.jacrev(Minimize(HookedChained()), 1)(x0, theta)
    np.testing.assert_allclose(plain, hooked, rtol=0, atol=1e-10 * np.abs(hooked).max())


class WrongBatch(Chained):
    """Returns one gradient for the whole batch of points, summed over it."""

    def backward(self, res, g):
        gx, gt = super().backward(res, g)
        return (gx.sum(0) if gx.ndim == 2 and len(gx) > 1 else gx), gt


def test_a_batched_cotangent_of_the_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"WrongBatch\.backward: the cotangent of 'x' has shape"):
        HostFunction(WrongBatch(), THETA).second(X)


class Residuals(jb.Adapter):
    """``r_i = exp(θ_i x_i) + x_i x_{i+1}`` (cyclic): a vector function, vectorized."""

    signature = "(n),(p)->(n)"
    vectorized = True

    def __post_init__(self):
        object.__setattr__(self, "calls", [])

    def forward(self, x, theta):
        return np.exp(theta * x) + x * np.roll(x, -1, -1)

    def backward(self, res, g):
        x, theta, _ = res
        self.calls.append(np.shape(g))
        e = np.exp(theta * x)
        gx = g * (theta * e + np.roll(x, -1, -1)) + np.roll(g * x, 1, -1)
        return gx, g * x * e


class LoopedResiduals(Residuals):
    vectorized = False


def test_the_contracted_second_derivatives_of_a_vector_function_are_batched():
    """``Σ wᵢ ∇²rᵢ`` (``LeastSquares``, the constraints of ``MinimizeConstrained``): one call
    per round with the weights as every point's cotangent, the looped function's numbers,
    and the closed form."""
    n = 6
    rng = np.random.default_rng(2)
    x, theta, w = rng.uniform(-1, 1, n), rng.uniform(0.5, 1.5, n), rng.normal(size=n)
    vectorized = Residuals()
    hxx, hxt = HostFunction(vectorized, theta).contracted(w).second(x)
    expected = HostFunction(LoopedResiduals(), theta).contracted(w).second(x)
    assert np.array_equal(hxx, expected[0]) and np.array_equal(hxt, expected[1])
    assert vectorized.calls[0] == (2 * n, n) and len(vectorized.calls) <= RIDDERS_STEPS
    e = np.exp(theta * x)
    exact_xx = np.diag(w * theta**2 * e)
    for i in range(n):  # w_i x_i x_{i+1}
        j = (i + 1) % n
        exact_xx[i, j] += w[i]
        exact_xx[j, i] += w[i]
    exact_xt = np.diag(w * e * (1 + theta * x))
    np.testing.assert_allclose(hxx, exact_xx, rtol=0, atol=1e-11 * np.abs(exact_xx).max())
    np.testing.assert_allclose(hxt, exact_xt, rtol=0, atol=1e-11 * np.abs(exact_xt).max())


@pytest.mark.parametrize("seed", range(6))
def test_the_two_loops_take_the_same_steps_to_the_same_bits(seed):
    """One column at a time (a looped function) and all together (a vectorized one) are the
    same rule: equal to the bit on a function of several scales, in a box and out of it,
    where some points give NaN (never chosen) and where rounding stops the steps early."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    x = rng.normal(size=n) * 2
    scales = 10.0 ** rng.uniform(-3, 2, n)
    poisoned = rng.uniform(0, 1e-4)  # points this close to x + 1e-5 e_0 give NaN

    def first(point):
        value = np.concatenate([np.sin(scales * point) / scales, np.exp(0.1 * point) * point])
        return value * np.nan if abs(point[0] - x[0] - 1e-5) < poisoned else value

    def firsts(points):
        return np.stack([first(p) for p in points])

    box = None
    if seed % 2:
        box = (x - rng.uniform(0, 2e-3, n), x + rng.uniform(0, 2e-3, n))
        box[0][0] = x[0]  # at a bound
    bases = []

    def base():
        bases.append(x)
        return first(x)

    for rough in (False, True):
        alone = derivative_columns(x, 2 * n, base, first, box, rough)
        together = derivative_columns(x, 2 * n, base, first, box, rough, firsts)
        np.testing.assert_array_equal(alone, together)
    # the value at x only for one-sided differences (a box, or rough), once per call
    assert len(bases) == (4 if box is not None else 2)
