"""``Cdist`` and ``Pdist`` with SciPy's parameter arrays: weights ``w``, ``seuclidean``'s
``V`` and ``mahalanobis``'s ``VI`` (given, or SciPy's defaults from the points): SciPy's
values bitwise, derivatives in the points and the parameters against central differences
of SciPy's own ``cdist``/``pdist`` and closed forms, bad input named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.spatial.distance as distance

from jaxbridge.adapters.spatial import Cdist, Pdist
from jaxbridge.adapters.spatial.cdist import MahalanobisCdist, WeightedCdist
from jaxbridge.adapters.spatial.pdist import SeuclideanPdist
from jaxbridge.testing import check_adapter

WEIGHTED = [
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
RNG = np.random.default_rng(5)
XA, XB = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 3))
W = RNG.uniform(0.5, 2.0, 3)
V = RNG.uniform(0.5, 2.0, 3)
_M = RNG.normal(size=(3, 3))
VI = _M @ _M.T + np.eye(3)


def options(metric):
    return {"p": 3.0} if metric == "minkowski" else {}


def central(fun, x, h=1e-6):
    """d fun / d x by central differences, (*fun's shape, *x's shape)."""
    columns = []
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((fun(x + step) - fun(x - step)) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(fun(x)) + x.shape)


@pytest.mark.parametrize("metric", WEIGHTED)
def test_weighted_values_are_scipys_bitwise(metric):
    w = W * np.array([1.0, 0.0, 1.0])  # (a zero weight, which chebyshev skips)
    with jax.enable_x64(True):
        got_c = Cdist(metric, p=3.0)(XA, XB, w=w)
        got_p = Pdist(metric, p=3.0)(XA, w=w)
    np.testing.assert_array_equal(got_c, distance.cdist(XA, XB, metric, w=w, **options(metric)))
    np.testing.assert_array_equal(got_p, distance.pdist(XA, metric, w=w, **options(metric)))


def test_seuclidean_and_mahalanobis_values_are_scipys_bitwise_with_and_without_parameters():
    with jax.enable_x64(True):
        got = [
            Cdist("seuclidean")(XA, XB, V=V),
            Cdist("seuclidean")(XA, XB),
            Cdist("mahalanobis")(XA, XB, VI=VI),
            Cdist("mahalanobis")(XA, XB),
            Pdist("seuclidean")(XB, V=V),
            Pdist("seuclidean")(XB),
            Pdist("mahalanobis")(XB, VI=VI),
            Pdist("mahalanobis")(XB),
        ]
    expected = [
        distance.cdist(XA, XB, "seuclidean", V=V),
        distance.cdist(XA, XB, "seuclidean"),
        distance.cdist(XA, XB, "mahalanobis", VI=VI),
        distance.cdist(XA, XB, "mahalanobis"),
        distance.pdist(XB, "seuclidean", V=V),
        distance.pdist(XB, "seuclidean"),
        distance.pdist(XB, "mahalanobis", VI=VI),
        distance.pdist(XB, "mahalanobis"),
    ]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


QUICK = {"euclidean", "chebyshev", "correlation"}  # (correlation: cosine centred)


@pytest.mark.parametrize(
    "metric", [m if m in QUICK else pytest.param(m, marks=pytest.mark.slow) for m in WEIGHTED]
)
def test_weighted_jacobians_match_central_differences_of_scipy(metric):
    opts = options(metric)
    with jax.enable_x64(True):
        in_a, in_b, in_w = jax.jacrev(
            lambda a, b, w: Cdist(metric, p=3.0)(a, b, w=w), argnums=(0, 1, 2)
        )(jnp.asarray(XA), jnp.asarray(XB), jnp.asarray(W))
        pairs_w = jax.jacfwd(lambda w: Pdist(metric, p=3.0)(XA, w=w))(jnp.asarray(W))
    rtol, atol = 1e-7, 1e-8
    for got, expected in (
        (in_a, central(lambda a: distance.cdist(a, XB, metric, w=W, **opts), XA)),
        (in_b, central(lambda b: distance.cdist(XA, b, metric, w=W, **opts), XB)),
        (in_w, central(lambda w: distance.cdist(XA, XB, metric, w=w, **opts), W)),
        (pairs_w, central(lambda w: distance.pdist(XA, metric, w=w, **opts), W)),
    ):
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    if metric != "chebyshev":  # (its weights only choose coordinates: derivative 0)
        assert np.abs(in_w).max() > 0.01


@pytest.mark.parametrize(
    ("metric", "name", "value"), [("seuclidean", "V", V), ("mahalanobis", "VI", VI)]
)
def test_seuclidean_and_mahalanobis_jacobians_match_central_differences_of_scipy(
    metric, name, value
):
    with jax.enable_x64(True):
        in_a, in_p = jax.jacrev(lambda a, q: Cdist(metric)(a, XB, **{name: q}), (0, 1))(
            jnp.asarray(XA), jnp.asarray(value)
        )
        default_b = jax.jacfwd(lambda b: Cdist(metric)(XA, b))(jnp.asarray(XB))
        default_x = jax.jacrev(Pdist(metric))(jnp.asarray(XB))
    rtol, atol = 1e-7, 1e-8
    for got, expected in (
        (in_a, central(lambda a: distance.cdist(a, XB, metric, **{name: value}), XA)),
        (in_p, central(lambda q: distance.cdist(XA, XB, metric, **{name: q}), value)),
        # SciPy's default V or VI moves with the points
        (default_b, central(lambda b: distance.cdist(XA, b, metric), XB)),
        (default_x, central(lambda x: distance.pdist(x, metric), XB)),
    ):
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_closed_forms_of_mahalanobis_in_vi_and_seuclidean_in_v():
    """``d = sqrt(δᵀ VI δ)``: ``∂d/∂VI = δ δᵀ / (2 d)``; ``d = sqrt(Σ δ² / V)``: ``∂d/∂V =
    -δ² / (2 d V²)``."""
    u, v = XA[:1], XB[:1]
    delta = (u - v)[0]
    with jax.enable_x64(True):
        in_vi = jax.grad(lambda q: Cdist("mahalanobis")(u, v, VI=q)[0, 0])(jnp.asarray(VI))
        in_v = jax.grad(lambda q: Cdist("seuclidean")(u, v, V=q)[0, 0])(jnp.asarray(V))
    d = np.sqrt(delta @ VI @ delta)
    np.testing.assert_allclose(in_vi, np.outer(delta, delta) / (2 * d), rtol=1e-14)
    d = np.sqrt(np.sum(delta**2 / V))
    np.testing.assert_allclose(in_v, -(delta**2) / (2 * d * V**2), rtol=1e-14)


def test_vmap_over_weights_is_one_call_of_scipys():
    batch = RNG.uniform(0.5, 2.0, (3, 3))
    with jax.enable_x64(True):
        got = jax.jit(jax.vmap(lambda w: Cdist("cityblock")(XA, XB, w=w)))(batch)
    for w, g in zip(batch, got):
        np.testing.assert_array_equal(g, distance.cdist(XA, XB, "cityblock", w=w))


@pytest.mark.slow
def test_every_transformation():
    with jax.enable_x64(True):
        check_adapter(WeightedCdist("cosine"), XA, XB, W, seed=0)
        check_adapter(MahalanobisCdist("mahalanobis"), XA, XB, VI, seed=0)
        check_adapter(SeuclideanPdist("seuclidean"), XA, V, seed=0)


def test_bad_input_is_named():
    with jax.enable_x64(True):
        with pytest.raises(
            ValueError, match="Cdist: argument 'w' is not one the metric 'seuclidean'"
        ):
            Cdist("seuclidean")(XA, XB, w=W)
        with pytest.raises(ValueError, match="Pdist: argument 'VI' is not one .*'euclidean'"):
            Pdist()(XA, VI=VI)
        with pytest.raises(ValueError, match="WeightedCdist.*'w'.*nonnegative"):
            Cdist()(XA, XB, w=-W)
        with pytest.raises(ValueError, match="SeuclideanPdist.*'V'.*positive"):
            Pdist("seuclidean")(XA, V=0 * V)
        with pytest.raises(ValueError, match="Pdist.*'X'.*3 points in 3 dimensions.*pass VI"):
            Pdist("mahalanobis")(XA[:3])
        with pytest.raises(ValueError, match="Cdist.*'XA' and 'XB'.*zero variance.*pass V"):
            Cdist("seuclidean")(XA * [1, 1, 0], XB * [1, 1, 0])
        with pytest.raises(ValueError, match="WeightedCdist.*'XA' has a zero row where w > 0"):
            Cdist("cosine")(XA * [1, 0, 1], XB, w=W * [0, 1, 0])
