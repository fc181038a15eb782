"""``Cdist`` and ``Pdist``: SciPy's values bitwise, derivatives against central differences
of SciPy's own ``cdist``/``pdist``, the subgradient at kinks, bad input named."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.spatial.distance as distance

from jaxbridge.adapters.spatial import Cdist, Pdist
from jaxbridge.testing import check_adapter

METRICS = [
    "euclidean",
    "sqeuclidean",
    "cityblock",
    "chebyshev",
    "minkowski",
    "cosine",
    "correlation",
    "braycurtis",
    "canberra",
]
RNG = np.random.default_rng(0)
XA, XB = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 3))


def scipy_options(metric):
    return {"p": 3.0} if metric == "minkowski" else {}


def central(fun, x, h=1e-6):
    """d fun / d x by central differences, (*fun's shape, *x's shape)."""
    columns = []
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((fun(x + step) - fun(x - step)) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(fun(x)) + x.shape)


@pytest.mark.parametrize("metric", METRICS)
def test_values_are_scipys_bitwise(metric):
    with jax.enable_x64(True):
        got_c = Cdist(metric, p=3.0)(XA, XB)
        got_p = Pdist(metric, p=3.0)(XA)
    np.testing.assert_array_equal(got_c, distance.cdist(XA, XB, metric, **scipy_options(metric)))
    np.testing.assert_array_equal(got_p, distance.pdist(XA, metric, **scipy_options(metric)))


@pytest.mark.parametrize("metric", METRICS)
def test_jacobians_match_central_differences_of_scipy(metric):
    options = scipy_options(metric)
    with jax.enable_x64(True):
        cdist_a = jax.jacrev(lambda a: Cdist(metric, p=3.0)(a, XB))(jnp.asarray(XA))
        cdist_b = jax.jacfwd(lambda b: Cdist(metric, p=3.0)(XA, b))(jnp.asarray(XB))
        pdist = jax.jacrev(Pdist(metric, p=3.0))(jnp.asarray(XA))
    rtol, atol = 1e-7, 1e-8
    expected = central(lambda a: distance.cdist(a, XB, metric, **options), XA)
    np.testing.assert_allclose(cdist_a, expected, rtol=rtol, atol=atol)
    expected = central(lambda b: distance.cdist(XA, b, metric, **options), XB)
    np.testing.assert_allclose(cdist_b, expected, rtol=rtol, atol=atol)
    expected = central(lambda x: distance.pdist(x, metric, **options), XA)
    np.testing.assert_allclose(pdist, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev", "minkowski"])
def test_the_derivative_at_zero_distance_is_the_subgradient_zero(metric):
    """A point repeated: its distance to itself is 0, a kink, where the derivative is 0
    (not NaN); the other pairs' derivatives are as without the repeat."""
    x = np.vstack([XA[:2], XA[:1]])  # rows 0 and 2 coincide
    with jax.enable_x64(True):
        jacobian = np.asarray(jax.jacrev(Pdist(metric, p=3.0))(jnp.asarray(x)))
        hessian = np.asarray(jax.hessian(lambda x: Pdist(metric, p=3.0)(x)[1])(jnp.asarray(x)))
    assert np.isfinite(jacobian).all() and np.isfinite(hessian).all()
    np.testing.assert_array_equal(jacobian[1], 0)  # the pair (0, 2)
    expected = central(lambda x: distance.pdist(x, metric, **scipy_options(metric))[0], x)
    np.testing.assert_allclose(jacobian[0], expected, rtol=1e-7, atol=1e-8)


def test_every_transformation_and_a_batch():
    batch = RNG.normal(size=(3, 4, 3))
    with jax.enable_x64(True):
        check_adapter(Cdist("euclidean"), XA, XB, seed=0)
        check_adapter(Pdist("cosine"), XA, seed=0)
        got = jax.jit(jax.vmap(Cdist("cityblock"), (0, None)))(batch, XB)
    for x, g in zip(batch, got):
        np.testing.assert_array_equal(g, distance.cdist(x, XB, "cityblock"))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="Cdist: parameter 'metric'"):
        Cdist("hamming")
    with pytest.raises(ValueError, match="Pdist: parameter 'p' must be a number greater than 0"):
        Pdist("minkowski", p=0.0)
    zero = np.vstack([XA[:2], np.zeros((1, 3))])
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="Cdist.*'XB' has a zero row"):
            Cdist("cosine")(XA, zero)
        with pytest.raises(ValueError, match="Pdist.*'X' has a constant row"):
            Pdist("correlation")(np.vstack([XA[:2], np.ones((1, 3))]))


@pytest.mark.parametrize("p", [0.3, 0.5, 0.9])
def test_minkowski_below_1_is_scipys_and_its_derivatives_scipys_differences(p):
    """SciPy computes p < 1 (no metric then). Where a coordinate difference is 0 the
    one-sided derivatives along it are infinite; the symmetric one, which SciPy's central
    differences give, is 0, in both modes. Here XB's row 0 shares a coordinate with XA's."""
    xb = XB.copy()
    xb[0, 1] = XA[2, 1]
    w = np.array([1.0, 0.5, 2.0])
    with jax.enable_x64(True):
        for options in ({}, {"w": w}):
            cdist = Cdist("minkowski", p=p)
            expected = distance.cdist(XA, xb, "minkowski", p=p, **options)
            np.testing.assert_array_equal(cdist(XA, xb, **options), expected)
            np.testing.assert_array_equal(
                Pdist("minkowski", p=p)(XA, **options),
                distance.pdist(XA, "minkowski", p=p, **options),
            )
            reverse = jax.jacrev(lambda a: cdist(a, xb, **options))(jnp.asarray(XA))
            forward = jax.jacfwd(lambda b: cdist(XA, b, **options))(jnp.asarray(xb))
            reference = central(lambda a: distance.cdist(a, xb, "minkowski", p=p, **options), XA)
            np.testing.assert_allclose(reverse, reference, rtol=1e-6, atol=1e-8)
            reference = central(lambda b: distance.cdist(XA, b, "minkowski", p=p, **options), xb)
            np.testing.assert_allclose(forward, reference, rtol=1e-6, atol=1e-8)
            assert reverse[2, 0, 2, 1] == 0 and forward[2, 0, 0, 1] == 0  # (the zero difference)


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "zero-weight"])
def test_minkowski_with_p_inf_differentiates_as_chebyshev(weighted):
    """SciPy takes p = inf (Chebyshev's value); the derivatives were NaN (|d| ** inf)."""
    w = np.array([1.0, 0.0, 2.0])
    options = {"w": w} if weighted else {}
    with jax.enable_x64(True):
        cdist = Cdist("minkowski", p=np.inf)
        expected = distance.cdist(XA, XB, "minkowski", p=np.inf, **options)
        np.testing.assert_array_equal(cdist(XA, XB, **options), expected)
        jacobian = jax.jacobian(lambda a: cdist(a, XB, **options))(XA)
        tangent = jax.jvp(lambda a: cdist(a, XB, **options), (XA,), (XA,))[1]
    reference = central(lambda a: distance.cdist(a, XB, "minkowski", p=np.inf, **options), XA)
    np.testing.assert_allclose(jacobian, reference, atol=1e-8)
    np.testing.assert_allclose(tangent, np.einsum("ijkl,kl->ij", reference, XA), atol=1e-7)


def test_chebyshev_with_a_zero_weight_leaves_that_coordinate_out_of_the_derivative():
    """SciPy takes zero weights (Chebyshev's weights only choose coordinates, those above 0);
    the property suite drew positive weights alone, so the mask's edge went unchecked. The
    zero-weighted coordinate holds the largest differences here."""
    w = np.array([1.0, 0.0, 2.0])
    xa = XA * np.array([1.0, 10.0, 1.0])
    with jax.enable_x64(True):
        jacobian = jax.jacobian(lambda a: Cdist("chebyshev")(a, XB, w=w))(xa)
        pdist_jacobian = jax.jacobian(lambda a: Pdist("chebyshev")(a, w=w))(xa)
    expected = central(lambda a: distance.cdist(a, XB, "chebyshev", w=w), xa)
    np.testing.assert_allclose(jacobian, expected, atol=1e-8)
    expected = central(lambda a: distance.pdist(a, "chebyshev", w=w), xa)
    np.testing.assert_allclose(pdist_jacobian, expected, atol=1e-8)


def test_integer_points_give_floats_as_scipys():
    """SciPy's cdist of integer point sets is float64, as Pdist's and KDTreeQuery's are here;
    Cdist declared the inputs' int64 and the call failed ("result 0 of forward has dtype
    float64, but int64 was declared"). Float32 points stay float32."""
    xa, xb = np.arange(12).reshape(4, 3) % 5, np.arange(15).reshape(5, 3) % 4
    w = np.array([1, 2, 1])
    with jax.enable_x64(True):
        for got, expected in [
            (Cdist()(xa, xb), distance.cdist(xa, xb)),
            (jax.jit(Cdist("cityblock"))(xa, xb), distance.cdist(xa, xb, "cityblock")),
            (Cdist()(xa, xb, w=w), distance.cdist(xa, xb, w=w)),
            (Pdist()(xa), distance.pdist(xa)),
        ]:
            assert got.dtype == jnp.float64
            np.testing.assert_array_equal(got, expected)
        single = Cdist()(xa.astype(np.float32), xb.astype(np.float32))
    assert single.dtype == jnp.float32
    np.testing.assert_array_equal(single, distance.cdist(xa, xb).astype(np.float32))


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean"])
def test_the_cotangents_from_the_distances_batched_and_second_order(metric):
    """Euclidean and sqeuclidean cotangents come from the distances (sums and a matrix
    product, no (m, k, n) differences): a batch of XA sharing one XB (whose cotangent sums
    over the batch) against SciPy's differences, and the Hessian of Σ w · d (through the
    distances' own derivative) against SciPy's second differences, Cdist's and Pdist's."""
    batch = RNG.normal(size=(2, 4, 3))
    w = RNG.normal(size=(4, 5))
    wp = RNG.normal(size=6)
    with jax.enable_x64(True):
        in_b = jax.grad(lambda b: jnp.sum(w * Cdist(metric)(batch, b)))(XB)
        hessian = jax.hessian(lambda a: jnp.sum(w * Cdist(metric)(a, XB)))(XA)
        hessian_p = jax.hessian(lambda x: jnp.sum(wp * Pdist(metric)(x)))(XA)

    def value(b):
        return sum(np.sum(w * distance.cdist(x, b, metric)) for x in batch)

    np.testing.assert_allclose(in_b, central(value, XB), rtol=1e-7, atol=1e-8)

    def cdist_gradient(a):  # SciPy's differences, differenced again
        return central(lambda a: np.sum(w * distance.cdist(a, XB, metric)), a, 1e-4)

    def pdist_gradient(x):
        return central(lambda x: np.sum(wp * distance.pdist(x, metric)), x, 1e-4)

    np.testing.assert_allclose(hessian, central(cdist_gradient, XA, 1e-4), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hessian_p, central(pdist_gradient, XA, 1e-4), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("metric", ["seuclidean", "cosine"])
def test_no_distances_are_empty_eager_jitted_and_differentiated(metric):
    """Where the result is empty (no rows in one set, one row in pdist) SciPy answers an
    empty array; the checks of zero rows or of the default V's zero variances refused it
    eagerly while jit (whose host call an empty result never needs) answered, and pdist's
    gradient of one row failed in a gather (#54's search of empty inputs)."""
    xa, none, one = np.zeros((2, 2)), np.zeros((0, 2)), np.ones((1, 2))
    with warnings.catch_warnings():  # (seuclidean's V of one row: NumPy's warning)
        warnings.simplefilter("ignore", RuntimeWarning)
        assert distance.pdist(one, metric).shape == (0,)
    assert distance.cdist(xa, none, metric).shape == (2, 0)
    assert distance.cdist(none, xa, metric).shape == (0, 2)
    with jax.enable_x64(True):
        for call in (Cdist(metric), jax.jit(Cdist(metric))):
            assert call(xa, none).shape == (2, 0)
            assert call(none, xa).shape == (0, 2)
        for call in (Pdist(metric), jax.jit(Pdist(metric))):
            assert call(one).shape == (0,)
        grad = jax.grad(lambda x: Pdist(metric)(x).sum())(one)
        # a zero row against no rows: its cosine slope is 0/0, times no cotangent (was NaN)
        grad_a = jax.grad(lambda a: Cdist(metric)(a, none).sum())(xa)
        _, tangent = jax.jvp(lambda a: Cdist(metric)(a, none), (xa,), (np.ones_like(xa),))
    np.testing.assert_array_equal(grad, np.zeros((1, 2)))
    np.testing.assert_array_equal(grad_a, np.zeros((2, 2)))
    assert tangent.shape == (2, 0)


@pytest.mark.parametrize("scale", [1e-160, 1e-80, 1e80, 1e160])
@pytest.mark.parametrize("metric", ["cosine", "correlation", "braycurtis", "canberra"])
def test_scale_free_metrics_have_exact_derivatives_at_any_scale(metric, scale):
    """These distances do not change when the points are scaled by s, so their Jacobians at
    s x are the Jacobians at x (checked against SciPy's differences above) over s. Squares
    of entries of 1e80 over- and underflowed: cosine's gradient was off by a factor of 3 (or
    inf), correlation's 20% (or NaN), braycurtis' and canberra's 20% beyond 1e155."""
    with jax.enable_x64(True):
        xa, xb = jnp.asarray(XA), jnp.asarray(XB)
        for jacobian in (jax.jacrev, jax.jacfwd):
            want_c = jacobian(lambda a: Cdist(metric)(a, xb))(xa)
            got_c = jacobian(lambda a: Cdist(metric)(a, scale * xb))(scale * xa)
            np.testing.assert_allclose(scale * got_c, want_c, rtol=1e-12, atol=1e-14)
            want_p = jacobian(Pdist(metric))(xa)
            got_p = jacobian(Pdist(metric))(scale * xa)
            np.testing.assert_allclose(scale * got_p, want_p, rtol=1e-12, atol=1e-14)
