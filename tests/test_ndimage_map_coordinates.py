"""``MapCoordinates`` (``map_coordinates``): SciPy's values bitwise in every mode and order;
derivatives in the points against central differences of SciPy's own ``map_coordinates``
and closed forms (a linear image reproduced exactly, order 1's slope at a knot, order 0's
zero); the transpose in the image checked by ``<A x, y> = <x, Aᵀ y>`` with ``A`` SciPy's;
every transformation; bad input named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

from jaxbridge.adapters.ndimage import MapCoordinates, map_coordinates

MODES = ["constant", "grid-constant", "nearest", "mirror", "reflect", "grid-mirror", "wrap"]
MODES += ["grid-wrap"]
RNG = np.random.default_rng(0)
IMAGE = RNG.normal(size=(5, 6))
# inside, beyond every edge, on the knots and half-knots, and far out (the folding)
POINTS = np.concatenate(
    [
        RNG.uniform(-8, 14, size=(2, 24)),
        np.array(
            [[0.0, 4.0, 2.0, 2.5, -0.5, 4.5, -1.0, 5.0], [0.0, 5.0, 3.0, 1.5, 5.5, -0.5, 6, -1]]
        ),
    ],
    axis=1,
)
WEIGHTS = np.cos(np.arange(POINTS.shape[1]))  # the loss w · map_coordinates(...)


def scipy_values(image, points, order, mode, cval=0.25, prefilter=True):
    return ndi.map_coordinates(
        image, points, order=order, mode=mode, cval=cval, prefilter=prefilter
    )


def central_in_points(image, points, order, mode, h=1e-6, **options):
    """d (w · map_coordinates) / d points by central differences of SciPy's."""
    gradient = np.zeros_like(points)
    for i in np.ndindex(points.shape):
        step = np.zeros_like(points)
        step[i] = h
        plus = scipy_values(image, points + step, order, mode, **options)
        minus = scipy_values(image, points - step, order, mode, **options)
        gradient[i] = WEIGHTS[: points.shape[1]] @ (plus - minus) / (2 * h)
    return gradient


def away_from_kinks(points):
    """The points whose spline is smooth within a difference step: off the integers and
    half-integers (the knots of odd and even orders, the edges, where "constant" jumps to
    ``cval`` and "wrap" folds, and the reflections' folds)."""
    distance = np.abs(2 * points - np.round(2 * points))
    return np.all(distance > 2e-3, axis=0)


@pytest.mark.parametrize("prefilter", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_values_are_scipys_bitwise(mode, prefilter):
    with jax.enable_x64(True):
        for order in range(6):
            got = map_coordinates(IMAGE, POINTS, order, mode, 0.25, prefilter)
            np.testing.assert_array_equal(
                got, scipy_values(IMAGE, POINTS, order, mode, prefilter=prefilter)
            )


def test_float32_values_and_shapes_follow_scipys_call():
    image = IMAGE.astype(np.float32)
    points = POINTS.reshape(2, 4, 8).astype(np.float32)
    got = map_coordinates(image, points, 3, "mirror")
    assert got.shape == (4, 8) and got.dtype == jnp.float32
    np.testing.assert_array_equal(got, ndi.map_coordinates(image, points, mode="mirror"))


def _point_gradient(order, mode, cval=0.25, prefilter=True):
    adapter = MapCoordinates(order, mode, cval, prefilter)
    return jax.grad(lambda p: jnp.dot(jnp.asarray(WEIGHTS), adapter(IMAGE, p)))(POINTS)


QUICK_POINT_CASES = [(3, "mirror"), (1, "constant"), (5, "nearest"), (2, "grid-constant")]


@pytest.mark.parametrize(("order", "mode"), QUICK_POINT_CASES)
def test_gradient_in_points_matches_central_differences_of_scipy(order, mode):
    with jax.enable_x64(True):
        got = np.asarray(_point_gradient(order, mode))
    smooth = away_from_kinks(POINTS)
    expected = central_in_points(IMAGE, POINTS, order, mode)
    np.testing.assert_allclose(got[:, smooth], expected[:, smooth], rtol=1e-6, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("prefilter", [True, False])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
def test_gradient_in_points_matches_central_differences_of_scipy_everywhere(order, mode, prefilter):
    with jax.enable_x64(True):
        got = np.asarray(_point_gradient(order, mode, prefilter=prefilter))
    smooth = away_from_kinks(POINTS)
    expected = central_in_points(IMAGE, POINTS, order, mode, prefilter=prefilter)
    np.testing.assert_allclose(got[:, smooth], expected[:, smooth], rtol=1e-6, atol=1e-7)


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "order", [1, pytest.param(2, marks=SLOW), 3, *[pytest.param(k, marks=SLOW) for k in (4, 5)]]
)
def test_a_linear_image_is_reproduced_with_its_slopes(order):
    # B-splines of every order reproduce linear functions: the coefficients a + b i + c j
    # (prefilter=False) give a + b x + c y between the edges, and the gradient (b, c)
    # (points at least 3 from the edges: order 5's six coefficients are all inside)
    i, j = np.indices((12, 12))
    image = 0.5 + 1.25 * i - 0.75 * j
    points = RNG.uniform(3.0, 8.0, size=(2, 7))
    adapter = MapCoordinates(order, "mirror", prefilter=False)
    with jax.enable_x64(True):
        values = adapter(image, points)
        gradient = jax.grad(lambda p: jnp.sum(adapter(image, p)))(points)
    np.testing.assert_allclose(values, 0.5 + 1.25 * points[0] - 0.75 * points[1], rtol=1e-14)
    np.testing.assert_allclose(gradient, np.broadcast_to([[1.25], [-0.75]], (2, 7)), rtol=1e-13)


def test_order_1_takes_the_slope_above_a_knot_and_order_0_none():
    row = np.array([1.0, 4.0, 2.0, 7.0])
    with jax.enable_x64(True):
        slope = jax.grad(lambda x: map_coordinates(row, x[None], 1, "nearest")[0])
        at_knots = [float(slope(jnp.array([k]))[0]) for k in (1.0, 2.0)]
        nearest = jax.grad(lambda x: jnp.sum(map_coordinates(row, x[None], 0, "nearest")))
        zero = nearest(jnp.array([0.3, 1.7, 2.5]))
    assert at_knots == [2.0 - 4.0, 7.0 - 2.0]
    np.testing.assert_array_equal(zero, 0.0)


@pytest.mark.parametrize(
    ("order", "mode"),
    [
        (3, "mirror"),
        *[
            pytest.param(*c, marks=SLOW)
            for c in ((2, "nearest"), (5, "grid-constant"), (4, "wrap"))
        ],
    ],
)
def test_the_transpose_in_the_image_is_scipys_adjoint(order, mode):
    y = RNG.normal(size=POINTS.shape[1])
    adapter = MapCoordinates(order, mode, 0.0)
    with jax.enable_x64(True):
        (transposed,) = jax.linear_transpose(lambda x: adapter(x, POINTS), IMAGE)(y)
        # with cval != 0 the map is affine: its gradient is the linear part's transpose
        gradient = jax.grad(lambda x: jnp.dot(MapCoordinates(order, mode, 2.0)(x, POINTS), y))(
            IMAGE
        )
    x = RNG.normal(size=IMAGE.shape)
    np.testing.assert_allclose(
        np.sum(x * np.asarray(transposed)),
        scipy_values(x, POINTS, order, mode, 0.0) @ y,
        rtol=1e-13,
    )
    np.testing.assert_allclose(gradient, transposed, rtol=1e-13, atol=1e-15)


def test_an_affine_case_is_not_transposable():
    adapter = MapCoordinates(1, "constant", 1.0)
    with jax.enable_x64(True), pytest.raises(Exception, match="linear"):
        jax.linear_transpose(lambda x: adapter(x, POINTS), IMAGE)(np.ones(POINTS.shape[1]))


def test_tangents_in_both_arguments_match_central_differences_of_scipy():
    t_image, t_points = RNG.normal(size=IMAGE.shape), RNG.normal(size=POINTS.shape)
    adapter = MapCoordinates(3, "reflect", 0.25)
    with jax.enable_x64(True):
        _, tangent = jax.jvp(adapter, (IMAGE, POINTS), (t_image, t_points))
    h = 1e-6
    plus = scipy_values(IMAGE + h * t_image, POINTS + h * t_points, 3, "reflect")
    minus = scipy_values(IMAGE - h * t_image, POINTS - h * t_points, 3, "reflect")
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * h), rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_hessian_in_the_points_matches_second_differences_of_scipy():
    point = np.array([1.3, 2.6])
    adapter = MapCoordinates(3, "mirror")
    with jax.enable_x64(True):
        hessian = jax.hessian(lambda p: adapter(IMAGE, p[:, None])[0])(point)
    h = 1e-4
    expected = np.zeros((2, 2))
    for a in range(2):
        for b in range(2):
            ea, eb = np.eye(2)[a] * h, np.eye(2)[b] * h

            def value(p):
                return scipy_values(IMAGE, p[:, None], 3, "mirror")[0]

            expected[a, b] = (
                value(point + ea + eb)
                - value(point + ea - eb)
                - value(point - ea + eb)
                + value(point - ea - eb)
            ) / (4 * h * h)
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)


def test_jit_vmap_and_grad_compose():
    adapter = MapCoordinates(3, "nearest")
    sets = np.stack([POINTS, POINTS + 0.5, POINTS - 1.25])
    images = np.stack([IMAGE, 2 * IMAGE, IMAGE**2])
    with jax.enable_x64(True):
        batched = jax.jit(jax.vmap(adapter, (None, 0)))(IMAGE, sets)
        both = jax.vmap(adapter)(images, sets)
        gradients = jax.vmap(jax.grad(lambda x, p: jnp.sum(adapter(x, p) ** 2)), (None, 0))(
            IMAGE, sets
        )
        one = jax.grad(lambda x: jnp.sum(adapter(x, sets[1]) ** 2))(IMAGE)
    for k in range(3):
        np.testing.assert_array_equal(batched[k], scipy_values(IMAGE, sets[k], 3, "nearest", 0.0))
        np.testing.assert_array_equal(both[k], scipy_values(images[k], sets[k], 3, "nearest", 0.0))
    np.testing.assert_allclose(gradients[1], one, rtol=1e-13)


@pytest.mark.slow
def test_a_three_dimensional_image():
    image = RNG.normal(size=(3, 4, 5))
    points = RNG.uniform(-1, 4, size=(3, 6))
    with jax.enable_x64(True):
        values = map_coordinates(image, points, 2, "grid-wrap")
        gradient = jax.grad(
            lambda p: jnp.dot(WEIGHTS[:6], map_coordinates(image, p, 2, "grid-wrap"))
        )(points)
    np.testing.assert_array_equal(values, scipy_values(image, points, 2, "grid-wrap"))
    expected = central_in_points(image, points, 2, "grid-wrap")
    smooth = away_from_kinks(points)
    np.testing.assert_allclose(gradient[:, smooth], expected[:, smooth], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: MapCoordinates(6), "MapCoordinates: parameter 'order' must be a whole number"),
        (lambda: MapCoordinates(3, "edge"), "MapCoordinates: parameter 'mode'"),
        (lambda: MapCoordinates(3, cval=float("nan")), "parameter 'cval' must be a finite"),
        (lambda: MapCoordinates(3, prefilter=2), "parameter 'prefilter' must be True or False"),
    ],
)
def test_bad_parameters_are_named(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="MapCoordinates: argument 'coordinates' must have shape"):
        map_coordinates(IMAGE, POINTS[:1])
    with pytest.raises(TypeError, match="MapCoordinates: argument 'input' is complex"):
        map_coordinates(IMAGE + 1j, POINTS)
    with pytest.raises(ValueError, match="MapCoordinates: argument 'input' must have at least"):
        map_coordinates(1.0, POINTS)
    bad = POINTS.copy()
    bad[0, 3] = np.nan
    with pytest.raises(ValueError, match="argument 'coordinates' has non-finite entries"):
        map_coordinates(IMAGE, bad)
    with pytest.raises(ValueError, match="MapCoordinates: argument 'input' must have trailing"):
        MapCoordinates(shape=(5, 5))(IMAGE.reshape(-1), POINTS)


@pytest.mark.parametrize("order", [0, 1, 3])
def test_no_coordinates_give_empty_values_and_zero_derivatives_in_every_mode(order):
    """Empty in, empty out: the derivatives of a (2, 0) set of coordinates raised
    ZeroDivisionError (a reshape of zero terms) where SciPy's value is empty."""
    image = jnp.arange(12.0).reshape(3, 4)
    none = jnp.zeros((2, 0))
    for mode in MODES:
        assert ndi.map_coordinates(np.asarray(image), none, order=order).shape == (0,)

        def call(i, c):
            return map_coordinates(i, c, order=order, mode=mode)

        assert call(image, none).shape == (0,)
        d_image, d_points = jax.grad(lambda i, c: call(i, c).sum(), argnums=(0, 1))(image, none)
        np.testing.assert_array_equal(d_image, np.zeros((3, 4)))
        assert d_points.shape == (2, 0)
        assert jax.jvp(call, (image, none), (image, none))[1].shape == (0,)


@pytest.mark.parametrize(("order", "mode"), [(3, "mirror"), (5, "nearest"), (2, "grid-constant")])
def test_the_mixed_second_derivative_matches_scipys_differences(order, mode):
    """The points' cotangent read the forward's saved coefficients, whose derivative in the
    image is the prefilter's: d/d image of the points' gradient, forward over reverse and
    reverse over reverse, against SciPy's differences in the points of the interpolant of
    each unit image (the map is linear in the image). With the saved coefficients held
    constant in one of the two it was 2.3 off (and 1.3 in the image's own second
    derivative's other order); prepadded modes ("nearest", "grid-constant") included."""
    inside = POINTS[:, away_from_kinks(POINTS)][:, :6]
    weights = WEIGHTS[: inside.shape[1]]
    adapter = MapCoordinates(order, mode, 0.25)
    with jax.enable_x64(True):

        def points_gradient(image):
            return jax.grad(lambda p: jnp.vdot(weights, adapter(image, p)))(inside)

        forward = jax.jacfwd(points_gradient)(IMAGE)
        reverse = jax.jacrev(points_gradient)(IMAGE)
    expected = np.zeros(inside.shape + IMAGE.shape)
    for k in np.ndindex(IMAGE.shape):
        unit = np.zeros(IMAGE.shape)
        unit[k] = 1.0
        for i in np.ndindex(inside.shape):
            step = np.zeros(inside.shape)
            step[i] = 1e-6
            plus = scipy_values(unit, inside + step, order, mode, cval=0.0)
            minus = scipy_values(unit, inside - step, order, mode, cval=0.0)
            expected[i + k] = weights @ (plus - minus) / 2e-6
    np.testing.assert_allclose(forward, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(reverse, expected, rtol=1e-6, atol=1e-7)
