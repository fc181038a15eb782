"""``KDTreeQuery``: SciPy's neighbours and distances, the distances' derivatives against
central differences of SciPy's own query (the neighbours held fixed), missing neighbours."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.spatial

from jaxbridge.adapters.spatial import KDTreeBallCount, KDTreeQuery

RNG = np.random.default_rng(1)
DATA, X = RNG.normal(size=(30, 3)), RNG.normal(size=(6, 3))


def scipy_query(data, x, k, p=2.0, **options):
    return scipy.spatial.KDTree(data).query(x, k, p=p, **options)


def central(fun, x, h=1e-6):
    columns = []
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((fun(x + step) - fun(x - step)) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(fun(x)) + x.shape)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, np.inf])
def test_neighbours_and_distances_are_scipys(p):
    with jax.enable_x64(True):
        distances, indices = KDTreeQuery(k=4, p=p)(DATA, X)
        one, first = KDTreeQuery(p=p)(DATA, X)
    expected = scipy_query(DATA, X, 4, p)
    np.testing.assert_array_equal(distances, expected[0])
    np.testing.assert_array_equal(indices, expected[1])
    assert indices.dtype == jnp.int32 and one.shape == first.shape == (6, 1)
    np.testing.assert_array_equal(first[:, 0], scipy_query(DATA, X, 1, p)[1])


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, np.inf])
def test_distance_derivatives_match_central_differences_of_scipy(p):
    with jax.enable_x64(True):
        in_x = jax.jacrev(lambda x: KDTreeQuery(k=3, p=p)(DATA, x)[0])(jnp.asarray(X))
        in_data = jax.jacfwd(lambda d: KDTreeQuery(k=3, p=p)(d, X)[0])(jnp.asarray(DATA))
    expected = central(lambda x: scipy_query(DATA, x, 3, p)[0], X)
    np.testing.assert_allclose(in_x, expected, rtol=1e-7, atol=1e-8)
    expected = central(lambda d: scipy_query(d, X, 3, p)[0], DATA)
    np.testing.assert_allclose(in_data, expected, rtol=1e-7, atol=1e-8)


def test_missing_neighbours_and_a_query_on_a_data_point():
    """Beyond ``distance_upper_bound`` SciPy gives ``inf`` and index ``n``: derivative 0. A
    query on a data point is at distance 0, a kink: the subgradient 0, not NaN."""
    x = np.vstack([DATA[:1], X[:1]])
    query = KDTreeQuery(k=2, distance_upper_bound=0.5)
    with jax.enable_x64(True):
        distances, indices = map(np.asarray, query(DATA, x))
        loss = jax.grad(lambda x: jnp.where(jnp.isinf(d := query(DATA, x)[0]), 0, d).sum())
        gradient = np.asarray(loss(jnp.asarray(x)))
    expected = scipy_query(DATA, x, 2, distance_upper_bound=0.5)
    np.testing.assert_array_equal(distances, expected[0])
    np.testing.assert_array_equal(indices, expected[1])
    assert distances[0, 0] == 0 and np.isinf(distances).any() and (indices == 30).any()
    assert np.isfinite(gradient).all()
    # row 0: the zero distance contributes 0; each found neighbour its unit vector
    for row in range(2):
        found = [j for j in indices[row] if j < 30 and np.any(DATA[j] != x[row])]
        units = [(x[row] - DATA[j]) / np.linalg.norm(x[row] - DATA[j]) for j in found]
        np.testing.assert_allclose(gradient[row], np.sum(units, 0) if units else 0, rtol=1e-14)


def test_vmap_over_query_sets_is_a_loop():
    sets = RNG.normal(size=(4, 6, 3))
    with jax.enable_x64(True):
        distances, indices = jax.jit(jax.vmap(KDTreeQuery(k=2), (None, 0)))(DATA, sets)
    for x, d, i in zip(sets, distances, indices):
        expected = scipy_query(DATA, x, 2)
        np.testing.assert_array_equal(d, expected[0])
        np.testing.assert_array_equal(i, expected[1])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="KDTreeQuery: parameter 'k'"):
        KDTreeQuery(k=0)
    with pytest.raises(ValueError, match="KDTreeQuery: parameter 'p'"):
        KDTreeQuery(p=0.5)
    with pytest.raises(ValueError, match="KDTreeQuery: parameter 'distance_upper_bound'"):
        KDTreeQuery(distance_upper_bound=0)
    with jax.enable_x64(True), pytest.raises(ValueError, match="KDTreeQuery.*'x' has non-finite"):
        KDTreeQuery()(DATA, np.full((1, 3), np.nan))


def test_ball_counts_are_scipys_and_integers_with_zero_derivatives():
    r = RNG.uniform(0.5, 1.5, 6)
    with jax.enable_x64(True):
        counts = KDTreeBallCount()(DATA, X, r)
        taxicab = KDTreeBallCount(p=1.0)(DATA, X, 1.2)
        sets = jax.jit(jax.vmap(KDTreeBallCount(), (None, 0, None)))(
            DATA, RNG.normal(size=(3, 6, 3)), r
        )

        def loss(x, r):  # (the counts choose which rows count)
            return jnp.sum(jnp.where(KDTreeBallCount()(DATA, x, r) > 1, x[:, 0], 0.0))

        gradient = jax.grad(loss, (0, 1))(jnp.asarray(X), jnp.asarray(r))
    tree = scipy.spatial.KDTree(DATA)
    assert counts.dtype == jnp.int32
    np.testing.assert_array_equal(counts, tree.query_ball_point(X, r, return_length=True))
    np.testing.assert_array_equal(taxicab, tree.query_ball_point(X, 1.2, p=1.0, return_length=True))
    assert np.asarray(counts).min() < 2 < np.asarray(counts).max()  # (both kinds of rows)
    expected = (np.asarray(counts) > 1)[:, None] * np.array([1.0, 0.0, 0.0])
    np.testing.assert_array_equal(gradient[0], expected)
    np.testing.assert_array_equal(gradient[1], 0)
    assert sets.shape == (3, 6)


def test_ball_count_bad_input_is_named():
    with pytest.raises(ValueError, match="KDTreeBallCount: parameter 'p'"):
        KDTreeBallCount(p=0.5)
    with jax.enable_x64(True), pytest.raises(ValueError, match="KDTreeBallCount.*'r'.*nonnegative"):
        KDTreeBallCount()(DATA, X, -1.0)


def test_points_of_no_coordinates_are_named():
    # d = 0: SciPy's KDTree failed with "IndexError: Out of bounds on buffer access (axis 0)"
    data, x = np.zeros((3, 0)), np.zeros((2, 0))
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="KDTreeQuery.*no coordinates"):
            KDTreeQuery(k=1)(data, x)
        with pytest.raises(ValueError, match="KDTreeBallCount.*no coordinates"):
            KDTreeBallCount()(data, x, np.ones(2))
