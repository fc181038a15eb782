"""SciPy's result objects from ``linprog``, ``milp``, ``lsq_linear`` and
``isotonic_regression``: code that reads ``res.fun`` or ``res.ineqlin.marginals`` ports
unchanged (#66). Every entry against SciPy's own result, and the marginals' derivatives
against central differences of SciPy's marginals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxbridge.adapters import optimize
from jaxbridge.adapters.optimize import OptimizeResult

# a non-degenerate vertex where each kind of constraint holds: A_ub's row 0, the equality
# and x2's upper bound (A_ub's row 1 and the lower bounds do not)
C = np.array([-1.0, -2.0, -1.5])
A_UB = np.array([[1.0, 1.0, 1.0], [1.0, 3.0, 0.0]])
B_UB = np.array([4.0, 7.0])
A_EQ = np.array([[1.0, -1.0, 0.5]])
B_EQ = np.array([0.5])
BOUNDS = [(0, None), (0, None), (0, 1)]
PARTS = ("ineqlin", "eqlin", "lower", "upper")


def scipys(c=C, a_ub=A_UB, b_ub=B_UB, a_eq=A_EQ, b_eq=B_EQ):
    res = scipy.optimize.linprog(c, a_ub, b_ub, a_eq, b_eq, BOUNDS)
    assert res.status == 0
    return res


def ours(c=C, a_ub=A_UB, b_ub=B_UB, a_eq=A_EQ, b_eq=B_EQ):
    return optimize.linprog(c, a_ub, b_ub, a_eq, b_eq, BOUNDS)


def marginals(res):
    return np.concatenate([np.asarray(res[part].marginals) for part in PARTS])


@pytest.mark.parametrize("jitted", [False, True], ids=["eagerly", "under jit"])
def test_linprogs_result_is_scipys(jitted):
    expected = scipys()
    with jax.enable_x64(True):
        got = (jax.jit(ours) if jitted else ours)()
    assert isinstance(got, OptimizeResult) and bool(got.success)
    np.testing.assert_allclose(got.x, expected.x, atol=1e-12)
    assert float(got.fun) == pytest.approx(expected.fun, abs=1e-12)
    np.testing.assert_allclose(got.slack, expected.slack, atol=1e-12)
    np.testing.assert_allclose(got.con, expected.con, atol=1e-12)
    for part in PARTS:
        np.testing.assert_allclose(got[part].residual, expected[part].residual, atol=1e-12)
        np.testing.assert_allclose(got[part].marginals, expected[part].marginals, atol=1e-12)
    # the marginals are the value's derivatives in the right-hand sides and the bound
    assert np.count_nonzero(marginals(expected)) == 3


def test_linprogs_result_under_vmap_is_scipys_for_each_problem():
    cs = np.stack([C, [-1.0, -3.0, -2.0], [-2.0, -1.0, -3.0]])
    with jax.enable_x64(True):
        got = jax.vmap(ours)(jnp.asarray(cs))
    for i, c in enumerate(cs):
        expected = scipys(c)
        np.testing.assert_allclose(got.x[i], expected.x, atol=1e-12)
        np.testing.assert_allclose(marginals(jax.tree.map(lambda a: a[i], got)),
                                   marginals(expected), atol=1e-12)  # fmt: skip


def _central(argument, h=1e-6):
    """d(SciPy's marginals)/d(argument), entry by entry, as one (m, *shape) array."""
    base = dict(c=C, a_ub=A_UB, b_ub=B_UB, a_eq=A_EQ, b_eq=B_EQ)
    value = base[argument]
    columns = []
    for index in np.ndindex(value.shape):
        e = np.zeros(value.shape)
        e[index] = h
        up = marginals(scipys(**{**base, argument: value + e}))
        down = marginals(scipys(**{**base, argument: value - e}))
        columns.append((up - down) / (2 * h))
    return np.stack(columns, -1).reshape(-1, *value.shape)


@pytest.mark.parametrize("argument", ["c", "a_ub", "a_eq", "b_ub"])
@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
def test_the_marginals_derivatives_are_scipys_central_differences(argument, mode):
    expected = _central(argument)
    assert argument == "b_ub" or np.abs(expected).max() > 0.1  # (they move)
    base = dict(c=C, a_ub=A_UB, b_ub=B_UB, a_eq=A_EQ, b_eq=B_EQ)
    transform = jax.jacfwd if mode == "jacfwd" else jax.jacrev

    def of(value):
        return jnp.concatenate([ours(**{**base, argument: value})[p].marginals for p in PARTS])

    with jax.enable_x64(True):
        got = transform(of)(jnp.asarray(base[argument]))
    np.testing.assert_allclose(got, expected, atol=1e-8)


def test_the_marginals_derivatives_at_a_degenerate_vertex_are_refused_by_name():
    # a third constraint through the vertex: x0 + 3 x1 <= 6 holds at (1.5, 1.5, 1) too
    b_ub = np.array([4.0, 6.0])
    assert np.count_nonzero(np.abs(scipys(b_ub=b_ub).slack) < 1e-12) == 2

    def of(c):
        return ours(c, b_ub=b_ub).ineqlin.marginals

    with jax.enable_x64(True):
        # (under jit(grad) too, where XLA drops a forward call whose value is unused)
        refused_under_jit = jax.jit(jax.grad(lambda c: jnp.sum(of(c))))
        for transform in (jax.jacfwd, jax.jacrev, lambda f: refused_under_jit):
            with pytest.raises(
                Exception, match="LinprogMarginals.*degenerate|LinprogMarginals.*x has no"
            ):
                transform(of)(jnp.asarray(C))


def test_milp_and_lsq_linear_and_isotonic_regression_results_are_scipys():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(6, 3)), rng.normal(size=6)
    y = rng.normal(size=7)
    milp_args = dict(integrality=1, bounds=(0, 2.5), constraints=([[1, 1]], 0, 3))
    with jax.enable_x64(True):
        milp = optimize.milp(-np.array([1.0, 2.0]), **milp_args)
        lsq = optimize.lsq_linear(a, b, (-0.2, 0.3))
        iso = optimize.isotonic_regression(y)
    expected = scipy.optimize.milp(-np.array([1.0, 2.0]), **milp_args)
    np.testing.assert_array_equal(milp.x, expected.x)
    assert float(milp.fun) == expected.fun and bool(milp.success)
    expected = scipy.optimize.lsq_linear(a, b, (-0.2, 0.3))
    np.testing.assert_allclose(lsq.x, expected.x, atol=1e-9)
    assert float(lsq.cost) == pytest.approx(expected.cost, rel=1e-9)
    np.testing.assert_allclose(lsq.fun, expected.fun, atol=1e-9)
    assert bool(lsq.success)
    np.testing.assert_allclose(iso.x, scipy.optimize.isotonic_regression(y).x, rtol=1e-15)
    with pytest.raises(AttributeError, match="OptimizeResult has no 'blocks'"):
        iso.blocks  # noqa: B018 (SciPy's blocks have no fixed shape)


def test_lsq_linears_residuals_are_differentiable_in_b():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(6, 3)), rng.normal(size=6)
    with jax.enable_x64(True):
        got = jax.jacfwd(lambda b: optimize.lsq_linear(a, b).fun)(jnp.asarray(b))
    # unbounded: A x - b = (A A⁺ - I) b
    np.testing.assert_allclose(got, a @ np.linalg.pinv(a) - np.eye(6), atol=1e-10)
