"""Images with an empty axis (#54): SciPy's empty result, of SciPy's shape, eagerly, under
``jit``, ``grad``, ``jvp`` and ``vmap``, with derivatives of the arguments' shapes; where
SciPy returns values read from no sample (an empty image interpolated at points), an error
naming the function and ``input``. They were refused naming a parameter 'shape' the
caller never passed."""

import jax
import numpy as np
import pytest
import scipy.ndimage as ndi

from jaxbridge.adapters.ndimage import (
    AffineTransform,
    affine_transform,
    correlate1d,
    gaussian_filter,
    gaussian_filter1d,
    map_coordinates,
    median_filter,
    rotate,
    shift,
    spline_filter,
    uniform_filter,
    zoom,
)

KERNEL = np.array([0.25, 0.5, 0.25])

# (name, our call, SciPy's call) on one image
CASES = [
    ("gaussian_filter", lambda x: gaussian_filter(x, 1.5), lambda x: ndi.gaussian_filter(x, 1.5)),
    (
        "gaussian_filter1d",
        lambda x: gaussian_filter1d(x, 1.5, 0),
        lambda x: ndi.gaussian_filter1d(x, 1.5, 0),
    ),
    ("uniform_filter", lambda x: uniform_filter(x, 3), lambda x: ndi.uniform_filter(x, 3)),
    ("median_filter", lambda x: median_filter(x, 3), lambda x: ndi.median_filter(x, 3)),
    (
        "correlate1d",
        lambda x: correlate1d(x, KERNEL, 0),
        lambda x: ndi.correlate1d(x, KERNEL, 0),
    ),
    ("spline_filter", lambda x: spline_filter(x), lambda x: ndi.spline_filter(x)),
    (
        "affine_transform",
        lambda x: affine_transform(x, np.eye(2)),
        lambda x: ndi.affine_transform(x, np.eye(2)),
    ),
    ("shift", lambda x: shift(x, 0.5), lambda x: ndi.shift(x, 0.5)),
    ("zoom", lambda x: zoom(x, 2.0), lambda x: ndi.zoom(x, 2.0)),
    (
        "rotate",
        lambda x: rotate(x, 30.0, reshape=False),
        lambda x: ndi.rotate(x, 30.0, reshape=False),
    ),
    (
        "map_coordinates",
        lambda x: map_coordinates(x, np.zeros((2, 0))),
        lambda x: ndi.map_coordinates(x, np.zeros((2, 0))),
    ),
]


@pytest.mark.parametrize("shape", [(0, 5), (4, 0)])
@pytest.mark.parametrize(("name", "call", "scipy_call"), CASES, ids=[c[0] for c in CASES])
def test_an_empty_image_gives_scipys_empty_result_in_every_transformation(
    name, call, scipy_call, shape
):
    image = np.zeros(shape)
    expected = scipy_call(image)
    assert expected.size == 0
    assert call(image).shape == expected.shape
    assert jax.jit(call)(image).shape == expected.shape
    assert jax.grad(lambda x: call(x).sum())(image).shape == shape
    assert jax.jit(jax.grad(lambda x: call(x).sum()))(image).shape == shape
    assert jax.jvp(call, (image,), (image,))[1].shape == expected.shape
    assert jax.jit(jax.vmap(call))(np.zeros((3, *shape))).shape == (3, *expected.shape)


def test_a_traced_sigma_on_an_empty_image_has_derivative_zero():
    image = np.zeros((0, 5))
    blur = jax.jit(jax.grad(lambda s: gaussian_filter(image, s, radius=2).sum()))
    assert blur(1.5) == 0.0


def test_an_empty_output_shape_is_scipys_empty_result():
    """``output_shape`` with an empty axis was refused as a parameter 'shape'."""
    image = np.arange(12.0).reshape(3, 4)
    expected = ndi.affine_transform(image, np.eye(2), output_shape=(0, 4))
    adapter = AffineTransform(output_shape=(0, 4))
    assert adapter(image, np.eye(2)).shape == expected.shape == (0, 4)
    d_image, d_matrix = jax.jit(jax.grad(lambda x, m: adapter(x, m).sum(), (0, 1)))(
        image, np.eye(2)
    )
    np.testing.assert_array_equal(d_image, np.zeros((3, 4)))
    np.testing.assert_array_equal(d_matrix, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="AffineTransform: parameter 'output_shape' must be"):
        AffineTransform(output_shape=(-1, 4))


def test_an_empty_image_interpolated_at_points_is_refused_by_name():
    """SciPy returns values read from no sample there (uninitialised memory in "mirror",
    say): refused, eagerly and under jit and grad, naming the function and 'input'."""
    image = np.zeros((0, 5))
    points = np.full((2, 3), 0.5)
    assert ndi.map_coordinates(image, points, mode="mirror").shape == (3,)  # (not an error)
    for call, owner in [
        (lambda x: map_coordinates(x, points, mode="mirror"), "MapCoordinates"),
        (lambda x: affine_transform(x, np.eye(2), output_shape=(2, 2)), "AffineTransform"),
        (lambda x: rotate(x, 30.0), "rotate"),  # (SciPy's rotated box of an empty plane)
    ]:
        for transform in (lambda f: f, jax.jit, lambda f: jax.grad(lambda x: f(x).sum())):
            with pytest.raises(ValueError, match=f"{owner}: argument 'input' has shape"):
                transform(call)(image)
