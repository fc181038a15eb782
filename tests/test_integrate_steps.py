"""``OdeSolve(sensitivity="steps")``: derivatives through the steps the solve took (RK23,
RK45, Radau, BDF). The recorded steps give the outputs (to the bit for the explicit
methods); the backward is the exact derivative of those steps (against differences of the
same steps replayed); the forward mode is its exact transpose; both agree with the closed
form to the tolerance. And the kept solutions never alias XLA's buffers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.sparse
from _integrate_cases import Damped, Robertson, Rotation, VectorizedDecay
from scipy.integrate._ivp.bdf import change_D

from jaxbridge.adapters.integrate import OdeSolve
from jaxbridge.adapters.integrate._bdf import BdfSteps
from jaxbridge.adapters.integrate._ode import Dynamics, solve
from jaxbridge.adapters.integrate._steps import Steps

EXPLICIT = ["RK45", "RK23"]
METHODS = [*EXPLICIT, "Radau", "BDF"]
ARGS = (np.array([0.5, -1.0]), np.array([0.3, -0.2]), np.array([-0.1, 0.4, 1.0, 2.5]))
WEIGHTS = np.random.default_rng(7).normal(size=(4, 2))


def replayed(method, steps, rhs, y0, theta, ts):
    """The outputs of the recorded steps run again from ``y0`` and ``theta``, each step
    its recorded size: SciPy's formulas, written out."""
    cls = getattr(scipy.integrate, method)
    y = np.array(y0, np.float64)
    f = rhs.forward(np.float64(ts[0]), y, theta)
    outputs = [y]
    ends = np.array(steps.t_new)
    s = ts[1:] - ts[0]
    for t_old, h, t_new in zip(steps.t_old, steps.h, steps.t_new):
        K = np.empty((cls.n_stages + 1, len(y)))
        K[0] = f
        for i in range(1, cls.n_stages):
            stage = y + h * (K[:i].T @ cls.A[i, :i])
            K[i] = rhs.forward(ts[0] + (t_old + cls.C[i] * h), stage, theta)
        y_new = y + h * (K[: cls.n_stages].T @ cls.B)
        K[-1] = f = rhs.forward(ts[0] + (t_old + h), y_new, theta)
        for j in np.flatnonzero((s > t_old) & (s <= t_new)):
            powers = np.cumprod(np.full(cls.P.shape[1], (s[j] - t_old) / h))
            outputs.append(h * ((K.T @ cls.P) @ powers) + y)
        y = y_new
    assert len(outputs) == len(ts) and ends[-1] == s[-1]
    return np.array(outputs)


def replayed_bdf(steps, rhs, y0, theta, ts):
    """The outputs of the recorded BDF steps run again from ``y0`` and ``theta``, each step
    its recorded size and order, its corrector solved by Newton's method to rounding:
    SciPy's formulas and its own ``change_D``, written out."""
    coefficients = scipy.integrate.BDF(lambda t, y: y, 0.0, np.zeros(1), 1.0)
    gamma, alpha = coefficients.gamma, coefficients.alpha
    n = len(y0)

    def f(s, y):
        return rhs.forward(np.float64(ts[0] + s), y, theta)

    def jacobian(s, y):
        res = (np.float64(ts[0] + s), y, theta, f(s, y))
        return np.stack([rhs.backward(res, unit)[1] for unit in np.eye(n)])

    D = np.zeros((8, n))
    D[0], D[1] = y0, steps.h0 * f(0.0, y0)
    spacing, outputs, s_out = steps.h0, [np.array(y0, np.float64)], ts[1:] - ts[0]
    for k, (q, h, t_new) in enumerate(zip(steps.order, steps.h, steps.t_new)):
        change_D(D, q, h / spacing)
        predicted = D[: q + 1].sum(axis=0)
        psi, c = D[1 : q + 1].T @ gamma[1 : q + 1] / alpha[q], h / alpha[q]
        d = np.zeros(n)
        for _ in range(50):
            y = predicted + d
            step = np.linalg.solve(c * jacobian(t_new, y) - np.eye(n), c * f(t_new, y) - psi - d)
            d = d - step
            if np.abs(step).max() <= 1e-16 * (1 + np.abs(y).max()):
                break
        D[q + 2] = d - D[q + 1]
        D[q + 1] = d
        for i in reversed(range(q + 1)):
            D[i] += D[i + 1]
        spacing = h
        end, q_end, h_end = D.copy(), steps.order_next[k], steps.h_next[k]
        change_D(end, q_end, h_end / h)  # the polynomial the outputs are read from
        for j in np.flatnonzero((s_out > steps.t_old[k]) & (s_out <= t_new)):
            x = (s_out[j] - (t_new - h_end * np.arange(q_end))) / (h_end * (1 + np.arange(q_end)))
            outputs.append(end[0] + end[1 : q_end + 1].T @ np.cumprod(x))
    assert len(outputs) == len(ts)
    return np.array(outputs)


def replayed_steps(method, steps, rhs, y0, theta, ts):
    if method == "BDF":
        return replayed_bdf(steps, rhs, y0, theta, ts)
    return replayed(method, steps, rhs, y0, theta, ts)


def test_the_recorded_bdf_steps_give_the_outputs():
    """Every order from 1 to 5 is taken. SciPy's Newton iteration stops at its tolerance,
    a fraction of the local error, where the replay's goes on to rounding: the outputs
    agree to 2.4e-9 at rtol 1e-6 (measured)."""
    solver = OdeSolve(Damped(), method="BDF", rtol=1e-6, sensitivity="steps")
    y0, theta, ts = ARGS
    ys, steps = solve(solver, Dynamics(Damped(), theta, 2), y0, ts, dense=True)
    assert isinstance(steps, BdfSteps) and sorted(set(steps.order)) == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(replayed_bdf(steps, Damped(), y0, theta, ts), ys, atol=1e-8)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(jax.jit(solver)(*ARGS), ys)  # a value-only call's


@pytest.mark.parametrize("method", EXPLICIT)
def test_the_recorded_steps_give_the_outputs_to_the_bit(method):
    solver = OdeSolve(Damped(), method=method, rtol=1e-7, sensitivity="steps")
    y0, theta, ts = ARGS
    ys, steps = solve(solver, Dynamics(Damped(), theta, 2), y0, ts, dense=True)
    assert isinstance(steps, Steps) and len(steps.h) > 10
    np.testing.assert_array_equal(replayed(method, steps, Damped(), y0, theta, ts), ys)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(jax.jit(solver)(*ARGS), ys)  # a value-only call's


@pytest.mark.parametrize("method", [*EXPLICIT, "BDF"])
def test_the_gradient_is_the_exact_derivative_of_the_steps_taken(method):
    """Central differences of the replayed steps (sizes held) in every entry of y0 and
    theta: a rule 1e-6 off would show (the differences are good to ~1e-9 here)."""
    solver = OdeSolve(Damped(), method=method, rtol=1e-6, sensitivity="steps")
    y0, theta, ts = ARGS
    _, steps = solve(solver, Dynamics(Damped(), theta, 2), y0, ts, dense=True)

    def loss(y0, theta):
        return float(np.sum(WEIGHTS * replayed_steps(method, steps, Damped(), y0, theta, ts)))

    eps = 1e-6
    expected = []
    for which in (0, 1):
        column = []
        for i in range(2):
            up, down = [np.array(y0), np.array(theta)], [np.array(y0), np.array(theta)]
            up[which][i] += eps
            down[which][i] -= eps
            column.append((loss(*up) - loss(*down)) / (2 * eps))
        expected.append(np.array(column))
    with jax.enable_x64(True):
        got = jax.grad(lambda *a: jnp.sum(WEIGHTS * solver(*a)), (0, 1))(*ARGS)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_forward_and_reverse_modes_are_exact_transposes(method):
    """<g, J t> by the jvp and <Jᵀ g, t> by the backward, along every argument (the output
    times included) at once: equal to rounding (the continuous adjoint's gap at this
    tolerance is ~1e-5)."""
    rng = np.random.default_rng(3)
    g = rng.normal(size=(4, 2))
    tangents = tuple(rng.normal(size=a.shape) for a in ARGS)
    with jax.enable_x64(True):
        solver = OdeSolve(Damped(), method=method, rtol=1e-6, sensitivity="steps")
        _, jt = jax.jvp(solver, ARGS, tangents)
        _, pullback = jax.vjp(solver, *ARGS)
        forward = float(jnp.sum(g * jt))
        reverse = sum(float(jnp.sum(c * t)) for c, t in zip(pullback(jnp.asarray(g)), tangents))
    assert abs(forward - reverse) <= 1e-12 * abs(forward)


@pytest.mark.parametrize("method", METHODS)
def test_derivatives_against_the_closed_form(method):
    """``jacrev`` and ``jacfwd`` of a damped rotation against JAX's derivative of the
    matrix exponential, in y0, theta and every output time."""
    from test_integrate_ode import ROTATION_ARGS, _rotation_reference

    with jax.enable_x64(True):
        solver = OdeSolve(Rotation(), method=method, rtol=1e-10, atol=1e-12, sensitivity="steps")
        expected = jax.jacrev(_rotation_reference, (0, 1, 2))(*ROTATION_ARGS)
        for jacobian in (jax.jacrev, jax.jacfwd):
            got = jax.jit(jacobian(solver, (0, 1, 2)))(*ROTATION_ARGS)
            for a, e in zip(got, expected):
                np.testing.assert_allclose(a, e, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize(
    ("method", "sensitivity"),
    [
        ("RK45", "adjoint"),
        ("DOP853", "adjoint"),
        ("RK45", "steps"),
        ("Radau", "steps"),
        ("BDF", "steps"),
    ],
)
def test_gradients_inside_a_scan_equal_each_call_alone(method, sensitivity):
    """What a differentiated forward keeps for its backward (the steps, or the dense
    output, whose first step holds y0) must not alias its inputs: inside ``lax.scan`` XLA
    reuses their buffers for the next iteration before the backward runs (the gradients
    were 1e-6 to 1e-2 off)."""
    rng = np.random.default_rng(0)
    y0, theta, w = rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), rng.normal(size=(3, 3, 2))
    ts = np.sort(rng.uniform(0, 1, (3, 3)), axis=1)
    with jax.enable_x64(True):
        solver = OdeSolve(Damped(), method=method, rtol=1e-10, sensitivity=sensitivity)

        def loss(y0, theta, ts):
            def body(total, x):
                return total + jnp.sum(x[3] * solver(*x[:3])), None

            return jax.lax.scan(body, 0.0, (y0, theta, ts, w))[0]

        scanned = jax.grad(loss, (0, 1, 2))(y0, theta, ts)
        for i in range(3):
            alone = jax.grad(lambda *a: jnp.sum(w[i] * solver(*a)), (0, 1, 2))(
                y0[i], theta[i], ts[i]
            )
            for a, b in zip(scanned, alone):
                np.testing.assert_array_equal(a[i], b)


class SparseRobertson(Robertson):
    def jacobian(self, t, y, theta):
        return scipy.sparse.csr_array(super().jacobian(t, y, theta))


@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_a_sparse_jacobian_gives_the_dense_ones_derivatives(method):
    """The corrector's systems solved sparse: the same steps, the same derivatives."""
    args = (np.array([1.0, 0.0, 0.0]), np.log([0.04, 3.0e7, 1.0e4]), np.array([0.0, 0.5, 4.0]))
    g = np.array([[0.0, 0.0, 0.0], [1.0, 1e4, 1.0], [0.5, -1e4, 2.0]])
    results = []
    with jax.enable_x64(True):
        for rhs in (Robertson(), SparseRobertson()):
            solver = OdeSolve(rhs, method=method, rtol=1e-6, atol=1e-10, sensitivity="steps")
            loss = jax.value_and_grad(lambda *a: jnp.sum(g * solver(*a)), (0, 1, 2))
            results.append(jax.tree.leaves(loss(*args)))
    for dense, sparse in zip(*results):
        np.testing.assert_allclose(sparse, dense, rtol=1e-10, atol=1e-14)


def test_steps_are_refused_for_lsoda_and_dop853():
    for method in ("LSODA", "DOP853"):
        with pytest.raises(ValueError, match=rf"sensitivity='steps'.*got '{method}'"):
            OdeSolve(Damped(), method=method, sensitivity="steps")


def test_steps_are_refused_under_a_scipy_whose_step_code_was_not_compared(monkeypatch):
    from jaxbridge.adapters.integrate import ode_solve

    monkeypatch.setattr(ode_solve, "STEPS_FOLLOWED", False)
    with pytest.raises(
        ValueError, match=rf"checked against SciPy 1\.11-1\.18; this is SciPy {scipy.__version__}"
    ):
        OdeSolve(Damped(), method="RK45", sensitivity="steps")
    OdeSolve(Damped(), method="RK45", sensitivity="adjoint")  # the others stand


def test_auto_takes_the_steps_of_rk45_and_of_bdf_with_cheap_jacobians_else_the_adjoint(
    monkeypatch,
):
    from jaxbridge.adapters.integrate import ode_solve

    many = ode_solve.LOOPED_STEPS + 1
    chosen = {m: OdeSolve(Robertson(), method=m).sensitivity_for(3) for m in ode_solve.METHODS}
    assert chosen == {
        "BDF": "steps",
        "RK45": "steps",
        "Radau": "adjoint",
        "RK23": "adjoint",
        "LSODA": "adjoint",
        "DOP853": "adjoint",
    }
    # BDF: a step's Jacobian from the hook, one batched call, or n backward calls (few)
    assert OdeSolve(Robertson(), method="BDF").sensitivity_for(many) == "steps"  # the hook
    assert OdeSolve(VectorizedDecay(), method="BDF").sensitivity_for(many) == "steps"
    assert OdeSolve(Damped(), method="BDF").sensitivity_for(many - 1) == "steps"
    assert OdeSolve(Damped(), method="BDF").sensitivity_for(many) == "adjoint"
    assert OdeSolve(Damped(), method="RK45").sensitivity_for(many) == "steps"
    # the adjoint's own option asks for the adjoint; an explicit choice stands
    assert OdeSolve(Robertson(), control_quadrature=True).sensitivity_for(3) == "adjoint"
    for sensitivity in ("adjoint", "forward", "steps"):
        assert OdeSolve(Damped(), sensitivity=sensitivity).sensitivity_for(2) == sensitivity
    monkeypatch.setattr(ode_solve, "STEPS_FOLLOWED", False)
    assert OdeSolve(Robertson(), method="BDF").sensitivity_for(3) == "adjoint"
    assert OdeSolve(Damped(), method="RK45").sensitivity_for(2) == "adjoint"


@pytest.mark.parametrize(
    ("method", "n", "expected"),
    [("RK45", 2, "steps"), ("BDF", 2, "steps"), ("BDF", 17, "adjoint"), ("Radau", 2, "adjoint")],
)
def test_auto_differentiates_as_the_sensitivity_it_chose(method, n, expected):
    """The default's gradient and tangent are those of its choice, to the bit (the looped
    ``Damped``: BDF's steps up to ``LOOPED_STEPS`` unknowns, the adjoint beyond)."""
    rng = np.random.default_rng(n)
    with jax.enable_x64(True):
        y0, theta, ts = jnp.asarray(rng.uniform(-1, 1, n)), *(jnp.asarray(a) for a in ARGS[1:])
        weights = jnp.asarray(rng.normal(size=(len(ts), n)))

        def derivatives(**options):
            solver = OdeSolve(Damped(), method=method, rtol=1e-6, **options)
            loss = lambda *a: jnp.sum(weights * solver(*a))  # noqa: E731
            grads = jax.grad(loss, (0, 1, 2))(y0, theta, ts)
            tangent = jax.jvp(loss, (y0, theta, ts), (jnp.ones(n), -jnp.ones(2), ts))[1]
            return [*grads, tangent]

        chosen, default = derivatives(sensitivity=expected), derivatives()
        other = derivatives(sensitivity="adjoint" if expected == "steps" else "steps")
    # (θ's gradients by the two ways differ: equality to the bit tells which one ran)
    assert not np.array_equal(other[1], default[1])
    for a, b in zip(chosen, default, strict=True):
        np.testing.assert_array_equal(a, b)
