"""Queries of any shape, as SciPy takes them: a scalar query (one point of ``d`` coordinates
for the interpolants in several dimensions) gives a scalar, and ``jax.vmap`` of a function
of one query point works, as the JAX idiom for derivatives at many points needs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.interpolate as si

from jaxbridge.adapters import interpolate

X = np.array([0.0, 0.7, 1.5, 2.1, 3.0, 4.2])
Y = np.sin(X) + X
TS = np.array([0.3, 1.1, 2.6, 3.9])

ONE_D = {
    "CubicSpline": (interpolate.CubicSpline(), lambda: si.CubicSpline(X, Y)),
    "make_interp_spline": (interpolate.make_interp_spline, lambda: si.make_interp_spline(X, Y)),
    "PchipInterpolator": (interpolate.PchipInterpolator(), lambda: si.PchipInterpolator(X, Y)),
    "Akima1DInterpolator": (
        interpolate.Akima1DInterpolator(),
        lambda: si.Akima1DInterpolator(X, Y),
    ),
}


@pytest.fixture(autouse=True)
def _precision():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("name", sorted(ONE_D))
def test_one_d_scalar_queries_and_the_vmap_of_grad_idiom(name):
    adapter, scipy = ONE_D[name]
    reference = scipy()
    value = adapter(X, Y, TS[1])
    assert value.shape == ()
    np.testing.assert_allclose(value, reference(TS[1]), rtol=1e-14)
    slopes = jax.jit(jax.vmap(jax.grad(lambda t: adapter(X, Y, t))))(TS)
    np.testing.assert_allclose(slopes, reference(TS, 1), rtol=1e-12)
    # a query array of any shape: the result has its shape
    grid = TS.reshape(2, 2)
    np.testing.assert_allclose(adapter(X, Y, grid), reference(grid), rtol=1e-14)


def _grid():
    axes = (np.array([0.0, 1.0, 2.5, 3.0]), np.array([-1.0, 0.0, 2.0]))
    values = np.add.outer(axes[0] ** 2, np.cos(axes[1]))
    point = np.array([1.3, 0.4])
    reference = si.RegularGridInterpolator(axes, values, method="linear")
    return interpolate.RegularGridInterpolator(), axes, values, point, reference


def _scattered(cls, reference):
    rng = np.random.default_rng(3)
    points = rng.uniform(0, 1, (12, 2))
    values = points[:, 0] ** 2 - points[:, 1]
    point = np.array([0.45, 0.5])
    return cls(), points, values, point, reference(points, values)


SEVERAL_D = {
    "RegularGridInterpolator": _grid,
    "LinearNDInterpolator": lambda: _scattered(
        interpolate.LinearNDInterpolator, si.LinearNDInterpolator
    ),
    "CloughTocher2DInterpolator": lambda: _scattered(
        interpolate.CloughTocher2DInterpolator, si.CloughTocher2DInterpolator
    ),
    "RBFInterpolator": lambda: _scattered(interpolate.RBFInterpolator, si.RBFInterpolator),
}


@pytest.mark.parametrize("name", sorted(SEVERAL_D))
def test_one_point_queries_in_several_dimensions(name):
    adapter, points, values, point, reference = SEVERAL_D[name]()
    value = adapter(points, values, point)
    assert value.shape == ()
    np.testing.assert_allclose(value, reference(point[None])[0], rtol=1e-13)
    many = np.stack([point, point * 0.9, point * 1.1])
    gradients = jax.vmap(jax.grad(lambda p: adapter(points, values, p)))(jnp.asarray(many))
    batched = jax.vmap(jax.grad(lambda p: adapter(points, values, p[None])[0]))(many)
    np.testing.assert_allclose(gradients, batched, rtol=1e-14)
    h = 1e-6  # and against SciPy's values, by central differences
    for i in range(2):
        e = np.eye(2)[i] * h
        expected = (reference(many + e) - reference(many - e)) / (2 * h)
        np.testing.assert_allclose(gradients[:, i], expected, rtol=1e-6, atol=1e-8)
