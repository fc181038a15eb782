"""A user's adapter inside an optimize or integrate adapter of ours: its ``backward`` is
called on the host directly, so a cotangent of the wrong shape must be refused by name, not
broadcast into a wrong gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters import Minimize, OdeSolve, Quad, Root

pytestmark = pytest.mark.slow  # user adapters inside optimize/integrate solves


class Line(jb.Adapter):
    """f(x; θ) = θ₀ + θ₁ x, with the derivative in θ₁ forgotten when ``short``."""

    signature = "(),(p)->()"

    short: bool = False

    def forward(self, x, theta):
        return theta[..., 0] + theta[..., 1] * x

    def backward(self, res, g):
        x, theta, _ = res
        d_theta = np.stack([g, g * x], -1)
        return g * theta[..., 1], d_theta[..., :1] if self.short else d_theta


class Decay(jb.Adapter):
    """y' = -θ₀ y + θ₁."""

    signature = "(),(n),(p)->(n)"

    short: bool = False

    def forward(self, t, y, theta):
        return -theta[..., :1] * y + theta[..., 1:]

    def backward(self, res, g):
        _, y, theta, _ = res
        d_theta = np.stack([-np.sum(g * y, -1), np.sum(g, -1)], -1)
        return None, -theta[..., :1] * g, d_theta[..., :1] if self.short else d_theta


class Quartic(jb.Adapter):
    """f(x; θ) = Σ (x - θ₀)² + θ₁ Σ x⁴."""

    signature = "(n),(p)->()"

    short: bool = False

    def forward(self, x, theta):
        return np.sum((x - theta[..., :1]) ** 2, -1) + theta[..., 1] * np.sum(x**4, -1)

    def backward(self, res, g):
        x, theta, _ = res
        g = np.asarray(g)[..., None]
        gx = g * (2 * (x - theta[..., :1]) + 4 * theta[..., 1:] * x**3)
        d_theta = g * np.stack([-2 * np.sum(x - theta[..., :1], -1), np.sum(x**4, -1)], -1)
        return gx, d_theta[..., :1] if self.short else d_theta


class Cubic(jb.Adapter):
    """F(x; θ) = x³ + θ₁ x - θ₀."""

    signature = "(n),(p)->(n)"

    short: bool = False

    def forward(self, x, theta):
        return x**3 + theta[1] * x - theta[0]

    def backward(self, res, g):
        x, theta, _ = res
        d_theta = np.array([-np.sum(g), np.sum(g * x)])
        return g * (3 * x**2 + theta[1]), d_theta[:1] if self.short else d_theta


class VectorizedDecay(Decay):
    vectorized = True


class VectorizedQuartic(Quartic):
    vectorized = True


THETA = np.array([1.0, 0.5])


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def quad(adapter):
    return jax.grad(lambda t: Quad(adapter)(t, 0.0, 1.0))(THETA)


def ode(adapter, sensitivity):
    solve = OdeSolve(adapter, sensitivity=sensitivity)
    return jax.grad(lambda t: solve(jnp.array([1.0]), t, jnp.array([0.0, 1.0]))[-1, 0])(THETA)


def minimize(adapter):
    return jax.grad(lambda t: Minimize(adapter)(jnp.zeros(3), t).sum())(THETA)


def root(adapter):
    return jax.jacrev(Root(adapter), 1)(jnp.ones(2), THETA)[0]


def test_right_cotangents_give_the_exact_gradients():
    np.testing.assert_allclose(quad(Line()), [1.0, 0.5], rtol=1e-10)
    # y(1) = θ₁/θ₀ + (1 - θ₁/θ₀) e^{-θ₀} at θ = (1, 1/2)
    e = np.exp(-1.0)
    exact = [-0.5 + 0.5 * e - 0.5 * e, 1 - e]
    for adapter, sensitivity in [(Decay(), "adjoint"), (VectorizedDecay(), "forward")]:
        np.testing.assert_allclose(ode(adapter, sensitivity), exact, rtol=1e-5)
    x = float(Minimize(Quartic())(jnp.zeros(3), THETA)[0])
    curvature = 2 + 12 * 0.5 * x**2
    for adapter in (Quartic(), VectorizedQuartic()):
        np.testing.assert_allclose(
            minimize(adapter), [3 * 2 / curvature, 3 * -4 * x**3 / curvature], rtol=1e-6
        )
    r = float(Root(Cubic())(jnp.ones(2), THETA)[0])
    d = 3 * r**2 + 0.5
    np.testing.assert_allclose(root(Cubic()), [1 / d, -r / d], rtol=1e-8)


@pytest.mark.parametrize(
    "gradient, adapter, who",
    [
        (quad, Line(short=True), r"Quad's integrand Line\.backward"),
        (lambda a: ode(a, "adjoint"), Decay(short=True), r"OdeSolve's rhs Decay\.backward"),
        (
            lambda a: ode(a, "forward"),
            VectorizedDecay(short=True),
            r"OdeSolve's rhs VectorizedDecay\.backward",
        ),
        (minimize, Quartic(short=True), r"Quartic\.backward"),
        (minimize, VectorizedQuartic(short=True), r"VectorizedQuartic\.backward"),
        (root, Cubic(short=True), r"Cubic\.backward"),
    ],
)
def test_a_cotangent_of_the_wrong_shape_is_refused_by_name(gradient, adapter, who):
    with pytest.raises(
        ValueError,
        match=who + r": the cotangent of 'theta' has shape \(.*1,?\), expected \(.*2,?\)",
    ):
        gradient(adapter)


class DecayWithTupleJvp(Decay):
    """``Decay`` whose host ``jvp`` returns its one tangent in a tuple, as the bridge
    accepts."""

    def jvp(self, res, tangents):
        _, y, theta, _ = res
        _, dy, dtheta = tangents
        total = np.zeros_like(y)
        if dy is not None:
            total = total - theta[..., :1] * dy
        if dtheta is not None:
            total = total - dtheta[..., :1] * y + dtheta[..., 1:]
        return (total,)


def test_a_host_jvp_returning_a_tuple_is_accepted_inside_odesolve():
    """jacfwd through ``OdeSolve`` uses the rhs's own ``jvp``: y(1) = θ₁/θ₀ + (1 - θ₁/θ₀)
    e^{-θ₀} at θ = (1, 1/2), y0 = 1."""
    solve = OdeSolve(DecayWithTupleJvp(), rtol=1e-10, atol=1e-12, sensitivity="adjoint")
    got = jax.jacfwd(lambda t: solve(jnp.array([1.0]), t, jnp.array([0.0, 1.0]))[-1, 0])(THETA)
    e = np.exp(-1.0)
    np.testing.assert_allclose(got, [-0.5 + 0.5 * e - 0.5 * e, 1 - e], rtol=1e-7)
