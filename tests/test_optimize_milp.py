"""``Milp``: SciPy's values; the value's derivative in ``c`` (the solution held fixed)
against central differences of ``scipy.optimize.milp`` and its closed form ``x``; the other
arguments refused; failures named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxbridge import host_errors
from jaxbridge.adapters.optimize import Milp, OptimizeError
from jaxbridge.testing import check_adapter

# a knapsack with a continuous filler: max 5 x0 + 4 x1 + 3 x2 + 1.5 y over integers x in
# [0, 3] and y in [0, 2], with 2 x0 + 3 x1 + x2 + y <= 9.5 and x0 - x1 <= 1.5
C = np.array([-5.0, -4.0, -3.0, -1.5])
INTEGRALITY = np.array([1, 1, 1, 0])
A = np.array([[2.0, 3.0, 1.0, 1.0], [1.0, -1.0, 0.0, 0.0]])
B_L, B_U = np.full(2, -np.inf), np.array([9.5, 1.5])
LOWER, UPPER = np.zeros(4), np.array([3.0, 3.0, 3.0, 2.0])
ARGS = (C, INTEGRALITY, A, B_L, B_U, LOWER, UPPER)


def scipy_milp(c, integrality=INTEGRALITY, a=A, b_l=B_L, b_u=B_U, lower=LOWER, upper=UPPER):
    return scipy.optimize.milp(
        c,
        integrality=integrality,
        bounds=scipy.optimize.Bounds(lower, upper),
        constraints=scipy.optimize.LinearConstraint(a, b_l, b_u),
    )


def test_values_are_scipys():
    with jax.enable_x64(True):
        x, fun = Milp()(*ARGS)
    expected = scipy_milp(C)
    np.testing.assert_array_equal(x, expected.x)
    assert float(fun) == expected.fun
    # (the relaxation's optimum is fractional: the integers matter)
    relaxed = scipy_milp(C, integrality=np.zeros(4))
    assert relaxed.fun < expected.fun - 0.1


def test_defaults_are_scipys_continuous_unconstrained_nonnegative():
    c = np.array([1.0, 2.0])
    with jax.enable_x64(True):
        x, fun = Milp()(c)
    expected = scipy.optimize.milp(c)
    np.testing.assert_array_equal(x, expected.x)
    assert float(fun) == expected.fun


def test_the_values_gradient_in_c_is_x_and_central_differences_of_scipy():
    with jax.enable_x64(True):
        grad = jax.grad(lambda c: Milp()(c, *ARGS[1:])[1])(jnp.asarray(C))
        jac = jax.jacfwd(lambda c: Milp()(c, *ARGS[1:]))(jnp.asarray(C))
        hessian = jax.hessian(lambda c: Milp()(c, *ARGS[1:])[1])(jnp.asarray(C))
    x = scipy_milp(C).x
    expected = np.array(
        [(scipy_milp(C + h).fun - scipy_milp(C - h).fun) / 2e-6 for h in 1e-6 * np.eye(4)]
    )
    np.testing.assert_allclose(grad, expected, rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(grad, x)
    np.testing.assert_array_equal(jac[1], x)
    np.testing.assert_array_equal(jac[0], np.zeros((4, 4)))  # (x locally constant in c)
    np.testing.assert_array_equal(hessian, np.zeros((4, 4)))


# two optimal solutions: x = (1, 0) and (0, 1) cost 1 (binary x, x0 + x1 >= 1); and the
# same with x continuous (an optimal edge between them)
TIE = (np.array([1, 1], np.int32), np.array([[1.0, 1.0]]), np.array([1.0]), np.array([np.inf]),
       np.zeros(2), np.ones(2))  # fmt: skip


@pytest.mark.parametrize("integrality", [[1, 1], [0, 0], [1, 0]], ids=["integer", "edge", "mixed"])
def test_a_tie_between_optimal_solutions_is_refused(integrality):
    """At a tie the value has a kink in c: its gradient along SciPy's choice of solution was
    returned. It is refused now, by name, under jit(grad) and in forward mode too, and
    NaN on request; moving off the tie, the gradient is the solution again."""
    args = (jnp.asarray(integrality, jnp.int32), *TIE[1:])

    def fun(c, on_failure="raise"):
        return Milp(on_failure=on_failure)(c, *args)[1]

    with jax.enable_x64(True):
        tie = jnp.array([1.0, 1.0])
        with pytest.raises(OptimizeError, match=r"milp's optimum is not unique: x\[0\] is"):
            jax.grad(fun)(tie)
        with pytest.raises(OptimizeError, match=r"optimum is not unique"), host_errors():
            jax.block_until_ready(jax.jit(jax.grad(fun))(tie))
        with pytest.raises(OptimizeError, match=r"optimum is not unique"):
            jax.jvp(fun, (tie,), (tie,))
        assert np.isnan(jax.grad(lambda c: fun(c, "nan"))(tie)).all()
        assert float(fun(tie)) == 1.0  # (the value itself stands)
        np.testing.assert_array_equal(jax.grad(fun)(jnp.array([1.0, 1.25])), [1.0, 0.0])


@pytest.mark.slow
def test_check_adapter_in_c_with_the_rest_held_as_integers():
    args = (C, INTEGRALITY, np.array([[2, 3, 1, 1], [1, -1, 0, 0]]), np.array([-20, -20]))
    args += (np.array([9, 1]), np.zeros(4, int), np.array([3, 3, 3, 2]))
    with jax.enable_x64(True):
        check_adapter(Milp(), *args, seed=0, checks=("specs", "jit", "grad", "vmap", "jvp"))


def test_vmap_over_costs_is_a_loop():
    costs = np.stack([C, C[::-1], 0.5 * C - 1])
    with jax.enable_x64(True):
        xs, funs = jax.jit(jax.vmap(Milp(), (0, *[None] * 6)))(costs, *ARGS[1:])
    for c, x, fun in zip(costs, xs, funs):
        expected = scipy_milp(c)
        np.testing.assert_array_equal(x, expected.x)
        assert float(fun) == expected.fun


@pytest.mark.parametrize("index", [2, 3, 4, 5, 6], ids=["A", "b_l", "b_u", "lower", "upper"])
def test_derivatives_in_the_constraints_are_refused_naming_the_argument(index):
    name = ["A", "b_l", "b_u", "lower", "upper"][index - 2]
    b_l = np.full(2, -20.0)  # (finite: a tangent to move)
    args = [jnp.asarray(a) for a in (C, INTEGRALITY, A, b_l, B_U, LOWER, UPPER)]

    def fun(v):
        return Milp()(*args[:index], v, *args[index + 1 :])[1]

    with jax.enable_x64(True):
        for transform in (jax.grad, jax.jacfwd):
            with pytest.raises(TypeError, match=f"Milp is not differentiable.*'{name}'"):
                transform(fun)(args[index])


def test_infeasible_problems_fail_naming_the_adapter_or_give_nan():
    args = (C, INTEGRALITY, A, np.array([9.6, -np.inf]), B_U, LOWER, UPPER)  # 9.6 <= ... <= 9.5
    with jax.enable_x64(True):
        with host_errors(), pytest.raises(OptimizeError, match="Milp.*no optimum.*status 2"):
            Milp()(*args)
        x, fun = Milp(on_failure="nan")(*args)
    assert np.isnan(x).all() and np.isnan(fun)


def test_a_node_limit_is_a_failure():
    """A knapsack in three dimensions that HiGHS branches on (30 nodes), stopped at one."""
    rng = np.random.default_rng(0)
    a, values = rng.integers(50, 100, (3, 40)).astype(float), rng.integers(50, 100, 40)
    args = (-values.astype(float), np.ones(40, int), a, np.full(3, -np.inf), a.sum(1) / 2)
    args += (np.zeros(40), np.ones(40))
    assert scipy_milp(*args).mip_node_count > 1
    with jax.enable_x64(True), host_errors(), pytest.raises(OptimizeError, match="no optimum"):
        Milp(node_limit=1)(*args)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="Milp.*'node_limit'"):
        Milp(node_limit=-1)
    with pytest.raises(ValueError, match="Milp.*'mip_rel_gap'"):
        Milp(mip_rel_gap="small")
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="Milp.*'integrality'.*0 .continuous"):
            Milp()(C, np.array([1, 4, 0, 0]), *ARGS[2:])
        with pytest.raises(ValueError, match="Milp.*'b_u'.*NaN"):
            Milp()(C, INTEGRALITY, A, B_L, np.array([np.nan, 1.0]), LOWER, UPPER)
        with host_errors(), pytest.raises(OptimizeError, match="Milp.*'c'.*non-finite"):
            Milp()(np.full(4, np.nan), *ARGS[1:])


def test_no_unknowns_is_refused_naming_c():
    """SciPy's message for n = 0 spoke of c's dimensions (#54's search of empty inputs)."""
    with jax.enable_x64(True):
        empty = np.zeros(0)
        args = (empty, np.zeros(0, int), np.zeros((0, 0)), empty, empty, empty, empty)
        for call in (Milp(), jax.jit(Milp())):
            with pytest.raises(ValueError, match="Milp.*'c' has no entries"), host_errors():
                call(*args)
