"""``AffineTransform`` and the resamplings built on it (``shift``, ``zoom``, ``rotate``):
SciPy's values bitwise, derivatives in the image, the matrix, the offset, the shift and the
angle against central differences of SciPy's own routines, the transpose in the image
against SciPy's, every transformation, bad input named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

from jaxbridge.adapters.ndimage import AffineTransform, affine_transform, rotate, shift, zoom

RNG = np.random.default_rng(2)
IMAGE = RNG.normal(size=(7, 9))
MATRIX = np.array([[0.9, 0.2], [-0.3, 1.1]])
OFFSET = np.array([0.71, -1.23])  # (no output point on an edge or a knot)
WEIGHTS = np.sin(np.arange(IMAGE.size)).reshape(IMAGE.shape)  # the loss Σ w · output


def central(fun, x, h=1e-6):
    """d Σ w fun(x) / d x by central differences (fun: SciPy's)."""
    x = np.asarray(x, np.float64)
    gradient = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        gradient[i] = np.sum(WEIGHTS * (fun(x + step) - fun(x - step))) / (2 * h)
    return gradient


def loss(values):
    return jnp.sum(jnp.asarray(WEIGHTS) * values)


@pytest.mark.parametrize(("order", "mode"), [(0, "nearest"), (1, "constant"), (3, "mirror")])
def test_values_are_scipys_bitwise(order, mode):
    options = {"order": order, "mode": mode, "cval": 0.3}
    homogeneous = np.block([[MATRIX, OFFSET[:, None]], [np.zeros((1, 2)), np.ones((1, 1))]])
    with jax.enable_x64(True):
        got = [
            affine_transform(IMAGE, MATRIX, OFFSET, **options),
            affine_transform(IMAGE, MATRIX, OFFSET, (5, 11), **options),
            affine_transform(IMAGE, homogeneous, **options),
            shift(IMAGE, (0.3, -1.7), **options),
            zoom(IMAGE, (1.7, 0.6), **options),
            rotate(IMAGE, 23.0, **options),
            rotate(IMAGE, -110.0, reshape=False, **options),
        ]
    expected = [
        ndi.affine_transform(IMAGE, MATRIX, OFFSET, **options),
        ndi.affine_transform(IMAGE, MATRIX, OFFSET, output_shape=(5, 11), **options),
        ndi.affine_transform(IMAGE, homogeneous, **options),
        ndi.shift(IMAGE, (0.3, -1.7), **options),
        ndi.zoom(IMAGE, (1.7, 0.6), **options),
        ndi.rotate(IMAGE, 23.0, **options),
        ndi.rotate(IMAGE, -110.0, reshape=False, **options),
    ]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_three_axes_and_a_diagonal_agree_to_rounding():
    image = RNG.normal(size=(4, 5, 6))
    with jax.enable_x64(True):
        rotated = rotate(image, 40.0, axes=(0, 2))
        diagonal = affine_transform(IMAGE, [0.8, 1.3], [0.25, -0.5])
    np.testing.assert_allclose(rotated, ndi.rotate(image, 40.0, axes=(0, 2)), atol=1e-14)
    expected = ndi.affine_transform(IMAGE, [0.8, 1.3], [0.25, -0.5])
    np.testing.assert_allclose(diagonal, expected, atol=1e-14)


@pytest.mark.parametrize(
    ("order", "mode"),
    [(3, "mirror"), pytest.param(1, "constant", marks=pytest.mark.slow)]
    + [pytest.param(5, "grid-constant", marks=pytest.mark.slow)],
)
def test_gradients_in_the_matrix_and_offset_match_central_differences_of_scipy(order, mode):
    adapter = AffineTransform(order, mode, 0.3)
    with jax.enable_x64(True):
        g_matrix, g_offset = jax.grad(lambda m, o: loss(adapter(IMAGE, m, o)), (0, 1))(
            MATRIX, OFFSET
        )
    options = {"order": order, "mode": mode, "cval": 0.3}
    np.testing.assert_allclose(
        g_matrix,
        central(lambda m: ndi.affine_transform(IMAGE, m, OFFSET, **options), MATRIX),
        rtol=1e-6,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        g_offset,
        central(lambda o: ndi.affine_transform(IMAGE, MATRIX, o, **options), OFFSET),
        rtol=1e-6,
        atol=1e-6,
    )


def test_the_gradient_in_the_shift_matches_central_differences_of_scipy():
    with jax.enable_x64(True):
        g_shift = jax.grad(lambda s: loss(shift(IMAGE, s, 3, "nearest")))(jnp.array([0.3, -1.7]))
    np.testing.assert_allclose(
        g_shift, central(lambda s: ndi.shift(IMAGE, s, mode="nearest"), [0.3, -1.7]), rtol=1e-6
    )


@pytest.mark.slow
def test_the_gradient_in_the_angle_matches_central_differences_of_scipy():
    with jax.enable_x64(True):
        g_angle = jax.grad(lambda a: loss(rotate(IMAGE, a, reshape=False, order=2)))(23.0)
    expected = central(lambda a: ndi.rotate(IMAGE, float(a), reshape=False, order=2), 23.0)
    np.testing.assert_allclose(g_angle, expected, rtol=1e-6)


def test_the_transpose_in_the_image_is_scipys_adjoint():
    y = RNG.normal(size=(12, 5))
    with jax.enable_x64(True):
        (transposed,) = jax.linear_transpose(lambda x: zoom(x, (1.7, 0.6), 3, "reflect"), IMAGE)(y)
    x = RNG.normal(size=IMAGE.shape)
    np.testing.assert_allclose(
        np.sum(x * np.asarray(transposed)),
        np.sum(ndi.zoom(x, (1.7, 0.6), order=3, mode="reflect") * y),
        rtol=1e-13,
    )


@pytest.mark.slow
def test_jit_vmap_and_second_derivatives():
    angles = jnp.array([5.0, 30.0, -60.0])
    spin = jax.jit(jax.vmap(lambda a: rotate(IMAGE, a, reshape=False, mode="mirror")))
    with jax.enable_x64(True):
        batched = spin(angles)
        curvature = jax.hessian(lambda s: loss(shift(IMAGE, s, 3, "mirror")))(jnp.array([0.4, 0.2]))
        slope = jax.grad(lambda s: loss(shift(IMAGE, s, 3, "mirror")))
        h = 1e-5
        columns = [
            (slope(jnp.array([0.4, 0.2]) + h * e) - slope(jnp.array([0.4, 0.2]) - h * e)) / (2 * h)
            for e in np.eye(2)
        ]
    for k, a in enumerate([5.0, 30.0, -60.0]):
        expected = ndi.rotate(IMAGE, a, reshape=False, mode="mirror")
        np.testing.assert_allclose(batched[k], expected, atol=1e-14)
    # the Hessian's columns against differences of the gradient, which the test above
    # checks against SciPy's
    np.testing.assert_allclose(curvature, np.stack(columns, -1), rtol=1e-6, atol=1e-8)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="rotate: argument 'angle' is traced"):
        jax.jit(lambda a: rotate(IMAGE, a))(10.0)
    with pytest.raises(ValueError, match="zoom: argument 'zoom' must be a positive number"):
        jax.jit(lambda z: zoom(IMAGE, z))(2.0)
    with pytest.raises(ValueError, match="zoom: argument 'zoom' must be positive"):
        zoom(IMAGE, -1.0)
    with pytest.raises(ValueError, match="zoom: argument 'zoom' 0.1 leaves no output point"):
        zoom(IMAGE[:1], 0.1)  # (an empty image zooms to an empty output; this one is not)
    with pytest.raises(ValueError, match="AffineTransform: argument 'matrix' must have shape"):
        affine_transform(IMAGE, np.ones((3, 2)))
    with pytest.raises(ValueError, match="AffineTransform: argument 'offset' must be a number"):
        affine_transform(IMAGE, MATRIX, np.ones(3))
    with pytest.raises(ValueError, match="argument 'offset' has non-finite entries"):
        affine_transform(IMAGE, MATRIX, [np.inf, 0.0])
    with pytest.raises(ValueError, match="shift: argument 'shift' must be a real number"):
        shift(IMAGE, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="rotate: argument 'axes'"):
        rotate(IMAGE, 10.0, axes=(0, 0))
    with pytest.raises(ValueError, match="rotate: argument 'input' must have at least two"):
        rotate(IMAGE[0], 10.0)


def test_a_homogeneous_matrix_with_another_bottom_row_is_refused_as_scipy_refuses_it():
    """Its bottom row was dropped silently: a projective matrix gave an affine answer."""
    image = np.arange(16.0).reshape(4, 4)
    projective = np.eye(3)
    projective[2, 0] = 0.5
    with pytest.raises(ValueError, match="bottom row"):
        ndi.affine_transform(image, projective)
    with pytest.raises(ValueError, match=r"AffineTransform: argument 'matrix' .* bottom row"):
        affine_transform(image, projective)
    refused_by_the_check = pytest.raises(
        jax.errors.JaxRuntimeError, match="'matrix' has non-finite entries"
    )
    with refused_by_the_check:
        jax.block_until_ready(jax.jit(lambda m: affine_transform(image, m))(projective))
    with refused_by_the_check:  # (the forward's value unused: the check still runs)
        grad = jax.jit(jax.grad(lambda m: affine_transform(image, m).sum()))(projective)
        jax.block_until_ready(grad)
    known = jnp.asarray(projective)  # (a JAX array closed over: known, read on the host)
    with pytest.raises(ValueError, match="bottom row"):
        jax.jit(jax.grad(lambda i: affine_transform(i, known).sum()))(image)
    affine = np.eye(3)
    affine[:2, 2] = [0.5, -0.25]  # the right bottom row: SciPy's value
    np.testing.assert_array_equal(
        affine_transform(image.astype(np.float32), affine.astype(np.float32), order=1),
        ndi.affine_transform(image.astype(np.float32), affine.astype(np.float32), order=1),
    )


@pytest.mark.parametrize(
    ("order", "mode"), [(3, "mirror"), (4, "reflect"), (2, "nearest"), (3, "grid-constant")]
)
def test_values_and_the_mixed_second_derivative_on_the_saved_coefficients(order, mode):
    """The forward keeps SciPy's prefilter coefficients (not where SciPy prepads:
    "nearest", "grid-constant") and the rules evaluate on them, their derivative in the
    image the prefilter's: the values bitwise, and d/d image of the matrix's gradient,
    forward over reverse and reverse over reverse, against SciPy's differences in the
    matrix of the transform of each unit image (linear in the image)."""
    image = IMAGE[:4, :5]
    weights = WEIGHTS[:4, :5]
    options = {"order": order, "mode": mode}
    with jax.enable_x64(True):
        values = affine_transform(image, MATRIX, OFFSET, cval=0.3, **options)

        def matrix_gradient(image):
            def value(m):
                return jnp.sum(weights * affine_transform(image, m, OFFSET, cval=0.3, **options))

            return jax.grad(value)(MATRIX)

        forward = jax.jacfwd(matrix_gradient)(image)
        reverse = jax.jacrev(matrix_gradient)(image)
    expected_values = ndi.affine_transform(image, MATRIX, OFFSET, cval=0.3, **options)
    np.testing.assert_array_equal(values, expected_values)
    expected = np.zeros(MATRIX.shape + image.shape)
    for k in np.ndindex(image.shape):
        unit = np.zeros(image.shape)
        unit[k] = 1.0
        for i in np.ndindex(MATRIX.shape):
            step = np.zeros(MATRIX.shape)
            step[i] = 1e-6
            plus = ndi.affine_transform(unit, MATRIX + step, OFFSET, **options)
            minus = ndi.affine_transform(unit, MATRIX - step, OFFSET, **options)
            expected[i + k] = np.sum(weights * (plus - minus)) / 2e-6
    np.testing.assert_allclose(forward, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(reverse, expected, rtol=1e-6, atol=1e-7)
