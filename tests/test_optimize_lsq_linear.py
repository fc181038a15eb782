"""``LsqLinear``: SciPy's values; derivatives on the active set against central differences
of ``scipy.optimize.lsq_linear`` and a closed form; degenerate solutions refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxbridge import host_errors
from jaxbridge.adapters.optimize import LsqLinear, OptimizeError
from jaxbridge.testing import check_adapter

RNG = np.random.default_rng(2)
A = RNG.normal(size=(8, 5))
B = 3 * RNG.normal(size=8)
LB, UB = np.full(5, -0.4), np.full(5, 0.5)
ARGS = (A, B, LB, UB)


def scipy_fit(a, b, lb, ub, method="bvls"):
    return scipy.optimize.lsq_linear(a, b, (lb, ub), method=method, tol=1e-14)


def central(fun, args, index, h=1e-6):
    base = np.asarray(args[index], np.float64)
    columns = []
    for i in np.ndindex(base.shape):
        step = np.zeros_like(base)
        step[i] = h
        up, down = list(args), list(args)
        up[index], down[index] = base + step, base - step
        columns.append((np.asarray(fun(*up)) - np.asarray(fun(*down))) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(fun(*args)) + base.shape)


@pytest.mark.parametrize("method", ["trf", "bvls"])
def test_values_are_scipys_with_both_bounds_active(method):
    with jax.enable_x64(True):
        x, cost = LsqLinear(method=method)(*ARGS)
    expected = scipy.optimize.lsq_linear(A, B, (LB, UB), method=method)
    np.testing.assert_array_equal(x, expected.x)
    assert float(cost) == expected.cost
    assert set(expected.active_mask) == {-1, 0, 1}  # (an active set to test)


def test_unbounded_by_default_is_least_squares():
    with jax.enable_x64(True):
        x, cost = LsqLinear()(A, B)
    expected = np.linalg.lstsq(A, B, rcond=None)[0]
    np.testing.assert_allclose(x, expected, rtol=1e-12)
    np.testing.assert_allclose(cost, 0.5 * np.sum((A @ expected - B) ** 2), rtol=1e-14)


@pytest.mark.parametrize("output", [0, 1], ids=["x", "cost"])
def test_derivatives_match_central_differences_of_scipy(output):
    adapter = LsqLinear()  # (trf: the rules use the active set's exact solution)
    every = (0, 1, 2, 3)
    with jax.enable_x64(True):
        reverse = jax.jacrev(lambda *a: adapter(*a)[output], argnums=every)(*ARGS)
        forward = jax.jacfwd(lambda *a: adapter(*a)[output], argnums=every)(*ARGS)
    for index in every:  # A, b, lb, ub
        fun = lambda *a: getattr(scipy_fit(*a), ["x", "cost"][output])  # noqa: E731
        expected = central(fun, ARGS, index)
        np.testing.assert_allclose(reverse[index], expected, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(forward[index], reverse[index], rtol=1e-12, atol=1e-14)
        assert np.abs(expected).max() > 0.1


def test_closed_form_of_a_diagonal_problem():
    """``A = I``: ``x = clip(b, lb, ub)``; ``∂x/∂b`` is 1 on the free entries, ``∂x/∂ub``
    1 on the clipped ones; ``cost = ½ Σ (b - x)²``, its gradient in ``b`` is ``b - x``."""
    b, lb, ub = np.array([2.0, 0.3, -3.0]), np.full(3, -1.0), np.full(3, 1.0)
    with jax.enable_x64(True):
        x, cost = LsqLinear()(np.eye(3), b, lb, ub)
        dx_db, dx_dub = jax.jacrev(lambda b, u: LsqLinear()(np.eye(3), b, lb, u)[0], (0, 1))(
            jnp.asarray(b), jnp.asarray(ub)
        )
        dcost = jax.grad(lambda b: LsqLinear()(np.eye(3), b, lb, ub)[1])(jnp.asarray(b))
    np.testing.assert_allclose(x, [1.0, 0.3, -1.0], atol=1e-9)
    np.testing.assert_allclose(cost, 0.5 * (1.0 + 4.0), rtol=1e-9)
    np.testing.assert_array_equal(dx_db, np.diag([0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(dx_dub, np.diag([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(dcost, [1.0, 0.0, -2.0], atol=1e-15)


def test_float32_inputs_are_solved_in_float64():
    """(SciPy's trf refuses float32 arrays.)"""
    x, cost = LsqLinear()(*(v.astype(np.float32) for v in ARGS))
    assert x.dtype == cost.dtype == np.float32
    np.testing.assert_allclose(x, scipy_fit(*ARGS).x, rtol=1e-6, atol=1e-6)


def test_check_adapter_and_vmap():
    bs = np.stack([B, B + 0.1, 0.9 * B])
    with jax.enable_x64(True):
        check_adapter(
            LsqLinear(method="bvls"),
            *ARGS,
            seed=0,
            checks=("specs", "jit", "grad", "jvp", "transpose"),
        )
        xs, _ = jax.jit(jax.vmap(LsqLinear(), (None, 0, None, None)))(A, bs, LB, UB)
    for x, b in zip(xs, bs):
        np.testing.assert_array_equal(x, scipy.optimize.lsq_linear(A, b, (LB, UB)).x)


def test_a_degenerate_solution_has_no_derivative_and_says_so():
    """``A = I``, ``b = (1, 0.3, 0)`` with ``ub = 1``: the first entry is at its bound with a
    zero multiplier."""
    b, lb, ub = np.array([1.0, 0.3, 0.0]), np.full(3, -1.0), np.full(3, 1.0)
    fit = LsqLinear(method="bvls")
    with jax.enable_x64(True):
        with (
            host_errors(),
            pytest.raises(OptimizeError, match="LsqLinear.*degenerate.*zero multiplier"),
        ):
            jax.jacrev(lambda b: fit(np.eye(3), b, lb, ub)[0])(jnp.asarray(b))
        nan = jax.jacrev(lambda b: LsqLinear("bvls", on_failure="nan")(np.eye(3), b, lb, ub)[0])(
            jnp.asarray(b)
        )
    assert np.isnan(nan).all()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="LsqLinear.*'tol'"):
        LsqLinear(tol=0.0)
    with pytest.raises(ValueError, match="LsqLinear.*'method'"):
        LsqLinear(method="lsmr")
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="LsqLinear.*'lb'.*below 'ub'"):
            LsqLinear()(A, B, UB, LB)
        # equal bounds: SciPy refused them in its own words (#54's search), eager and jitted
        lb, ub = np.array([0.0, 1.0]), np.array([0.0, 2.0])
        with pytest.raises(ValueError, match="LsqLinear.*'lb' must be below 'ub'"):
            LsqLinear()(np.eye(2), np.ones(2), lb, ub)
        with pytest.raises(ValueError, match="LsqLinear.*'lb' must be below 'ub'"), host_errors():
            jax.jit(LsqLinear())(np.eye(2), np.ones(2), lb, ub)
        with host_errors(), pytest.raises(OptimizeError, match="LsqLinear.*'A'.*non-finite"):
            LsqLinear()(np.full((3, 2), np.nan), np.ones(3))


@pytest.mark.parametrize("method", ["trf", "bvls"])
def test_an_entry_at_the_upper_end_of_a_box_narrower_than_the_tolerance(method):
    """x2 at ub = 5e-8 is within the tolerance of lb = 0 too: it was read as at lb, and its
    multiplier's sign refused it ("zero multiplier"). cost = ½ (1 - ub)² there, so d cost
    / d ub = -(1 - ub)."""
    with jax.enable_x64(True):
        a, b = jnp.eye(2), jnp.array([1.0, 1.0])
        lb, ub = jnp.zeros(2), jnp.array([jnp.inf, 5e-8])
        grad = jax.grad(lambda u: LsqLinear(method=method)(a, b, lb, u)[1])(ub)
    np.testing.assert_allclose(grad, [0.0, -(1 - 5e-8)], rtol=1e-7)


def test_trf_stopping_a_few_1e_9_inside_an_active_bound_is_at_it():
    """trf stops within its tolerance of a bound, not on it: here x[3] = -0.1 + 4.5e-9 (SciPy's
    own active_mask says free). The at-bound tolerance must read it as at its bound: the
    gradient is then bvls's (which lands on the bound exactly) by central differences."""
    rng = np.random.default_rng(125)
    a, b = rng.normal(size=(8, 4)), rng.normal(size=8)
    lb, ub = -0.1 * np.ones(4), 0.1 * np.ones(4)
    trf = scipy.optimize.lsq_linear(a, b, bounds=(lb, ub), method="trf", tol=1e-10)
    assert 1e-9 < trf.x[3] - lb[3] < 1e-8  # (the case this test is for)

    def cost(b):
        return scipy.optimize.lsq_linear(a, b, bounds=(lb, ub), method="bvls").cost

    h = 1e-6
    expected = [(cost(b + h * e) - cost(b - h * e)) / (2 * h) for e in np.eye(8)]
    with jax.enable_x64(True):
        grad = jax.grad(lambda b: LsqLinear(method="trf")(a, b, lb, ub)[1])(jnp.asarray(b))
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-9)


def test_a_multiplier_is_judged_against_its_own_terms_not_the_whole_residual():
    """bvls, x1 at its lower bound 0 held by a multiplier of 1e-3 while the residual is 1e7
    in a row column 1 does not touch: ‖A_1‖ ‖r‖ read it as zero and refused a clean point
    (#54's search). SciPy's differences: x follows b[0] alone."""
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    b = np.array([1.0, -1e-3, 1e7])
    lb, ub = np.zeros(2), np.full(2, np.inf)
    with jax.enable_x64(True):
        reverse = jax.jacrev(lambda b: LsqLinear(method="bvls")(a, b, lb, ub)[0])(b)
    expected = central(lambda b: scipy_fit(a, b, lb, ub).x, (b,), 0, h=1e-5)
    np.testing.assert_allclose(expected, [[1, 0, 0], [0, 0, 0]], atol=1e-9)
    np.testing.assert_allclose(reverse, expected, atol=1e-9)


def test_trf_stopping_far_inside_a_bound_beside_a_large_residual():
    """The same problem with x1 >= 0 alone: trf stops on the cost's relative change with x1 =
    0.0498, not at its bound 0 (beside a cost of 5e13 the difference is within its tol), and
    the free fit of x1, -1e-3, crossed its bound: refused as "no derivative" (#54's search).
    The fit's active set holds x1 at 0: SciPy's differences (of bvls's exact solution) give
    x following b[0] alone."""
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    b = np.array([1.0, -1e-3, 1e7])
    lb, ub = np.array([-np.inf, 0.0]), np.full(2, np.inf)
    assert scipy.optimize.lsq_linear(a, b, (lb, ub), tol=1e-10).x[1] > 0.04  # (the case)
    trf = LsqLinear(method="trf")
    with jax.enable_x64(True):
        reverse = jax.jacrev(lambda b: trf(a, b, lb, ub)[0])(b)
        forward = jax.jacfwd(lambda b: trf(a, b, lb, ub)[0])(b)
        grad = jax.grad(lambda b: trf(a, b, lb, ub)[1])(b)
    expected = central(lambda b: scipy_fit(a, b, lb, ub).x, (b,), 0, h=1e-5)
    np.testing.assert_allclose(expected, [[1, 0, 0], [0, 0, 0]], atol=1e-9)
    np.testing.assert_allclose(reverse, expected, atol=1e-9)
    np.testing.assert_allclose(forward, expected, atol=1e-9)
    # (differences of a cost of 5e13 lose the 1e-3: its gradient in b is the residual b - A x
    # at SciPy's exact solution)
    np.testing.assert_allclose(grad, b - a @ scipy_fit(a, b, lb, ub).x, rtol=1e-12)


@pytest.mark.parametrize("method", ["trf", "bvls"])
def test_a_small_free_entry_beside_a_bound_is_not_read_as_at_it(method):
    """x = [5e-8, 1] over x >= 0 (A = I, b = x): both entries are free, dx/db = I. The
    tightness test added an absolute 1 to |x|, read x0 as at its bound with a zero
    multiplier and refused the derivative as degenerate (#64 item 2)."""
    a, b = np.eye(2), np.array([5e-8, 1.0])
    with jax.enable_x64(True):
        solve = LsqLinear(method=method)
        x = lambda b: solve(a, b, np.zeros(2), np.full(2, np.inf))[0]  # noqa: E731
        np.testing.assert_allclose(x(b), b, rtol=1e-9)
        np.testing.assert_allclose(jax.jacobian(x)(b), np.eye(2), atol=1e-12)
