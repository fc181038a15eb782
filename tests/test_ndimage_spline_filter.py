"""``SplineFilter`` (``spline_filter``): SciPy's values bitwise, the transpose checked by
``<F x, y> = <x, Fᵀ y>`` with ``F`` SciPy's own filter, derivatives of every order (the
filter is linear), batches, bad input named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

from jaxbridge.adapters.ndimage import SplineFilter, spline_filter

MODES = ["mirror", "reflect", "grid-wrap", "wrap", "nearest", "constant", "grid-constant"]
RNG = np.random.default_rng(1)
IMAGE = RNG.normal(size=(6, 5))


@pytest.mark.parametrize("mode", MODES)
def test_values_are_scipys_bitwise(mode):
    with jax.enable_x64(True):
        for order in (2, 3, 4, 5):
            np.testing.assert_array_equal(
                spline_filter(IMAGE, order, mode), ndi.spline_filter(IMAGE, order, mode=mode)
            )


# every mode at order 3 (a mode's own transpose is code that no value test reaches), and
# other orders in two
@pytest.mark.parametrize(
    ("order", "mode"), [(3, mode) for mode in MODES] + [(5, "grid-wrap"), (2, "nearest")]
)
def test_the_transpose_is_scipys_adjoint(order, mode):
    y = RNG.normal(size=IMAGE.shape)
    with jax.enable_x64(True):
        (transposed,) = jax.linear_transpose(lambda x: spline_filter(x, order, mode), IMAGE)(y)
        gradient = jax.grad(lambda x: jnp.sum(spline_filter(x, order, mode) * y))(IMAGE)
    x = RNG.normal(size=IMAGE.shape)
    np.testing.assert_allclose(
        np.sum(x * np.asarray(transposed)),
        np.sum(ndi.spline_filter(x, order, mode=mode) * y),
        rtol=1e-13,
    )
    np.testing.assert_array_equal(gradient, transposed)


def test_every_order_and_transformation():
    adapter = SplineFilter(4, "reflect")
    tangent = RNG.normal(size=IMAGE.shape)
    images = np.stack([IMAGE, IMAGE**2])
    with jax.enable_x64(True):
        _, pushed = jax.jvp(adapter, (IMAGE,), (tangent,))
        hessian = jax.hessian(lambda x: jnp.sum(adapter(x) ** 2))(IMAGE[:3, :2])
        batched = jax.jit(jax.vmap(adapter))(images)
    np.testing.assert_allclose(pushed, ndi.spline_filter(tangent, 4, mode="reflect"), rtol=1e-13)
    # the Hessian of |F x|² is 2 FᵀF, F SciPy's filter as a matrix
    columns = np.eye(6).reshape(6, 3, 2)
    matrix = np.stack([ndi.spline_filter(c, 4, mode="reflect").ravel() for c in columns], -1)
    np.testing.assert_allclose(
        np.asarray(hessian).reshape(6, 6), 2 * matrix.T @ matrix, rtol=1e-12, atol=1e-13
    )
    for k in range(2):
        np.testing.assert_array_equal(batched[k], ndi.spline_filter(images[k], 4, mode="reflect"))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="SplineFilter: parameter 'order' must be a whole number"):
        SplineFilter(1)
    with pytest.raises(ValueError, match="SplineFilter: parameter 'mode'"):
        SplineFilter(3, "edge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="SplineFilter: parameter 'shape' must be a tuple"):
        SplineFilter(3, shape=(0, 2))
    with pytest.raises(TypeError, match="SplineFilter: argument 'input' is complex"):
        spline_filter(IMAGE + 1j)
    with pytest.raises(ValueError, match="SplineFilter: argument 'input' must have trailing"):
        SplineFilter(3, shape=(4, 4))(IMAGE.reshape(-1))


@pytest.mark.parametrize("mode", [*MODES, "grid-mirror"])
def test_the_transpose_is_scipys_matrix_transposed_at_every_order_and_short_axes(mode):
    """The transpose is SciPy's filter between the scalings W (1/2 at each end of an axis)
    for the mirrored modes, the filter itself for "grid-wrap", a dense matrix elsewhere:
    against SciPy's filter as a matrix, transposed, at orders 2 to 5 with axes of length 1,
    2 and 3 (where the ends meet) and a longer one."""
    for shape in [(1, 4), (2, 3), (3, 9)]:
        size = int(np.prod(shape))
        for order in (2, 3, 4, 5):
            columns = [
                ndi.spline_filter(np.eye(size)[k].reshape(shape), order, mode=mode).ravel()
                for k in range(size)
            ]
            y = RNG.normal(size=size)
            with jax.enable_x64(True):
                got = SplineFilter(order, mode, shape=shape, transposed=True)(y)
            expected = np.stack(columns, axis=1).T @ y
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13, err_msg=f"{shape}")
