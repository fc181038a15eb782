"""A solver call whose result is not differentiated: the same answer and the same verdicts
as a differentiated call, without the accurate second derivatives or the parameter
derivatives, except where the rough ones leave a check in doubt."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _optimize_problems import (
    Distance,
    Growth,
    HalfPlanes,
    InBall,
    Kepler,
    PlainRosenbrock,
    SumToOne,
    TargetDistance,
)

import jaxbridge as jb
import jaxbridge.adapters.optimize._functions as functions
from jaxbridge.adapters.optimize import (
    LeastSquares,
    Minimize,
    MinimizeBounded,
    MinimizeConstrained,
    OptimizeError,
    Root,
)
from jaxbridge.adapters.optimize._differences import ROUGH_STEP
from jaxbridge.adapters.optimize._implicit import MULTIPLIER


@pytest.fixture
def differences(monkeypatch):
    """The ``rough`` flag of every column of second derivatives computed, in order."""
    seen: list[bool] = []
    original = functions.derivative_columns

    def recorded(x, size, base, first, box, rough, firsts=None):
        seen.append(rough)
        return original(x, size, base, first, box, rough, firsts)

    monkeypatch.setattr(functions, "derivative_columns", recorded)
    return seen


CASES = [
    (Minimize(PlainRosenbrock()), (np.array([-1.2, 1.0]), np.array([1.1, 5.5]))),
    (Minimize(PlainRosenbrock(), method="BFGS"), (np.array([-1.2, 1.0]), np.array([0.9, 4.0]))),
    (
        MinimizeBounded(PlainRosenbrock()),  # x₀ held at its upper bound 0.8
        (np.array([0.0, 0.0]), np.array([1.0, 5.0]), np.array([-2.0, -2.0]), np.array([0.8, 2.0])),
    ),
    (LeastSquares(Growth()), (np.array([1.0, 1.0]), 2.0 * np.exp(0.8 * np.linspace(0, 1, 4)) + [0.1, -0.05, 0.02, 0.0])),
    (Root(Kepler()), (np.array([1.0]), np.array([0.5, 1.2]))),
    (
        MinimizeConstrained(TargetDistance(), ineq=InBall()),
        (np.array([0.1, 0.2]), np.array([2.0, 1.0, 1.5])),
    ),
    (
        MinimizeConstrained(Distance(), ineq=HalfPlanes()),  # one active, one slack
        (np.array([0.0, 0.0]), np.array([1.2, 0.9])),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    "solver, args", CASES, ids=[type(s).__name__ + "-" + s.method for s, _ in CASES]
)
def test_the_same_answer_without_accurate_derivatives(solver, args, differences):
    x, jz, jq, _ = solver.forward(*args)
    accurate = list(differences)
    differences.clear()
    value = solver.forward(*args, residuals=False)
    np.testing.assert_array_equal(value, x)  # to the bit
    assert isinstance(value, np.ndarray) and value.shape == x.shape
    assert all(differences), "a value-only call took accurate second derivatives"
    if not isinstance(solver, Root):  # (a root's Jacobian is exact: no differences at all)
        assert not all(accurate), "the differentiated call must take accurate ones"


@pytest.mark.parametrize("solver, args", CASES[:1] + CASES[3:5], ids=["minimize", "lsq", "root"])
def test_under_jit_the_value_alone_takes_the_value_only_path(solver, args, differences):
    with jax.enable_x64(True):
        jargs = tuple(jnp.asarray(a) for a in args)
        value = jax.jit(solver)(*jargs)
        assert all(differences)
        differences.clear()
        primal, _ = jax.jit(jax.value_and_grad(lambda *a: solver(*a).sum(), 1))(*jargs)
        if not isinstance(solver, Root):
            assert not all(differences)
        assert jnp.sum(value) == primal  # the same x: summed in the same order


class Quadratic(jb.Adapter):
    """``Σ dᵢ (xᵢ - θᵢ)²`` with fixed curvatures ``d``: a Hessian as well or as badly
    conditioned as asked."""

    signature = "(n),(p)->()"
    curvatures = (1.0, 1.0)

    def forward(self, x, theta):
        return float(np.sum(np.asarray(self.curvatures) * (x - theta) ** 2))

    def backward(self, res, g):
        x, theta, _ = res
        d = 2 * np.asarray(self.curvatures) * (x - theta)
        return g * d, -g * d


@pytest.mark.parametrize(
    "curvatures, fails",
    [
        ((1.0, 1e-9), None),  # between the thresholds: the accurate Hessian decides (passes)
        ((1.0, 1e-14), "singular"),  # below both: fails in either call
        ((1.0, -1.0), "not a strict local minimum|singular"),  # a saddle (SciPy's point)
    ],
)
def test_a_check_in_doubt_is_decided_by_the_accurate_hessian(curvatures, fails, differences):
    objective = type("Q", (Quadratic,), {"curvatures": curvatures})()
    solver = Minimize(objective)
    args = (np.array([0.0, 0.0]), np.array([0.5, 0.0]))
    if fails is None:
        x = solver.forward(*args)[0]
        differences.clear()
        np.testing.assert_array_equal(solver.forward(*args, residuals=False), x)
        assert differences and not all(differences)  # the accurate one was computed
        return
    with pytest.raises(OptimizeError, match=fails) as full:
        solver.forward(*args)
    with pytest.raises(OptimizeError) as value_only:
        solver.forward(*args, residuals=False)
    assert str(value_only.value) == str(full.value)


def test_near_a_bound_the_rough_hessian_steps_into_the_box(differences):
    """A free variable 1e-7 inside a bound: its rough column is differenced away from the
    bound, with the same one-sided step as anywhere (no point leaves the box), so the rough
    Hessian decides there too, and the answer is the differentiated call's."""
    seen = []

    class PlainDistance(Distance):
        hessian = None

        def backward(self, res, g):
            seen.append(np.array(res[0]))
            return super().backward(res, g)

    solver = MinimizeBounded(PlainDistance())
    args = (np.zeros(2), np.array([0.3, 1.0 - 1e-7]), -np.ones(2), np.ones(2))
    x = solver.forward(*args)[0]
    assert 1.0 - x[1] == pytest.approx(1e-7, rel=1e-6)  # free, 1e-7 inside
    differences.clear()
    seen.clear()
    np.testing.assert_array_equal(solver.forward(*args, residuals=False), x)
    assert differences and all(differences)  # the rough Hessian decided
    points = np.concatenate([p.reshape(-1, 2) for p in seen])
    assert np.all(points <= 1.0) and np.all(points >= -1.0)


def test_a_free_variable_always_has_room_for_the_rough_step():
    """A free variable nearer a bound than ``MULTIPLIER (1 + |x|)`` is degenerate (it fails),
    so every free one has at least a rough step's room on one side: the rough Hessian needs
    no shortened step, and no exception at bounds, while this holds."""
    assert ROUGH_STEP <= MULTIPLIER
    solver = MinimizeBounded(type("PlainDistance", (Distance,), {"hessian": None})())
    args = (np.zeros(2), np.array([0.3, 1.0 - 1e-9]), -np.ones(2), np.ones(2))
    with pytest.raises(OptimizeError, match="degenerate"):
        solver.forward(*args, residuals=False)


def test_the_chord_matrix_serves_the_checks_only_where_z_barely_moved(differences):
    """One rough Hessian (the refinement's) where SciPy's answer was already refined to
    rounding, a second one at the refined point where the refinement moved it."""
    args = (np.array([-1.2, 1.0]), np.array([1.1, 5.5]))
    Minimize(PlainRosenbrock(), options=(("gtol", 1e-13),)).forward(*args, residuals=False)
    assert differences == [True]
    differences.clear()
    loose = Minimize(PlainRosenbrock(), options=(("gtol", 1e-6), ("ftol", 1e-10)))
    loose.forward(*args, residuals=False)
    assert differences == [True, True]


def test_a_constrained_minimum_in_doubt_is_decided_by_the_accurate_hessian(differences):
    """The Hessian of the Lagrangian on the constraint's null space, relative 2e-9: between
    the thresholds, so the accurate one decides (and passes), as in a differentiated call."""
    objective = type("Q", (Quadratic,), {"curvatures": (1e-9, 1e-9)})()
    solver = MinimizeConstrained(objective, eq=SumToOne())
    args = (np.array([0.5, 0.5]), np.array([0.8, 0.6]))
    x = solver.forward(*args)[0]
    np.testing.assert_allclose(x, [0.6, 0.4], rtol=1e-9)
    differences.clear()
    np.testing.assert_array_equal(solver.forward(*args, residuals=False), x)
    assert differences and not all(differences)
