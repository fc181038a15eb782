"""A point holding NaN (SciPy's distances from it are NaN) keeps out of the other pairs'
derivatives, and its own pairs get NaN derivatives, the same in both modes. Before, reverse
mode made every other pair's derivative in the other point set NaN (the NaN row's partials
times a zero cotangent): the gradient of a loss that masks NaN distances was NaN."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbridge.adapters import spatial

RNG = np.random.default_rng(0)
XA = np.array([[np.nan, 1.0], [0.5, 0.2], [0.3, -0.4]])
XB = RNG.normal(size=(3, 2))
CLEAN = [1, 2]  # XA's rows without NaN


@pytest.mark.parametrize(
    "metric", ["euclidean", "sqeuclidean", "cityblock", "cosine", "correlation"]
)
def test_cdist_a_nan_row_keeps_out_of_the_other_pairs(metric):
    def f(a, b):
        return spatial.cdist(a, b, metric)

    with jax.enable_x64(True):
        for argument in (0, 1):
            reverse = np.asarray(jax.jacrev(f, argnums=argument)(XA, XB))
            forward = np.asarray(jax.jacfwd(f, argnums=argument)(XA, XB))
            clean = np.asarray(jax.jacfwd(f, argnums=argument)(XA[CLEAN], XB))
            np.testing.assert_allclose(reverse, forward, rtol=1e-13, atol=1e-15)
            if argument == 0:  # (the clean rows' columns; the NaN row's are 0 for them)
                clean_part = reverse[CLEAN][:, :, CLEAN]
                np.testing.assert_allclose(clean_part, clean, rtol=1e-13, atol=1e-15)
                assert (reverse[CLEAN][:, :, 0] == 0).all()
            else:
                np.testing.assert_allclose(reverse[CLEAN], clean, rtol=1e-13, atol=1e-15)
            # the NaN row's pairs: NaN in that row and in the pair's other point
            row = reverse[0]
            if argument == 0:
                assert np.isnan(row[:, 0]).all() and (row[:, CLEAN] == 0).all()
            else:
                for j in range(3):
                    assert np.isnan(row[j, j]).all()
                    others = [k for k in range(3) if k != j]
                    assert (row[j, others] == 0).all()


def test_pdist_and_weighted_cdist_masked_losses_have_the_clean_gradient():
    """The masked loss over pdist's pairs and over a weighted cdist, in the points and the
    weights: the clean pairs' gradient, as without the NaN point."""
    w = np.array([0.7, 1.3])

    def masked(d):
        return jnp.sum(jnp.where(jnp.isnan(d), 0.0, d) ** 2)

    with jax.enable_x64(True):
        points = np.concatenate([XA, XB])
        got = jax.grad(lambda x: masked(spatial.pdist(x, "euclidean")))(points)
        want = jax.grad(lambda x: masked(spatial.pdist(x, "euclidean")))(points[1:])
        np.testing.assert_allclose(got[1:], want, rtol=1e-13)
        assert (got[0] == 0).all()
        weighted = jax.grad(
            lambda a, w: masked(spatial.cdist(a, XB, "euclidean", w=w)), argnums=(0, 1)
        )
        got_a, got_w = weighted(XA, w)
        want_a, want_w = weighted(XA[CLEAN], w)
    np.testing.assert_allclose(np.asarray(got_a)[CLEAN], want_a, rtol=1e-13)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-13)


def test_points_shared_by_a_batch_get_the_sum_of_its_gradients():
    """XB shared by a batch of two XA, one holding a NaN row: XB's gradient is the sum of the
    two problems' (the interpolants' shared sites once got twice that sum: the NaN marking
    broadcast a cotangent the bridge had summed back over the batch)."""

    def masked(a, b):
        d = spatial.cdist(a, b, "euclidean")
        return jnp.sum(jnp.where(jnp.isnan(d), 0.0, d) ** 2)

    with jax.enable_x64(True):
        other = XA.copy()
        other[0] = [0.1, 0.9]
        batch = np.stack([XA, other])
        shared = jax.grad(lambda b: jnp.sum(jax.vmap(masked, (0, None))(batch, b)))(XB)
        first = jax.grad(masked, argnums=1)(XA[CLEAN], XB)
        second = jax.grad(masked, argnums=1)(other, XB)
    np.testing.assert_allclose(shared, first + second, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("row", [0, 2, 4])
@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "cosine", "correlation"])
def test_pdist_a_nan_row_anywhere_has_nan_pairs_and_keeps_out_of_the_others(metric, row):
    """Pdist's reverse mode with the NaN point first, inside or last: its pairs' Jacobian
    rows are NaN in its own coordinates, as forward mode says, and every other pair's is
    the pdist of the points without it."""
    points = RNG.normal(size=(5, 2))
    points[row, 0] = np.nan
    keep = [i for i in range(5) if i != row]
    with jax.enable_x64(True):
        reverse = np.asarray(jax.jacrev(lambda x: spatial.pdist(x, metric))(points))
        forward = np.asarray(jax.jacfwd(lambda x: spatial.pdist(x, metric))(points))
        clean = np.asarray(jax.jacrev(lambda x: spatial.pdist(x, metric))(points[keep]))
    np.testing.assert_array_equal(np.isnan(reverse), np.isnan(forward))
    pairs = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    mine = [k for k, pair in enumerate(pairs) if row in pair]
    others = [k for k, pair in enumerate(pairs) if row not in pair]
    assert np.isnan(reverse[mine][:, row]).all()
    np.testing.assert_allclose(reverse[others][:, keep], clean, rtol=1e-13, atol=1e-15)
    assert (reverse[others][:, row] == 0).all()
