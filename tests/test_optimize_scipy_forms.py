"""``optimize``'s SciPy call forms (``linprog``, ``nnls``, ``lsq_linear``,
``linear_sum_assignment``, ``isotonic_regression``) give SciPy's answers for SciPy's
arguments, and an argument of SciPy's form given where an adapter takes an array is
refused, never read as something else."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxbridge.adapters import optimize
from jaxbridge.adapters.optimize import Linprog, LsqLinear

C, A_UB, B_UB = np.array([-1.0, -2.0]), np.array([[1.0, 1.0]]), np.array([3.0])


@pytest.mark.parametrize(
    "bounds",
    [None, (0, None), (0, 1), [(0, 1)], [(0, 1), (0, 1)], (None, 1), [(-1, 2), (0.5, None)]],
    ids=["None", "default", "one pair", "a list of one", "a list", "None below", "mixed"],
)
def test_linprog_takes_every_form_of_scipys_bounds(bounds):
    expected = scipy.optimize.linprog(C, A_UB, B_UB, bounds=bounds)
    with jax.enable_x64(True):
        x, fun = optimize.linprog(C, A_UB, B_UB, bounds=bounds)
    np.testing.assert_allclose(x, expected.x, atol=1e-12)
    assert float(fun) == pytest.approx(expected.fun, abs=1e-12)


def test_scipys_positional_bounds_are_refused_by_linprog_the_class_not_read_as_a_batch():
    """``Linprog()(c, A, b, None, None, [(0, 1), (0, 1)])`` read the pairs as a batch of
    lower bounds: x = [[3, 1], [3, 1]], fun = [-5, -5] where SciPy gives [1, 1], -3."""
    with pytest.raises(TypeError, match="Linprog: argument 'lower' looks like SciPy's bounds"):
        Linprog()(C, A_UB, B_UB, None, None, [(0, 1), (0, 1)])
    with pytest.raises(TypeError, match="LsqLinear: argument 'lb' looks like SciPy's bounds"):
        LsqLinear()(np.eye(2), np.ones(2), (np.zeros(2), np.ones(2)))
    with jax.enable_x64(True):
        x, fun = optimize.linprog(C, A_UB, B_UB, None, None, [(0, 1), (0, 1)])
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-12)
    assert float(fun) == pytest.approx(-3.0)


def test_linprog_bounds_as_an_array_are_differentiable_as_highs_marginals():
    expected = scipy.optimize.linprog(C, A_UB, B_UB, bounds=[(0, 1), (0, 1)])
    with jax.enable_x64(True):
        grad = jax.grad(
            lambda u: optimize.linprog(C, A_UB, B_UB, bounds=jnp.stack([jnp.zeros(2), u], 1))[1]
        )(jnp.ones(2))
    np.testing.assert_allclose(grad, expected.upper.marginals, atol=1e-12)


def test_the_other_call_forms_answer_as_scipy():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(6, 3)), rng.normal(size=6)
    cost = rng.normal(size=(3, 4))
    y = rng.normal(size=7)
    with jax.enable_x64(True):
        x, rnorm = optimize.nnls(a, b)
        expected = scipy.optimize.nnls(a, b)
        np.testing.assert_allclose(x, expected[0], atol=1e-12)
        assert float(rnorm) == pytest.approx(expected[1], rel=1e-12)
        x, cost_value = optimize.lsq_linear(a, b, (-0.2, 0.3), method="bvls")
        expected = scipy.optimize.lsq_linear(a, b, (-0.2, 0.3), method="bvls")
        np.testing.assert_allclose(x, expected.x, atol=1e-10)
        assert float(cost_value) == pytest.approx(expected.cost, rel=1e-10)
        for maximize in (False, True):
            rows, cols = optimize.linear_sum_assignment(cost, maximize=maximize)
            expected = scipy.optimize.linear_sum_assignment(cost, maximize=maximize)
            np.testing.assert_array_equal(rows, expected[0])
            np.testing.assert_array_equal(cols, expected[1])
        for increasing in (True, False):
            fit = optimize.isotonic_regression(y, increasing=increasing)
            expected = scipy.optimize.isotonic_regression(y, increasing=increasing).x
            np.testing.assert_allclose(fit, expected, atol=1e-14)
    with pytest.raises(ValueError, match="lsq_linear: argument 'bounds' must be SciPy's"):
        optimize.lsq_linear(a, b, [(-1, 1)] * 3)
    with pytest.raises(ValueError, match="linprog: argument 'bounds' must be a"):
        optimize.linprog(C, A_UB, B_UB, bounds=[(0, 1)] * 3)
