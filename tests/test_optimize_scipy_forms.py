"""``optimize``'s SciPy call forms (``linprog``, ``nnls``, ``lsq_linear``,
``linear_sum_assignment``, ``isotonic_regression``) give SciPy's answers for SciPy's
arguments, and an argument of SciPy's form given where an adapter takes an array is
refused, never read as something else."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
import scipy.sparse

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
        res = optimize.linprog(C, A_UB, B_UB, bounds=bounds)
        x, fun = res.x, res.fun
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
        res = optimize.linprog(C, A_UB, B_UB, None, None, [(0, 1), (0, 1)])
        x, fun = res.x, res.fun
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-12)
    assert float(fun) == pytest.approx(-3.0)


def test_linprog_bounds_as_an_array_are_differentiable_as_highs_marginals():
    expected = scipy.optimize.linprog(C, A_UB, B_UB, bounds=[(0, 1), (0, 1)])
    with jax.enable_x64(True):
        grad = jax.grad(
            lambda u: optimize.linprog(C, A_UB, B_UB, bounds=jnp.stack([jnp.zeros(2), u], 1)).fun
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
        res = optimize.lsq_linear(a, b, (-0.2, 0.3), method="bvls")
        x, cost_value = res.x, res.cost
        expected = scipy.optimize.lsq_linear(a, b, (-0.2, 0.3), method="bvls")
        np.testing.assert_allclose(x, expected.x, atol=1e-10)
        assert float(cost_value) == pytest.approx(expected.cost, rel=1e-10)
        for maximize in (False, True):
            rows, cols = optimize.linear_sum_assignment(cost, maximize=maximize)
            expected = scipy.optimize.linear_sum_assignment(cost, maximize=maximize)
            np.testing.assert_array_equal(rows, expected[0])
            np.testing.assert_array_equal(cols, expected[1])
        for increasing in (True, False):
            fit = optimize.isotonic_regression(y, increasing=increasing).x
            expected = scipy.optimize.isotonic_regression(y, increasing=increasing).x
            np.testing.assert_allclose(fit, expected, atol=1e-14)
    with pytest.raises(ValueError, match="lsq_linear: argument 'bounds' must be SciPy's"):
        optimize.lsq_linear(a, b, [(-1, 1)] * 3)
    with pytest.raises(ValueError, match="linprog: argument 'bounds' must be a"):
        optimize.linprog(C, A_UB, B_UB, bounds=[(0, 1)] * 3)


# milp: the knapsack of test_optimize_milp.py (integers x0..x2 in [0, 3], a continuous y in
# [0, 2]; 2 x0 + 3 x1 + x2 + y <= 9.5 and x0 - x1 <= 1.5), in each of SciPy's forms
MILP_C = np.array([-5.0, -4.0, -3.0, -1.5])
MILP_A = np.array([[2.0, 3.0, 1.0, 1.0], [1.0, -1.0, 0.0, 0.0]])
MILP_UPPER = np.array([3.0, 3.0, 3.0, 2.0])
LC = scipy.optimize.LinearConstraint
MILP_FORMS = {
    "LinearConstraint": dict(constraints=LC(MILP_A, -np.inf, [9.5, 1.5])),
    "a list of them": dict(
        constraints=[LC(MILP_A[:1], ub=9.5), LC(MILP_A[1], -np.inf, 1.5)],
    ),
    "a tuple": dict(constraints=(MILP_A, -np.inf, np.array([9.5, 1.5]))),
    "a list of tuples": dict(constraints=[(MILP_A[:1], -np.inf, 9.5), (MILP_A[1:], -np.inf, 1.5)]),
    "mixed, sparse": dict(
        constraints=[LC(scipy.sparse.csr_array(MILP_A[:1]), ub=9.5), (MILP_A[1:], -np.inf, 1.5)]
    ),
    "Bounds": dict(bounds=scipy.optimize.Bounds(0, MILP_UPPER)),
    "a pair of bounds": dict(bounds=(0, MILP_UPPER)),
    "a pair of lists": dict(bounds=([0, 0, 0, 0], list(MILP_UPPER))),
    "options": dict(options={"mip_rel_gap": 0.5, "node_limit": 100, "disp": False}),
}


@pytest.mark.parametrize("form", list(MILP_FORMS))
def test_milp_takes_scipys_argument_forms(form):
    given = {
        "integrality": [1, 1, 1, 0],
        "bounds": scipy.optimize.Bounds(0, MILP_UPPER),
        "constraints": LC(MILP_A, -np.inf, [9.5, 1.5]),
        **MILP_FORMS[form],
    }
    expected = scipy.optimize.milp(MILP_C, **given)
    with jax.enable_x64(True):
        res = optimize.milp(MILP_C, **given)
        x, fun = res.x, res.fun
    np.testing.assert_array_equal(x, expected.x)
    assert float(fun) == expected.fun
    relaxed = scipy.optimize.milp(MILP_C, **{**given, "integrality": 0})
    assert relaxed.fun < expected.fun - 0.1  # (the integers matter)


def test_milp_defaults_and_a_scalar_integrality_are_scipys():
    c = np.array([1.0, 2.0])
    with jax.enable_x64(True):
        res = optimize.milp(c)
        x, fun = res.x, res.fun
        res = optimize.milp(-c, integrality=1, bounds=(0, 2.5), constraints=([1, 1], 0, 3))
        x1, fun1 = res.x, res.fun
    expected = scipy.optimize.milp(c)
    np.testing.assert_array_equal(x, expected.x)
    assert float(fun) == expected.fun
    expected = scipy.optimize.milp(-c, integrality=1, bounds=(0, 2.5), constraints=([1, 1], 0, 3))
    np.testing.assert_array_equal(x1, expected.x)
    assert float(fun1) == expected.fun


def test_milps_value_gradient_in_c_is_scipys_central_differences():
    given = dict(
        integrality=[1, 1, 1, 0], bounds=(0, MILP_UPPER), constraints=(MILP_A, -np.inf, [9.5, 1.5])
    )
    with jax.enable_x64(True):
        grad = jax.grad(lambda c: optimize.milp(c, **given).fun)(jnp.asarray(MILP_C))
    h = 1e-6
    expected = [
        (
            scipy.optimize.milp(MILP_C + h * e, **given).fun
            - scipy.optimize.milp(MILP_C - h * e, **given).fun
        )
        / (2 * h)
        for e in np.eye(4)
    ]
    np.testing.assert_allclose(grad, expected, rtol=1e-8)
    np.testing.assert_allclose(grad, scipy.optimize.milp(MILP_C, **given).x, rtol=1e-12)


def test_milp_refuses_what_it_does_not_take_and_says_where_it_goes():
    with pytest.raises(TypeError, match=r"milp: argument 'time_limit' .* options=\{'time_limit'"):
        optimize.milp(MILP_C, time_limit=1.0)
    with pytest.raises(ValueError, match=r"milp: options \['dual_feasibility_tolerance'\]"):
        optimize.milp(MILP_C, options={"dual_feasibility_tolerance": 1e-9})
    with pytest.raises(TypeError, match=r"milp: argument \"options\['disp'\]\""):
        optimize.milp(MILP_C, options={"disp": True})
    with pytest.raises(ValueError, match="milp: argument 'bounds' must be a"):
        optimize.milp(MILP_C, bounds=[(0, 1)] * 4)
    with pytest.raises(ValueError, match="milp: argument 'constraints' must be"):
        optimize.milp(MILP_C, constraints=[MILP_A])
    with pytest.raises(ValueError, match=r"milp: argument 'constraints' has a matrix A of shape"):
        optimize.milp(MILP_C, constraints=(MILP_A[:, :3], 0, 1))


def test_the_functions_take_their_classes_parameters():
    """Every parameter of the class is a keyword of the function (``on_failure`` too), and
    SciPy's arguments the function does not take are refused, naming where they go."""
    infeasible = (np.ones(2), np.ones((1, 2)), np.array([-1.0]))  # x >= 0, x0 + x1 <= -1
    with jax.enable_x64(True):
        res = optimize.linprog(*infeasible, on_failure="nan")
        assert np.isnan(res.x).all() and np.isnan(res.fun) and not res.success
        res = optimize.milp(
            infeasible[0], constraints=(infeasible[1], -np.inf, infeasible[2]), on_failure="nan"
        )
        assert np.isnan(res.x).all() and np.isnan(res.fun) and not res.success
        a, b = np.eye(2), np.ones(2)
        np.testing.assert_allclose(optimize.nnls(a, b, maxiter=5, on_failure="nan")[0], b)
        res = optimize.lsq_linear(a, b, (0, 0.5), "bvls", 1e-12, max_iter=50, on_failure="nan")
        np.testing.assert_allclose(res.x, [0.5, 0.5])
        res = optimize.lsq_linear(a, b, lsq_solver="exact", verbose=0)
        np.testing.assert_allclose(res.x, b)
    for call, message in [
        (lambda: optimize.linprog(C, options={"disp": True}), "linprog: argument .options.'disp'"),
        (lambda: optimize.linprog(C, x0=np.zeros(2)), "linprog: argument 'x0'"),
        (lambda: optimize.linprog(C, A_UB, B_UB, integrality=[1, 0]), "linprog.*milp"),
        (lambda: optimize.linprog(C, callback=print), "linprog: argument 'callback'"),
        (lambda: optimize.lsq_linear(np.eye(2), b, lsq_solver="lsmr"), "'lsq_solver'"),
        (lambda: optimize.lsq_linear(np.eye(2), b, verbose=2), "lsq_linear: argument 'verbose'"),
    ]:
        with pytest.raises(TypeError, match=message):
            call()


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.linprog([-1, -2], A_ub=[[1, 1]], b_ub=[4], bounds=(-1, 2.5)),
        lambda m: m.linprog(np.array([-1, -2]), A_ub=np.array([[1, 1]]), b_ub=np.array([4])),
        lambda m: m.lsq_linear(np.array([[1, 0], [0, 1], [1, 1]]), np.array([1, 2, 3]), (0, 1.5)),
        lambda m: m.lsq_linear(np.array([[1, 0], [0, 1], [1, 1]]), np.array([1, 2, 3])),
        lambda m: m.lsq_linear([[1, 0], [0, 1], [1, 1]], [1, 2, 3], (0, 1.5), method="bvls"),
        lambda m: m.milp(np.array([-1, -2]), integrality=1, bounds=scipy.optimize.Bounds(0, 2.5)),
    ],
    ids=[
        "linprog bounds",
        "linprog default",
        "lsq_linear trf",
        "lsq_linear default",
        "bvls lists",
        "milp",
    ],
)
def test_integer_arrays_are_solved_in_floating_point_as_scipy_solves_them(call):
    """Integer costs cast the bounds to their integer type (2.5 read as 2; an infinite
    bound overflowed), and Python lists of integers were refused."""
    expected = call(scipy.optimize)
    with jax.enable_x64(True):
        got = call(optimize)
    np.testing.assert_allclose(got.x, expected.x, atol=1e-9)
    value = "cost" if "cost" in expected else "fun"  # (lsq_linear's fun is its residuals)
    assert float(got[value]) == pytest.approx(expected[value], abs=1e-9)


def test_linprog_takes_scipys_highs_options():
    options = {"presolve": False, "dual_feasibility_tolerance": 1e-10, "maxiter": 50}
    options |= {"simplex_dual_edge_weight_strategy": "dantzig", "disp": False}
    expected = scipy.optimize.linprog(C, A_UB, B_UB, method="highs-ds", options=options)
    with jax.enable_x64(True):
        got = optimize.linprog(C, A_UB, B_UB, method="highs-ds", options=options)
        np.testing.assert_allclose(got.x, expected.x, atol=1e-12)
        # an iteration limit reached is SciPy's status 1, raised by name (NaN on request)
        limited = {"maxiter": 1, "presolve": False}
        assert scipy.optimize.linprog(C, A_UB, B_UB, options=limited).status == 1
        with pytest.raises(Exception, match="status 1: Iteration limit reached"):
            optimize.linprog(C, A_UB, B_UB, options=limited)
        assert not optimize.linprog(C, A_UB, B_UB, options=limited, on_failure="nan").success
        with pytest.raises(ValueError, match=r"linprog: options \['tol'\] are not taken"):
            optimize.linprog(C, A_UB, B_UB, options={"tol": 1e-9})
        with pytest.raises(ValueError, match="Linprog: parameter 'maxiter' must be a positive"):
            optimize.linprog(C, A_UB, B_UB, options={"maxiter": 0})


def test_scalar_c_and_right_hand_sides_and_a_bounds_object_are_scipys():
    with jax.enable_x64(True):
        res = optimize.linprog(-1, A_ub=[[1]], b_ub=4)
        x, fun = res.x, res.fun
        x2 = optimize.linprog([-1, -2], A_ub=[[1, 1]], b_ub=4, A_eq=[[1, -1]], b_eq=1).x
        x3 = optimize.lsq_linear(
            np.eye(2), np.ones(2), bounds=scipy.optimize.Bounds([0, 0], [0.5, 0.7])
        ).x
    np.testing.assert_allclose(x, scipy.optimize.linprog(-1, A_ub=[[1]], b_ub=4).x, atol=1e-12)
    assert float(fun) == pytest.approx(-4.0, abs=1e-12)
    want = scipy.optimize.linprog([-1, -2], A_ub=[[1, 1]], b_ub=4, A_eq=[[1, -1]], b_eq=1).x
    np.testing.assert_allclose(x2, want, atol=1e-12)
    bounds = scipy.optimize.Bounds([0, 0], [0.5, 0.7])
    np.testing.assert_allclose(
        x3, scipy.optimize.lsq_linear(np.eye(2), np.ones(2), bounds=bounds).x, atol=1e-12
    )


def test_isotonic_regression_of_integers_is_scipys_floating_fit():
    """Integer y was declared an integer result and refused ('float64, but int64 was
    declared')."""
    y, weights = np.array([3, 1, 2, 5]), np.array([1, 2, 1, 1])
    with jax.enable_x64(True):
        got = optimize.isotonic_regression(y).x
        weighted = optimize.isotonic_regression(list(y), weights=list(weights)).x
    np.testing.assert_allclose(got, scipy.optimize.isotonic_regression(y).x, rtol=1e-15)
    want = scipy.optimize.isotonic_regression(y, weights=weights).x
    np.testing.assert_allclose(weighted, want, rtol=1e-15)
