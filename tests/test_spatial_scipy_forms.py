"""``spatial``'s SciPy call forms (``distance.cdist``, ``distance.pdist``, ``cdist``,
``pdist``, ``KDTree(data).query``, ``query_ball_point``) give SciPy's answers and shapes
for SciPy's arguments, their gradients SciPy's central differences; what they do not take
is refused, naming the argument (#56)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.spatial
import scipy.spatial.distance

from jaxbridge.adapters import spatial
from jaxbridge.adapters.spatial import KDTree, distance

RNG = np.random.default_rng(3)
XA, XB = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 3))
DATA, X = RNG.normal(size=(20, 3)), RNG.normal(size=(6, 3))
W = np.array([0.5, 2.0, 1.0])
V = np.array([0.7, 1.3, 2.0])
VI = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]])

# (metric, SciPy's keywords): each keyword SciPy takes for the continuous metrics
FORMS = [
    ("euclidean", {}),
    ("sqeuclidean", {"w": W}),
    ("cityblock", {}),
    ("minkowski", {}),
    ("minkowski", {"p": 3.0}),
    ("minkowski", {"p": 1.5, "w": W}),
    ("cosine", {"w": W}),
    ("correlation", {}),
    ("seuclidean", {}),
    ("seuclidean", {"V": V}),
    ("mahalanobis", {"VI": VI}),
]
IDS = [f"{m}-{'-'.join(k) or 'plain'}" for m, k in FORMS]


def central(fun, x, h=1e-6):
    """d fun / d x by central differences, (*fun's shape, *x's shape)."""
    columns = []
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((np.asarray(fun(x + step)) - np.asarray(fun(x - step))) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(fun(x)) + x.shape)


@pytest.mark.parametrize(("metric", "kwargs"), FORMS, ids=IDS)
def test_cdist_and_pdist_are_scipys_for_scipys_arguments(metric, kwargs):
    with jax.enable_x64(True):
        between = distance.cdist(XA, XB, metric, **kwargs)
        within = distance.pdist(XA, metric=metric, **kwargs)
        assert spatial.cdist is distance.cdist and spatial.pdist is distance.pdist
    np.testing.assert_array_equal(between, scipy.spatial.distance.cdist(XA, XB, metric, **kwargs))
    np.testing.assert_array_equal(within, scipy.spatial.distance.pdist(XA, metric, **kwargs))


@pytest.mark.parametrize(("metric", "kwargs"), FORMS, ids=IDS)
def test_cdist_and_pdist_gradients_are_scipys_differences(metric, kwargs):
    weights = RNG.normal(size=(4, 5))
    with jax.enable_x64(True):
        in_xa = jax.grad(lambda a: jnp.sum(weights * distance.cdist(a, XB, metric, **kwargs)))(
            jnp.asarray(XA)
        )
        in_x = jax.jacrev(lambda x: distance.pdist(x, metric, **kwargs))(jnp.asarray(XA))
    expected = central(
        lambda a: np.sum(weights * scipy.spatial.distance.cdist(a, XB, metric, **kwargs)), XA
    )
    np.testing.assert_allclose(in_xa, expected, rtol=1e-7, atol=1e-8)
    expected = central(lambda x: scipy.spatial.distance.pdist(x, metric, **kwargs), XA)
    np.testing.assert_allclose(in_x, expected, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", ["w", "V", "VI"])
def test_the_keyword_arrays_are_differentiable_as_scipys_differences(name):
    metric, value = {"w": ("cityblock", W), "V": ("seuclidean", V), "VI": ("mahalanobis", VI)}[name]
    with jax.enable_x64(True):
        got = jax.jacrev(lambda v: distance.pdist(XA, metric, **{name: v}))(jnp.asarray(value))
    expected = central(lambda v: scipy.spatial.distance.pdist(XA, metric, **{name: v}), value)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-8)


def test_what_cdist_and_pdist_do_not_take_is_refused_by_name():
    with pytest.raises(TypeError, match="cdist: argument 'metric' must be the name"):
        distance.cdist(XA, XB, lambda u, v: 0.0)
    with pytest.raises(TypeError, match="pdist: argument 'out'"):
        distance.pdist(XA, out=np.zeros(6))
    with pytest.raises(TypeError, match="cdist: argument 'p' is the order of the 'minkowski'"):
        distance.cdist(XA, XB, "euclidean", p=3)
    with pytest.raises(TypeError, match="pdist: argument 'wieghts' is not one of SciPy's"):
        distance.pdist(XA, "euclidean", wieghts=W)
    with pytest.raises(ValueError, match="Pdist: argument 'V' is not one the metric"):
        distance.pdist(XA, "euclidean", V=V)


@pytest.mark.parametrize(
    ("k", "shape"), [(1, (6,)), (3, (6, 3)), ([1], (6, 1)), ([2, 4], (6, 2))], ids=str
)
@pytest.mark.parametrize("p", [1.0, 2.0, np.inf])
def test_kdtree_query_has_scipys_values_and_shapes(k, shape, p):
    """An integer ``k = 1`` gives (q,), as SciPy's (``KDTreeQuery`` gives (q, 1)); ``k`` a
    list of ranks gives those neighbours."""
    expected = scipy.spatial.KDTree(DATA).query(X, k, p=p)
    with jax.enable_x64(True):
        distances, indices = KDTree(DATA).query(X, k, p=p)
    assert distances.shape == indices.shape == np.shape(expected[0]) == shape
    assert indices.dtype == jnp.int32
    np.testing.assert_array_equal(distances, expected[0])
    np.testing.assert_array_equal(indices, expected[1])


def test_kdtree_query_of_one_point_and_of_a_grid_of_points():
    grid = RNG.normal(size=(2, 3, 3))
    tree = scipy.spatial.KDTree(DATA)
    with jax.enable_x64(True):
        for x, k in ((X[0], 1), (X[0], 2), (grid, 1), (grid, 3)):
            distances, indices = KDTree(DATA).query(x, k)
            expected = tree.query(x, k)
            assert distances.shape == np.shape(expected[0])
            np.testing.assert_array_equal(distances, expected[0])
            np.testing.assert_array_equal(indices, expected[1])


def test_kdtree_query_bound_and_approximation_are_scipys():
    tree = scipy.spatial.KDTree(DATA)
    with jax.enable_x64(True):
        got = KDTree(DATA).query(X, 3, distance_upper_bound=1.0)
        approximate = KDTree(DATA).query(X, 2, eps=0.5, p=1)
    expected = tree.query(X, 3, distance_upper_bound=1.0)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert np.isinf(expected[0]).any() and (expected[1] == 20).any()  # (missing ones too)
    expected = tree.query(X, 2, eps=0.5, p=1)
    np.testing.assert_array_equal(approximate[0], expected[0])
    np.testing.assert_array_equal(approximate[1], expected[1])


@pytest.mark.parametrize("k", [1, 3, [2, 3]], ids=str)
def test_kdtree_distances_are_differentiable_in_data_and_x_as_scipys_differences(k):
    def ours(data, x):
        return KDTree(data).query(x, k)[0]

    def scipys(data, x):
        return scipy.spatial.KDTree(data).query(x, k)[0]

    with jax.enable_x64(True):
        in_data = jax.jit(jax.jacrev(ours))(jnp.asarray(DATA), jnp.asarray(X))
        in_x = jax.jacfwd(ours, 1)(jnp.asarray(DATA), jnp.asarray(X))
    np.testing.assert_allclose(in_data, central(lambda d: scipys(d, X), DATA), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(in_x, central(lambda x: scipys(DATA, x), X), rtol=1e-7, atol=1e-8)


def test_query_ball_point_counts_are_scipys():
    tree = scipy.spatial.KDTree(DATA)
    with jax.enable_x64(True):
        counts = KDTree(DATA).query_ball_point(X, 1.2, p=1.0, return_length=True)
    np.testing.assert_array_equal(counts, tree.query_ball_point(X, 1.2, p=1.0, return_length=True))
    with pytest.raises(TypeError, match="KDTree.query_ball_point: argument 'return_length'"):
        KDTree(DATA).query_ball_point(X, 1.2)


def test_query_ball_point_takes_scipys_shapes_one_point_and_radii_per_point():
    tree = scipy.spatial.KDTree(DATA)
    radii = np.linspace(0.5, 1.5, len(X))
    stacked = np.stack([X, X[::-1]])  # (2, q, m): counts shaped (2, q)
    with jax.enable_x64(True):
        ours = KDTree(DATA)
        one = ours.query_ball_point(X[0], 1.2, return_length=True)
        per_point = jax.jit(lambda x, r: ours.query_ball_point(x, r, return_length=True))(X, radii)
        leading = ours.query_ball_point(stacked, 1.2, return_length=True)
        with pytest.raises(ValueError, match="query_ball_point: argument 'r' must be a number"):
            ours.query_ball_point(X, radii[:2], return_length=True)
    assert np.shape(one) == ()
    assert int(one) == tree.query_ball_point(X[0], 1.2, return_length=True)
    np.testing.assert_array_equal(per_point, tree.query_ball_point(X, radii, return_length=True))
    np.testing.assert_array_equal(leading, tree.query_ball_point(stacked, 1.2, return_length=True))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: KDTree(DATA, boxsize=10.0), "KDTree: argument 'boxsize'"),
        (lambda: KDTree(DATA[0]), "KDTree: argument 'data' must be"),
        (lambda: KDTree(DATA).query(X, 0), "KDTree.query: argument 'k'"),
        (lambda: KDTree(DATA).query(X, [0, 1]), "KDTree.query: argument 'k'"),
        (lambda: KDTree(DATA).query(X, 1.5), "KDTree.query: argument 'k'"),
        (lambda: KDTree(DATA).query(X[:, :2]), "KDTree.query: argument 'x'"),
    ],
    ids=["boxsize", "data", "k0", "rank0", "kfloat", "x"],
)
def test_what_kdtree_does_not_take_is_refused_by_name(make, message):
    with jax.enable_x64(True), pytest.raises((TypeError, ValueError), match=message):
        make()


def test_scipys_tree_options_and_workers_are_taken_and_change_no_answer():
    """leafsize, balanced_tree, compact_nodes, copy_data and workers shape SciPy's tree and
    threads, not its answer: a port passing them was refused."""
    options = dict(leafsize=4, balanced_tree=False, compact_nodes=False, copy_data=True)
    tree = scipy.spatial.KDTree(DATA, **options)
    want_d, want_i = tree.query(X, k=3, workers=-1)
    with jax.enable_x64(True):
        got_d, got_i = KDTree(DATA, **options).query(X, k=3, workers=-1)
        counts = KDTree(DATA, leafsize=2).query_ball_point(X, 1.2, workers=4, return_length=True)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-15)
    np.testing.assert_array_equal(counts, tree.query_ball_point(X, 1.2, return_length=True))


TWO_VECTOR = ["braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine"]
TWO_VECTOR += ["euclidean", "sqeuclidean"]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", TWO_VECTOR)
def test_scipys_two_vector_distances_and_their_gradients(name, weighted):
    u, v = RNG.normal(size=4), RNG.normal(size=4)
    extra = (RNG.uniform(0.5, 2.0, 4),) if weighted else ()
    want = getattr(scipy.spatial.distance, name)(u, v, *extra)
    with jax.enable_x64(True):
        got = getattr(distance, name)(u, v, *extra)
        grad = jax.grad(getattr(distance, name))(jnp.asarray(u), v, *extra)
    assert float(got) == pytest.approx(want, rel=1e-14)
    h, eye = 1e-6, np.eye(4)
    steps = [
        (getattr(scipy.spatial.distance, name)(u + h * e, v, *extra)
         - getattr(scipy.spatial.distance, name)(u - h * e, v, *extra)) / (2 * h)
        for e in eye
    ]  # fmt: skip
    np.testing.assert_allclose(grad, steps, rtol=1e-6, atol=1e-9)


def test_the_parametrised_two_vector_distances_are_scipys():
    u, v = RNG.normal(size=4), RNG.normal(size=4)
    w, V = RNG.uniform(0.5, 2.0, 4), RNG.uniform(0.5, 2.0, 4)  # noqa: N806
    m = RNG.normal(size=(4, 4))
    VI = m @ m.T + np.eye(4)  # noqa: N806
    sd = scipy.spatial.distance
    with jax.enable_x64(True):
        pairs = [
            (distance.minkowski(u, v, 3, w), sd.minkowski(u, v, 3, w)),
            (distance.seuclidean(u, v, V), sd.seuclidean(u, v, V)),
            (distance.mahalanobis(u, v, VI), sd.mahalanobis(u, v, VI)),
            (distance.correlation(u, v, centered=False), sd.correlation(u, v, centered=False)),
        ]
    for got, want in pairs:
        assert float(got) == pytest.approx(want, rel=1e-14)
    with pytest.raises(ValueError, match="distance.euclidean: arguments 'u' and 'v' must be"):
        distance.euclidean(np.ones((2, 3)), np.ones((2, 3)))


def test_squareform_both_ways_as_scipy_and_differentiable():
    condensed = scipy.spatial.distance.pdist(DATA[:6])
    square = scipy.spatial.distance.squareform(condensed)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(distance.squareform(condensed), square)
        np.testing.assert_array_equal(distance.squareform(square), condensed)
        np.testing.assert_array_equal(jax.jit(distance.squareform)(condensed), square)
        # the matrix's sum counts each pair twice
        grad = jax.grad(lambda x: distance.squareform(spatial.pdist(x)).sum())(DATA[:6])
        want = jax.grad(lambda x: 2 * spatial.pdist(x).sum())(DATA[:6])
    np.testing.assert_allclose(grad, want, rtol=1e-14)
    with pytest.raises(ValueError, match="squareform: 'X' must be symmetric"):
        distance.squareform(square + np.triu(np.ones((6, 6)), 1))
    with pytest.raises(ValueError, match="are not the pairs of any number of points"):
        distance.squareform(np.ones(4))
