"""A NaN query (SciPy's value there is NaN, whatever the data) keeps out of the other
queries' derivatives and gets NaN derivatives of its own, the same in both modes. Before,
reverse mode made other queries' derivatives in the sites NaN (its NaN partials times a
zero cotangent: a masked loss's gradient was NaN), PCHIP's and the grid's also in a
neighbouring query, and gave 0 for the NaN query's own where forward mode gave NaN;
``RBFInterpolator``'s derivatives raised SciPy's "array must not contain infs or NaNs"."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbridge.adapters import interpolate

RNG = np.random.default_rng(1)
X, Y = np.linspace(0.0, 1.0, 6), RNG.normal(size=6)
POINTS, VALUES = RNG.uniform(size=(12, 2)), RNG.normal(size=12)
GRID, GRID_VALUES = (np.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 4)), RNG.normal(size=(5, 4))


def _grid(method):
    return lambda _, values, xi: interpolate.RegularGridInterpolator(
        method=method, bounds_error=False
    )(GRID, values, xi)


ONE_D = [(0.3,), (np.nan, 0.3)]
SCATTERED = [((0.4, 0.45),), ((np.nan, 0.5), (0.4, 0.45))]
ON_GRID = [((0.3, 0.2),), ((np.nan, 0.5), (0.3, 0.2))]
CASES = {
    **{
        name: (getattr(interpolate, name)(), X, Y, ONE_D, (0, 1, 2))
        for name in ("CubicSpline", "PchipInterpolator", "Akima1DInterpolator", "InterpSpline")
    },
    **{f"grid-{m}": (_grid(m), None, GRID_VALUES, ON_GRID, (1, 2)) for m in ("linear", "cubic")},
    "grid-pchip": (_grid("pchip"), None, GRID_VALUES, ON_GRID, (1, 2)),
    "LinearNDInterpolator": (
        interpolate.LinearNDInterpolator(),
        POINTS,
        VALUES,
        SCATTERED,
        (0, 1, 2),
    ),
    "CloughTocher2DInterpolator": (
        interpolate.CloughTocher2DInterpolator(),
        POINTS,
        VALUES,
        SCATTERED,
        (1, 2),
    ),
    "RBFInterpolator": (interpolate.RBFInterpolator(), POINTS, VALUES, SCATTERED, (0, 1, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_nan_query_keeps_out_of_the_others_derivatives(name):
    f, sites, values, (alone, with_nan), movable = CASES[name]
    with jax.enable_x64(True):
        args = (sites, values, jnp.asarray(with_nan))
        out = np.asarray(f(*args))
        assert np.isnan(out[0]) and np.isfinite(out[1])
        for i in movable:
            alone_args = (sites, values, jnp.asarray(alone))
            want = np.asarray(jax.jacfwd(f, argnums=i)(*alone_args))[0]
            reverse = np.asarray(jax.jacrev(f, argnums=i)(*args))
            forward = np.asarray(jax.jacfwd(f, argnums=i)(*args))
            if i == 2:  # the finite query's own derivative sits in its own column
                want = np.concatenate([np.zeros_like(want), want])
                reverse, forward = (
                    j.reshape(2, -1) if j.ndim > 2 else j for j in (reverse, forward)
                )
            for jacobian, mode in ((reverse, "reverse"), (forward, "forward")):
                np.testing.assert_allclose(
                    jacobian[1].ravel(), want.ravel(), rtol=1e-12, atol=1e-13, err_msg=mode
                )
            # the NaN query's row: NaN in the sites and values, in its own query alone
            np.testing.assert_array_equal(reverse[0], forward[0], err_msg=f"argument {i}")
            row = reverse[0].ravel()
            if i == 2:
                assert np.isnan(row[: row.size // 2]).all() and (row[row.size // 2 :] == 0).all()
            else:
                assert np.isnan(row).all(), i


def test_a_masked_loss_has_the_finite_gradient_under_vmap():
    """The pattern a NaN query broke: a loss that masks NaN outputs, over a batch of
    problems, differentiated in the sites and values. The problem without a NaN query gets
    its own gradient; the other, with its NaN output masked (a zero cotangent), the finite
    query's (its sites' gradient was NaN)."""
    spline = interpolate.CubicSpline()

    def loss(x, y, xq):
        out = spline(x, y, xq)
        return jnp.sum(jnp.where(jnp.isnan(out), 0.0, out) ** 2)

    gradient = jax.grad(loss, argnums=(0, 1))

    def loss_gradient(y, xq):  # in the sites X
        return jax.grad(loss)(X, y, xq)

    with jax.enable_x64(True):
        xs, ys = np.stack([X, X**1.5]), np.stack([Y, Y[::-1]])
        queries = jnp.array([[np.nan, 0.3], [0.7, 0.3]])
        got = jax.vmap(gradient)(xs, ys, queries)
        want = [gradient(xs[0], ys[0], jnp.array([0.3])), gradient(xs[1], ys[1], queries[1])]
    for k in (0, 1):
        np.testing.assert_allclose(got[k], np.stack([w[k] for w in want]), rtol=1e-12, atol=1e-14)
    # the sites shared by the batch: their gradient is the sum of the two problems' (the
    # NaN marking once broadcast a summed cotangent back over the batch: twice the sum)
    with jax.enable_x64(True):
        shared = jax.grad(lambda x: jnp.sum(jax.vmap(loss, (None, 0, 0))(x, ys, queries)))(X)
        alone = [loss_gradient(ys[0], jnp.array([0.3])), loss_gradient(ys[1], queries[1])]
    np.testing.assert_allclose(shared, alone[0] + alone[1], rtol=1e-12, atol=1e-14)
