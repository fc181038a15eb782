"""The filters: ``Correlate1d``, ``gaussian_filter1d``/``gaussian_filter``, ``UniformFilter``,
``MedianFilter``. SciPy's values bitwise in every mode; derivatives in the image, the
weights and ``sigma`` against central differences of SciPy's own filters and closed forms
(the transpose by ``<F x, y> = <x, Fᵀ y>`` with SciPy's ``F``, the median's derivative
the selected entry's); transformations; bad input named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

import jaxbridge as jb
from jaxbridge.adapters.ndimage import (
    MedianFilter,
    UniformFilter,
    correlate1d,
    gaussian_filter,
    gaussian_filter1d,
    median_filter,
    uniform_filter,
)

MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-wrap"]
MODES += ["grid-constant"]
RNG = np.random.default_rng(3)
IMAGE = RNG.normal(size=(6, 7))
WEIGHTS = np.cos(np.arange(IMAGE.size)).reshape(IMAGE.shape)  # the loss Σ w · output


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


@pytest.mark.parametrize("mode", MODES)
def test_values_are_scipys_bitwise(mode):
    kernel = np.array([0.2, -0.5, 1.0, 0.4])
    with jax.enable_x64(True):
        got = [
            correlate1d(IMAGE, kernel, 0, mode, 0.3, origin=1),
            gaussian_filter1d(IMAGE, 1.3, 1, 2, None, mode, 0.3),
            gaussian_filter(IMAGE, (0.8, 1.6), 0, None, mode, 0.3),
            uniform_filter(IMAGE, (2, 5), None, mode, 0.3),
            median_filter(IMAGE, (3, 4), None, None, mode, 0.3),
        ]
    expected = [
        ndi.correlate1d(IMAGE, kernel, 0, mode=mode, cval=0.3, origin=1),
        ndi.gaussian_filter1d(IMAGE, 1.3, 1, 2, mode=mode, cval=0.3),
        ndi.gaussian_filter(IMAGE, (0.8, 1.6), 0, mode=mode, cval=0.3),
        ndi.uniform_filter(IMAGE, (2, 5), mode=mode, cval=0.3),
        ndi.median_filter(IMAGE, (3, 4), mode=mode, cval=0.3),
    ]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_float32_images_filter_as_scipys():
    # (64-bit mode on: the Gaussian's weights travel in float64, as SciPy's; with it off they
    # are float32 arrays in JAX, and the values SciPy's to float32 rounding)
    image = IMAGE.astype(np.float32)
    with jax.enable_x64(True):
        got = [gaussian_filter(image, 1.1), uniform_filter(image, 3), median_filter(image, 2)]
    expected = [ndi.gaussian_filter(image, 1.1), ndi.uniform_filter(image, 3)]
    expected += [ndi.median_filter(image, 2)]
    for g, e in zip(got, expected):
        assert g.dtype == jnp.float32
        np.testing.assert_array_equal(g, e)


def test_gradients_match_central_differences_of_scipy():
    kernel = np.array([0.2, -0.5, 1.0])
    with jax.enable_x64(True):
        g_image, g_kernel = jax.grad(
            lambda x, k: loss(correlate1d(x, k, 1, "mirror", 0.0)), (0, 1)
        )(IMAGE, kernel)
        g_sigma = jax.grad(lambda s: loss(gaussian_filter(IMAGE, s, radius=4)))(
            jnp.array([1.3, 0.7])
        )
        g_uniform = jax.grad(lambda x: loss(uniform_filter(x, (3, 2), mode="constant", cval=0.5)))(
            IMAGE
        )
        g_median = jax.grad(lambda x: loss(median_filter(x, 3, mode="nearest")))(IMAGE)
    rtol, atol = 1e-6, 1e-7
    np.testing.assert_allclose(
        g_image, central(lambda x: ndi.correlate1d(x, kernel, 1, mode="mirror"), IMAGE), rtol, atol
    )
    expected = central(lambda k: ndi.correlate1d(IMAGE, k, 1, mode="mirror"), kernel)
    np.testing.assert_allclose(g_kernel, expected, rtol, atol)
    expected = central(lambda s: ndi.gaussian_filter(IMAGE, s, radius=4), [1.3, 0.7])
    np.testing.assert_allclose(g_sigma, expected, rtol, atol)
    expected = central(lambda x: ndi.uniform_filter(x, (3, 2), mode="constant", cval=0.5), IMAGE)
    np.testing.assert_allclose(g_uniform, expected, rtol, atol)
    expected = central(lambda x: ndi.median_filter(x, 3, mode="nearest"), IMAGE)
    np.testing.assert_allclose(g_median, expected, rtol, atol)


@pytest.mark.slow
def test_the_median_differentiates_as_the_selected_entry():
    # each output is one input entry: its tangent is that entry's tangent, found by value
    image = RNG.permutation(np.arange(42.0)).reshape(6, 7)  # distinct values: no ties
    tangent = RNG.normal(size=image.shape)
    with jax.enable_x64(True):
        values, pushed = jax.jvp(MedianFilter(3, "wrap"), (image,), (tangent,))
        hessian = jax.hessian(lambda x: loss(median_filter(x, 3, mode="wrap")))(image)
    source = {v: t for v, t in zip(image.ravel(), tangent.ravel())}
    np.testing.assert_array_equal(pushed, [[source[v] for v in row] for row in np.asarray(values)])
    assert not np.any(np.asarray(hessian))


def test_the_transposes_are_scipys_adjoints():
    y = RNG.normal(size=IMAGE.shape)
    x = RNG.normal(size=IMAGE.shape)
    with jax.enable_x64(True):
        (gauss,) = jax.linear_transpose(lambda z: gaussian_filter(z, 1.2, mode="mirror"), IMAGE)(y)
        (box,) = jax.linear_transpose(UniformFilter((4, 3), "wrap"), IMAGE)(y)
    np.testing.assert_allclose(
        np.sum(x * np.asarray(gauss)),
        np.sum(ndi.gaussian_filter(x, 1.2, mode="mirror") * y),
        rtol=1e-13,
    )
    np.testing.assert_allclose(
        np.sum(x * np.asarray(box)),
        np.sum(ndi.uniform_filter(x, (4, 3), mode="wrap") * y),
        rtol=1e-13,
    )


CUBE = RNG.normal(size=(5, 6, 4))
PER_AXIS = [
    {"mode": ("reflect", "wrap", "nearest")},
    {"size": (0, 3, 4)},
    {"size": 0},
    {"size": (2, 5), "axes": (0, -1)},
    {"mode": ("mirror", "constant"), "axes": (2, 0), "cval": 0.5},
]


@pytest.mark.parametrize("options", PER_AXIS)
def test_modes_per_axis_axes_and_size_zero_are_scipys_bitwise_and_transpose_exactly(options):
    """SciPy's ``mode`` one per axis, ``axes`` and a size of 0 (an axis left as it is);
    the pullback against the transpose of SciPy's own operator, column by column."""
    sigma = {k: v for k, v in options.items() if k != "size"}
    with jax.enable_x64(True):
        for dtype in (np.float64, np.float32):
            image = CUBE.astype(dtype)
            got = uniform_filter(image, **{"size": 3, **options})
            np.testing.assert_array_equal(got, ndi.uniform_filter(image, **{"size": 3, **options}))
            got = gaussian_filter(image, 1.1, **sigma)
            np.testing.assert_array_equal(got, ndi.gaussian_filter(image, 1.1, **sigma))
        ints = (10 * CUBE).astype(np.int32)
        np.testing.assert_array_equal(
            uniform_filter(ints, **{"size": 3, **options}),
            ndi.uniform_filter(ints.astype(np.float64), **{"size": 3, **options}),
        )
        g = RNG.normal(size=CUBE.shape)
        for ours, scipys in (
            (lambda x: uniform_filter(x, **{"size": 3, **options}),
             lambda x: ndi.uniform_filter(x, **{"size": 3, **options})),
            (lambda x: gaussian_filter(x, 1.1, **sigma),
             lambda x: ndi.gaussian_filter(x, 1.1, **sigma)),
        ):  # fmt: skip
            pulled = jax.vjp(ours, CUBE)[1](g)[0]
            columns = np.eye(CUBE.size).reshape(CUBE.size, *CUBE.shape)
            operator = np.stack([scipys(e).ravel() for e in columns], axis=1)
            if options.get("cval", 0) != 0:  # affine: the linear part
                operator -= scipys(np.zeros(CUBE.shape)).ravel()[:, None]
            np.testing.assert_allclose(
                np.asarray(pulled).ravel(), operator.T @ g.ravel(), rtol=1e-12, atol=1e-13
            )


@pytest.mark.slow
def test_jit_vmap_and_the_second_derivative_in_sigma():
    images = np.stack([IMAGE, IMAGE**2, -IMAGE])
    blur = jax.jit(jax.vmap(lambda x, s: gaussian_filter1d(x, s, 0, radius=5), (0, None)))
    with jax.enable_x64(True):
        batched = blur(images, 1.4)
        curvature = jax.hessian(lambda s: loss(gaussian_filter1d(IMAGE, s, 0, radius=5)))(1.4)
    for k in range(3):
        np.testing.assert_allclose(
            batched[k], ndi.gaussian_filter1d(images[k], 1.4, 0, radius=5), rtol=1e-14, atol=1e-15
        )
    h = 1e-4
    second = (
        np.sum(WEIGHTS * ndi.gaussian_filter1d(IMAGE, 1.4 + h, 0, radius=5))
        - 2 * np.sum(WEIGHTS * ndi.gaussian_filter1d(IMAGE, 1.4, 0, radius=5))
        + np.sum(WEIGHTS * ndi.gaussian_filter1d(IMAGE, 1.4 - h, 0, radius=5))
    ) / h**2
    np.testing.assert_allclose(curvature, second, rtol=1e-5)


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan")])
def test_a_traced_sigma_not_positive_is_refused_as_the_eager_one(sigma):
    """A traced 0 was refused naming NaN 'weights' the caller never passed, and a traced
    -1 filtered with |sigma| where the eager call refuses it; now the host refuses both,
    naming 'sigma', under every transformation, and a positive one still filters.

    On a copy of IMAGE: JAX (0.10.2 and 0.12.1) keeps the float32 device copy of a NumPy
    constant captured by a jitted program that failed at run time, and hands it to later
    64-bit calls on the same object (``jnp.asarray`` then gives float32): the other tests'
    64-bit runs on IMAGE failed with float32 results (docs/choosing.md, Limitations)."""
    image = IMAGE.copy()
    rules = {
        "jit": jax.jit(lambda s: gaussian_filter1d(image, s, 0, radius=3)),
        "grad": jax.grad(lambda s: jnp.sum(gaussian_filter1d(image, s, 0, radius=3))),
        # (where XLA drops a call whose value is not used: the check's value is)
        "jit(grad)": jax.jit(jax.grad(lambda s: jnp.sum(gaussian_filter1d(image, s, 0, radius=3)))),
        "jvp": lambda s: jax.jvp(lambda t: gaussian_filter1d(image, t, 0, radius=3), (s,), (1.0,)),
        "vmap": jax.vmap(lambda s: gaussian_filter1d(image, s, 0, radius=3)),
    }
    for name, rule in rules.items():
        argument = jnp.array([1.0, sigma]) if name == "vmap" else jnp.asarray(sigma)
        with (
            pytest.raises(ValueError, match="gaussian_filter1d: argument 'sigma' must be positive"),
            jb.host_errors(),
        ):
            jax.block_until_ready(rule(argument))
    np.testing.assert_allclose(
        rules["jit"](1.4), ndi.gaussian_filter1d(image, 1.4, 0, radius=3), rtol=1e-6
    )


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="gaussian_filter1d: argument 'sigma' is traced"):
        jax.grad(lambda s: jnp.sum(gaussian_filter1d(IMAGE, s)))(1.0)
    with pytest.raises(ValueError, match="gaussian_filter1d: argument 'sigma' must be positive"):
        gaussian_filter1d(IMAGE, -1.0)
    with pytest.raises(ValueError, match="UniformFilter: parameter 'size' must be a whole"):
        uniform_filter(IMAGE, (3, 1.5))
    with pytest.raises(ValueError, match="uniform_filter: argument 'axes' must hold axes of the"):
        uniform_filter(IMAGE, 3, axes=(0, 2))
    with pytest.raises(ValueError, match="gaussian_filter: argument 'axes' names an axis twice"):
        gaussian_filter(IMAGE, 1.0, axes=(1, -1))
    with pytest.raises(ValueError, match="uniform_filter: argument 'mode' must be one value or 2"):
        uniform_filter(IMAGE, 3, mode=("wrap", "wrap", "wrap"))
    with pytest.raises(ValueError, match="median_filter: argument 'size' must be one value or 2"):
        median_filter(IMAGE, (3, 3, 3))
    with pytest.raises(ValueError, match="MedianFilter: parameter 'size' must be a whole"):
        median_filter(IMAGE, (3, 0))
    with pytest.raises(ValueError, match="argument 'input' has non-finite entries"):
        median_filter(np.where(IMAGE > 1, np.nan, IMAGE), 3)
    with pytest.raises(ValueError, match="Correlate1d: argument 'weights' must be a non-empty"):
        correlate1d(IMAGE, np.ones((2, 2)))
    with pytest.raises(ValueError, match="Correlate1d: parameter 'axis' is 2"):
        correlate1d(IMAGE, np.ones(3), axis=2)
    with pytest.raises(ValueError, match="Correlate1d: parameter 'mode'"):
        correlate1d(IMAGE, np.ones(3), mode="edge")


# SciPy's modes as NumPy's padding, for the median of a short 1-D image by its definition
_PADDING = {"reflect": "symmetric", "grid-mirror": "symmetric", "mirror": "reflect"}
_PADDING |= {"nearest": "edge", "wrap": "wrap", "grid-wrap": "wrap"}
_PADDING |= {"constant": "constant", "grid-constant": "constant"}


@pytest.mark.parametrize("mode", sorted(_PADDING))
def test_the_median_of_a_1d_image_shorter_than_its_window_is_the_padded_windows(mode):
    """SciPy's own 1-D path read past such an image (8.8e-280 for [1.5] in "mirror", then
    another number on the next call) or gave wrong medians; the image extended by the mode
    and the median of each window is the definition."""
    rng = np.random.default_rng(7)
    for n, size in [(1, 3), (2, 5), (3, 7), (4, 7)]:
        image = rng.normal(size=n).astype(np.float32)
        padded = np.pad(image, size // 2, mode=_PADDING[mode])
        expected = np.median(np.lib.stride_tricks.sliding_window_view(padded, size), axis=-1)
        for _ in range(2):  # (uninitialised memory changed from call to call)
            got = np.asarray(median_filter(image, size, mode=mode))
            np.testing.assert_array_equal(got, expected, err_msg=f"n={n}, size={size}")


@pytest.mark.parametrize("mode", MODES)
def test_gradients_in_every_mode_with_a_nonzero_origin_match_scipys_differences(mode):
    """Each mode's padding and the origin's sign reach only the derivative's code (the
    values are SciPy's): a wrong padding for one mode or a flipped origin passed every other
    test. An even kernel with origin 1 and one with origin -1, along both axes."""
    with jax.enable_x64(True):
        for axis, kernel, origin in [
            (0, np.array([0.2, -0.5, 1.0, 0.4]), 1),
            (1, np.array([0.3, 1.0, -0.6]), -1),
        ]:

            def scipy_filter(x, k, axis=axis, origin=origin):
                return ndi.correlate1d(x, k, axis, mode=mode, cval=0.3, origin=origin)

            g_image, g_kernel = jax.grad(
                lambda x, k: loss(correlate1d(x, k, axis, mode, 0.3, origin=origin)), (0, 1)
            )(IMAGE, kernel)
            expected = central(lambda x: scipy_filter(x, kernel), IMAGE)
            np.testing.assert_allclose(g_image, expected, 1e-6, 1e-7, err_msg=f"axis {axis}")
            expected = central(lambda k: scipy_filter(IMAGE, k), kernel)
            np.testing.assert_allclose(g_kernel, expected, 1e-6, 1e-7, err_msg=f"axis {axis}")


@pytest.mark.parametrize("mode", MODES)
def test_uniform_and_median_gradients_in_every_mode_match_scipys_differences(mode):
    """Their windows extend the image by the mode in the derivative's code alone (the values
    are SciPy's): checked in one mode each before, now in all eight."""
    with jax.enable_x64(True):
        g_uniform = jax.grad(lambda x: loss(uniform_filter(x, (3, 2), mode=mode, cval=0.5)))(IMAGE)
        g_median = jax.grad(lambda x: loss(median_filter(x, (3, 2), mode=mode, cval=0.5)))(IMAGE)
    expected = central(lambda x: ndi.uniform_filter(x, (3, 2), mode=mode, cval=0.5), IMAGE)
    np.testing.assert_allclose(g_uniform, expected, 1e-6, 1e-7)
    expected = central(lambda x: ndi.median_filter(x, (3, 2), mode=mode, cval=0.5), IMAGE)
    np.testing.assert_allclose(g_median, expected, 1e-6, 1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_the_box_filters_with_an_origin_are_scipys_values_and_derivatives(mode):
    """SciPy's ``origin`` moves the box, so each mode's extension is read on the other
    side: the values bitwise, the gradients against SciPy's differences, and the box
    mean's cotangent against SciPy's matrix transposed (origins at both ends of their
    ranges: an even box of 4 with -2, one of 3 with 1)."""
    size, origin = (4, 3), (-2, 1)
    options = dict(mode=mode, cval=0.5, origin=origin)
    y = RNG.normal(size=IMAGE.shape)
    with jax.enable_x64(True):
        uniform = uniform_filter(IMAGE, size, **options)
        median = jax.jit(lambda x: median_filter(x, size, **options))(IMAGE)
        g_uniform = jax.grad(lambda x: loss(uniform_filter(x, size, **options)))(IMAGE)
        g_median = jax.grad(lambda x: loss(median_filter(x, size, **options)))(IMAGE)
        _, pullback = jax.vjp(lambda x: uniform_filter(x, size, **options), IMAGE)
        cotangent = pullback(y)[0]
    np.testing.assert_array_equal(uniform, ndi.uniform_filter(IMAGE, size, **options))
    np.testing.assert_array_equal(median, ndi.median_filter(IMAGE, size, **options))
    expected = central(lambda x: ndi.uniform_filter(x, size, **options), IMAGE)
    np.testing.assert_allclose(g_uniform, expected, 1e-6, 1e-7)
    expected = central(lambda x: ndi.median_filter(x, size, **options), IMAGE)
    np.testing.assert_allclose(g_median, expected, 1e-6, 1e-7)
    matrix = _scipy_matrix(
        lambda x: (
            ndi.uniform_filter(x, size, **options) - ndi.uniform_filter(0 * x, size, **options)
        ),
        IMAGE.shape,
    )
    np.testing.assert_allclose(cotangent.ravel(), matrix.T @ y.ravel(), 1e-12, 1e-13)


def test_the_filters_take_scipys_positional_order_output_footprint_and_axes():
    """SciPy's third positional argument of uniform_filter is ``output`` (and the fourth of
    median_filter and gaussian_filter): ``uniform_filter(x, 3, None, "nearest")`` read
    None as the mode before."""
    image = RNG.normal(size=(5, 6, 4))
    with jax.enable_x64(True):
        got = [
            uniform_filter(image, 3, None, "nearest", 0.0, 1),
            median_filter(image, None, np.ones((3, 2, 1), bool), None, "wrap", 0.0, 0),
            median_filter(image, (3, 2), mode="mirror", origin=(1, -1), axes=(0, 2)),
            gaussian_filter(image, 1.2, 0, np.float32, "nearest"),
            gaussian_filter1d(image, 1.2, 1, 0, None, "wrap"),
            uniform_filter(image, 3, np.float32),
        ]
    expected = [
        ndi.uniform_filter(image, 3, None, "nearest", 0.0, 1),
        ndi.median_filter(image, None, np.ones((3, 2, 1), bool), None, "wrap", 0.0, 0),
        ndi.median_filter(image, (3, 2), mode="mirror", origin=(1, -1), axes=(0, 2)),
        ndi.gaussian_filter(image, 1.2, 0, np.float32, "nearest"),
        ndi.gaussian_filter1d(image, 1.2, 1, 0, None, "wrap"),
        ndi.uniform_filter(image, 3, np.float32),
    ]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        # (float32: SciPy rounds to float32 between gaussian_filter's passes, here once: a
        # few float32 ulps of the image's scale, 1)
        single = e.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=1e-6 if single else 1e-15, atol=1e-6 * single)
    refusals = [
        (
            lambda: uniform_filter(image, 3, np.empty(image.shape)),
            "uniform_filter: argument 'output'",
        ),
        (lambda: median_filter(image, 3, output=np.int32), "median_filter: argument 'output'"),
        (lambda: median_filter(image, footprint=np.eye(3, dtype=bool)[..., None]), "'footprint'"),
        (lambda: median_filter(image), "median_filter: give argument 'size'"),
        (lambda: uniform_filter(image, 3, origin=2), "UniformFilter: parameter 'origin'"),
        (lambda: median_filter(image, 2, origin=(0, 1, 0)), "MedianFilter: parameter 'origin'"),
    ]
    with jax.enable_x64(True):
        for call, message in refusals:
            with pytest.raises((ValueError, TypeError), match=message):
                call()


def _scipy_matrix(filter_, shape):
    """The matrix of a linear ``filter_`` of images of ``shape`` (SciPy's), column by column."""
    size = int(np.prod(shape))
    columns = [filter_(np.eye(size)[k].reshape(shape)).ravel() for k in range(size)]
    return np.stack(columns, axis=1)


@pytest.mark.parametrize("mode", MODES)
def test_the_image_cotangent_and_its_derivatives_are_scipys_adjoint(mode):
    """The image's cotangent is a host call of its own (SciPy's correlation with the flipped
    weights, the extension folded back onto the edges): against SciPy's matrix Aᵀ y in every
    mode, with origins -1, 0 and 1 and kernels longer than the image (the extension then
    wraps or reflects more than once), and its own derivatives: in the weights (the mixed
    second derivative, reverse and forward) against SciPy's differences of z·A(k)ᵀy, and in
    y (its transpose) against A z."""
    y, z = RNG.normal(size=(2, *IMAGE.shape))
    with jax.enable_x64(True):
        for axis, kernel, origin in [
            (0, np.array([0.2, -0.5, 1.0, 0.4]), 1),
            (1, np.array([0.3, 1.0, -0.6]), -1),
            (0, RNG.normal(size=9), 0),  # longer than the 6 rows
            (1, RNG.normal(size=16), -8),
        ]:

            def scipy_filter(x, k, axis=axis, origin=origin):
                return ndi.correlate1d(x, k, axis, mode=mode, cval=0.3, origin=origin)

            def image_cotangent(k, y, axis=axis, origin=origin):
                _, pullback = jax.vjp(lambda x: correlate1d(x, k, axis, mode, 0.3, origin), IMAGE)
                return pullback(y)[0]

            matrix = _scipy_matrix(
                lambda x: scipy_filter(x, kernel) - scipy_filter(0 * x, kernel), IMAGE.shape
            )
            got = image_cotangent(kernel, y)
            np.testing.assert_allclose(got.ravel(), matrix.T @ y.ravel(), 1e-12, 1e-13)
            # in the weights
            mixed = jax.grad(lambda k: jnp.vdot(z, image_cotangent(k, y)))(kernel)
            expected = np.zeros_like(kernel)
            for j in range(kernel.size):
                step = np.zeros_like(kernel)
                step[j] = 1e-6
                plus = _scipy_matrix(
                    lambda x: scipy_filter(x, kernel + step) - scipy_filter(0 * x, kernel + step),
                    IMAGE.shape,
                )
                minus = _scipy_matrix(
                    lambda x: scipy_filter(x, kernel - step) - scipy_filter(0 * x, kernel - step),
                    IMAGE.shape,
                )
                expected[j] = z.ravel() @ (plus - minus).T @ y.ravel() / 2e-6
            np.testing.assert_allclose(mixed, expected, 1e-6, 1e-7)
            tangent = RNG.normal(size=kernel.shape)
            _, pushed = jax.jvp(lambda k: image_cotangent(k, y), (kernel,), (tangent,))
            np.testing.assert_allclose(jnp.vdot(z, pushed), expected @ tangent, 1e-6, 1e-7)
            # in y: its transpose is the correlation again (cval does not enter)
            back = jax.grad(lambda y: jnp.vdot(z, image_cotangent(kernel, y)))(y)
            np.testing.assert_allclose(back.ravel(), matrix @ z.ravel(), 1e-12, 1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_the_uniform_filters_cotangent_and_its_transpose_are_scipys(mode):
    """The box mean's cotangent (a host call of its own) against SciPy's matrix Aᵀ y in
    every mode, a box longer than the image's 6 rows included; its own transpose (the
    second derivative's path) against A z, SciPy's filter of z."""
    y, z = RNG.normal(size=(2, *IMAGE.shape))
    size = (8, 2)
    with jax.enable_x64(True):

        def image_cotangent(y):
            _, pullback = jax.vjp(lambda x: uniform_filter(x, size, mode=mode, cval=0.5), IMAGE)
            return pullback(y)[0]

        got = image_cotangent(y)
        back = jax.grad(lambda y: jnp.vdot(z, image_cotangent(y)))(y)
    matrix = _scipy_matrix(
        lambda x: (
            ndi.uniform_filter(x, size, mode=mode, cval=0.5)
            - ndi.uniform_filter(0 * x, size, mode=mode, cval=0.5)
        ),
        IMAGE.shape,
    )
    np.testing.assert_allclose(got.ravel(), matrix.T @ y.ravel(), 1e-12, 1e-13)
    np.testing.assert_allclose(back.ravel(), matrix @ z.ravel(), 1e-12, 1e-13)


def test_a_traced_sigma_at_most_1e_15_leaves_its_axis_unfiltered_as_scipy():
    """SciPy's gaussian_filter skips an axis whose sigma is at most 1e-15, negative ones
    included; a traced sigma filtered there with |sigma| (a blurred image where SciPy and
    the eager call return it unchanged), and sigma = 0 was refused for NaN weights. The
    derivative there is 0: the filter is the identity for every sigma <= 1e-15."""
    with jax.enable_x64(True):
        blur = jax.jit(lambda s: gaussian_filter(IMAGE, s, radius=3))
        for sigma in (-1.3, 0.0, [-0.8, 1.2]):
            expected = ndi.gaussian_filter(IMAGE, sigma, radius=3)
            np.testing.assert_allclose(blur(jnp.asarray(sigma)), expected, rtol=1e-14, atol=1e-14)
            np.testing.assert_array_equal(gaussian_filter(IMAGE, sigma, radius=3), expected)
        loss = jax.jit(jax.grad(lambda s: jnp.sum(WEIGHTS * gaussian_filter(IMAGE, s, radius=3))))
        assert loss(-1.3) == 0.0
        _, tangent = jax.jvp(blur, (jnp.asarray(-1.3),), (jnp.asarray(1.0),))
        np.testing.assert_array_equal(tangent, np.zeros(IMAGE.shape))
        # the second axis's sigma, 1.2, against SciPy's central differences
        h = 1e-6
        step = jax.grad(lambda s: jnp.sum(WEIGHTS * gaussian_filter(IMAGE, s, radius=3)))
        expected = (
            np.sum(WEIGHTS * ndi.gaussian_filter(IMAGE, [-0.8, 1.2 + h], radius=3))
            - np.sum(WEIGHTS * ndi.gaussian_filter(IMAGE, [-0.8, 1.2 - h], radius=3))
        ) / (2 * h)
        np.testing.assert_allclose(step(jnp.array([-0.8, 1.2])), [0.0, expected], rtol=1e-7)


@pytest.mark.parametrize("cval", [0.0, 2.5])
@pytest.mark.parametrize("mode", ["constant", "nearest", "reflect", "wrap"])
def test_correlate1d_forward_mode_is_the_linear_part_with_every_constant(mode, cval):
    """jvp in the image (and the weights) equals the Jacobian applied to the tangent; with
    mode='constant' and cval != 0 the map is affine and its tangent the linear part (cval
    was tested in reverse mode only), checked against SciPy's central differences too."""
    from jaxbridge.adapters.ndimage import Correlate1d

    rng = np.random.default_rng(3)
    image, weights = rng.standard_normal((4, 7)), rng.standard_normal(3)
    ti, tw = rng.standard_normal((4, 7)), rng.standard_normal(3)
    f = Correlate1d(axis=1, mode=mode, cval=cval)
    with jax.enable_x64(True):
        _, tangent = jax.jvp(f, (image, weights), (ti, tw))
        ji, jw = jax.jacrev(f, argnums=(0, 1))(image, weights)
        want = np.einsum("abij,ij->ab", ji, ti) + np.einsum("abj,j->ab", jw, tw)
    np.testing.assert_allclose(tangent, want, rtol=1e-12, atol=1e-12)
    h = 1e-6

    def scipy_f(t):
        return ndi.correlate1d(image + t * ti, weights + t * tw, axis=1, mode=mode, cval=cval)

    np.testing.assert_allclose(tangent, (scipy_f(h) - scipy_f(-h)) / (2 * h), rtol=1e-6, atol=1e-8)
