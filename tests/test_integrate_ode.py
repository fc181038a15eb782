"""``OdeSolve``: published reference values, gradients by the adjoint against forward
sensitivities, closed forms and finite differences, a dissipative problem, every output time,
jit/vmap/jacrev/jacfwd, ``check_adapter``, and the failures."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _integrate_cases import (
    ROBERTSON_AT_40,
    ROBERTSON_RATES,
    BadDerivative,
    BlowUp,
    Damped,
    Decay,
    Robertson,
    RobertsonNoJacobian,
    Rotation,
    VectorizedDecay,
)

import jaxbridge as jb
from jaxbridge.adapters.integrate import OdeSolve, ode_solve
from jaxbridge.adapters.integrate._trajectories import Trajectories
from jaxbridge.testing import check_adapter

pytestmark = pytest.mark.slow  # stiff and adjoint ODE solves, compiled per case

ROBERTSON_Y0 = np.array([1.0, 0.0, 0.0])
ROBERTSON_THETA = np.log(ROBERTSON_RATES)
ROBERTSON_TS = np.array([0.0, 0.4, 4.0, 40.0])
# y2 is ~1e-5 where y1 and y3 are ~1: weigh the components alike in the losses
ROBERTSON_WEIGHTS = np.random.default_rng(1).normal(size=(4, 3)) / np.array([1.0, 1e-5, 1.0])


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("method", ["BDF", "Radau", "LSODA"])
def test_robertson_matches_the_test_set_reference_at_t_40(method):
    with jax.enable_x64(True):
        solve = OdeSolve(Robertson(), method=method, rtol=1e-10, atol=1e-14)
        ys = np.asarray(solve(ROBERTSON_Y0, ROBERTSON_THETA, ROBERTSON_TS))
    assert ys.shape == (4, 3)
    assert np.array_equal(ys[0], ROBERTSON_Y0)  # ys[0] is y0 itself
    # measured: 1.3e-9 (BDF), 2.1e-12 (Radau), 8.8e-10 (LSODA); the reference is good to 1e-12
    np.testing.assert_allclose(ys[-1], ROBERTSON_AT_40, rtol=1e-8)


def test_robertson_without_the_jacobian_hook_and_in_float32():
    """The implicit methods' Jacobian from backward calls gives the same solution; float32
    arguments give float32 results, the float64 solution rounded."""
    with jax.enable_x64(True):
        reference = OdeSolve(Robertson(), method="BDF", rtol=1e-10, atol=1e-14)(
            ROBERTSON_Y0, ROBERTSON_THETA, ROBERTSON_TS
        )
        got = OdeSolve(RobertsonNoJacobian(), method="BDF", rtol=1e-10, atol=1e-14)(
            ROBERTSON_Y0, ROBERTSON_THETA, ROBERTSON_TS
        )
    np.testing.assert_allclose(got, reference, rtol=1e-9)
    args32 = (a.astype(np.float32) for a in (ROBERTSON_Y0, ROBERTSON_THETA, ROBERTSON_TS))
    got32 = OdeSolve(Robertson(), method="LSODA", rtol=1e-10, atol=1e-14)(*args32)
    assert got32.dtype == jnp.float32
    # the float32 rate constants differ from the float64 ones by up to 3e-8 relative
    np.testing.assert_allclose(got32, reference, rtol=2e-6, atol=1e-12)


# ---------------------------------------------------------------- gradients


def _robertson_loss(solve):
    return lambda y0, theta, ts: jnp.sum(ROBERTSON_WEIGHTS * solve(y0, theta, ts))


def _central_differences(loss, args, steps):
    """Central differences in float64 of ``loss`` in every entry of every argument."""
    grads = []
    for i, (arg, step) in enumerate(zip(args, steps)):
        grad = np.zeros(arg.shape)
        for j in np.ndindex(arg.shape):
            values = []
            for sign in (1, -1):
                moved = [np.array(a) for a in args]
                moved[i][j] += sign * step
                values.append(float(loss(*moved)))
            grad[j] = (values[0] - values[1]) / (2 * step)
        grads.append(grad)
    return grads


def test_robertson_gradients_adjoint_forward_and_finite_differences():
    """Stiff kinetics: the adjoint (BDF, LSODA; with and without the Jacobian hook) and the
    forward sensitivities agree with each other and with central differences in every
    argument: y0, the log rate constants and all four output times."""
    with jax.enable_x64(True):
        args = (ROBERTSON_Y0, ROBERTSON_THETA, ROBERTSON_TS)
        reference = OdeSolve(Robertson(), method="LSODA", rtol=1e-12, atol=1e-16)
        expected = _central_differences(
            jax.jit(_robertson_loss(reference)), args, steps=(1e-6, 1e-4, 1e-4)
        )
        variants = [
            OdeSolve(Robertson(), method="LSODA", rtol=1e-10, atol=1e-14),
            OdeSolve(
                RobertsonNoJacobian(), method="BDF", rtol=1e-10, atol=1e-14, sensitivity="adjoint"
            ),
            OdeSolve(Robertson(), method="LSODA", rtol=1e-10, atol=1e-14, sensitivity="forward"),
        ]
        for solve in variants:
            got = jax.jit(jax.grad(_robertson_loss(solve), (0, 1, 2)))(*args)
            for name, g, e in zip(("y0", "theta", "ts"), got, expected):
                # measured agreement: 3e-6 relative at worst; a 1% error is 1e-2
                np.testing.assert_allclose(
                    g, e, rtol=2e-5, atol=2e-5 * np.abs(e).max(), err_msg=f"{solve} in {name}"
                )


@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_control_quadrature_narrows_the_error_of_the_gradient_in_theta(method):
    """At rtol 1e-6 the adjoint's θ quadrature, left out of the error control, is off by
    2e-4 (BDF) and 1e-6 (Radau) relative, against forward sensitivities at rtol 1e-12;
    under the error control with λ, by 3e-5 and 1e-8 (measured)."""
    ts, weights = np.array([0.0, 40.0]), np.array([1.0, 1e4, 1.0])
    with jax.enable_x64(True):

        def grad(solve):
            loss = lambda theta: solve(ROBERTSON_Y0, theta, ts)[-1] @ weights  # noqa: E731
            return np.asarray(jax.grad(loss)(ROBERTSON_THETA))

        tight = OdeSolve(
            Robertson(),
            "Radau",
            rtol=1e-12,
            atol=1e-20,
            sensitivity="forward",
            check_derivatives=False,  # (a reference: at 1e-13 rounding moves it by ~1e-5)
        )
        expected = grad(tight)
        plain = grad(OdeSolve(Robertson(), method, rtol=1e-6, atol=1e-10, sensitivity="adjoint"))
        controlled = grad(
            OdeSolve(Robertson(), method, rtol=1e-6, atol=1e-10, control_quadrature=True)
        )

    def error(got):
        return np.max(np.abs(got - expected) / np.abs(expected))

    assert error(controlled) < {"BDF": 1e-4, "Radau": 1e-7}[method]
    assert error(controlled) < error(plain) / 5


@pytest.mark.parametrize("rhs", [Robertson(), RobertsonNoJacobian()], ids=["hook", "no hook"])
@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_forward_sensitivities_of_the_implicit_methods_over_a_long_stiff_horizon(rhs, method):
    """Robertson to t = 1000, forward sensitivities with BDF and Radau: their Newton
    iteration needs how S' moves with y (without it they ran out of 100,000 evaluations,
    where the plain solve takes 1,600), against central differences of the LSODA solve."""
    ts = np.array([0.0, 1e3])
    weights = ROBERTSON_WEIGHTS[:2]
    with jax.enable_x64(True):
        reference = OdeSolve(Robertson(), method="LSODA", rtol=1e-12, atol=1e-16)

        def loss(solve):
            return lambda theta: jnp.sum(weights * solve(ROBERTSON_Y0, theta, ts))

        (expected,) = _central_differences(jax.jit(loss(reference)), (ROBERTSON_THETA,), (1e-4,))
        solve = OdeSolve(rhs, method=method, rtol=1e-8, atol=1e-14, sensitivity="forward")
        got = jax.grad(loss(solve))(ROBERTSON_THETA)
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5 * np.abs(expected).max())


@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_dissipative_decay_gets_the_sign_and_size_of_a_tiny_derivative(sensitivity):
    """``y' = -k y``, k = 40: ``dy(1)/dk = -exp(-40) ≈ -4.2e-18``. Backsolving ``y``
    backwards from ``y(1)`` (what JAX's ``odeint`` does) gives +8e-9; the adjoint here
    reads ``y`` from the forward's dense solution. ``atol`` must be below the values' scale
    (~4e-18) for relative accuracy there."""
    with jax.enable_x64(True):
        solve = OdeSolve(Decay(), rtol=1e-10, atol=1e-30, sensitivity=sensitivity)
        y0, k, ts = jnp.array([1.0]), jnp.array([40.0]), jnp.array([0.0, 1.0])

        def final(y0, k, ts):
            return solve(y0, k, ts)[-1, 0]

        value = float(final(y0, k, ts))
        dy0, dk, dts = map(np.asarray, jax.jit(jax.grad(final, (0, 1, 2)))(y0, k, ts))
    exact = np.exp(-40.0)
    np.testing.assert_allclose(value, exact, rtol=1e-7)
    assert dk[0] < 0
    np.testing.assert_allclose(dk[0], -exact, rtol=1e-6)  # -t y0 exp(-k t)
    np.testing.assert_allclose(dy0[0], exact, rtol=1e-6)
    np.testing.assert_allclose(dts, [40 * exact, -40 * exact], rtol=1e-6)  # ±k y(1)


def _rotation_reference(y0, theta, ts):
    """``y(t_i) = expm(A (t_i - t_0)) y0 = exp(-a τ) R(w τ) y0`` with ``τ = t_i - t_0`` and
    ``R`` the rotation by ``-w τ``: the closed form, differentiable in everything by JAX."""
    a, w = theta
    tau = ts - ts[0]
    c, s = jnp.cos(w * tau), jnp.sin(w * tau)
    rotated = jnp.stack([c * y0[0] + s * y0[1], -s * y0[0] + c * y0[1]], axis=-1)
    return jnp.exp(-a * tau)[:, None] * rotated


ROTATION_ARGS = (np.array([1.0, -0.5]), np.array([0.7, 2.0]), np.array([0.3, 0.7, 1.5, 2.0]))
ROTATION_WEIGHTS = np.random.default_rng(2).normal(size=(4, 2))


@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_gradient_in_every_output_time_including_t0_against_the_closed_form(sensitivity):
    """``dL/dt_i = g_i · f(t_i, y_i)`` for i > 0, and ``dL/dt_0 = -λ(t_0) · f(t_0, y_0)``,
    with ``λ(t_0)`` before ``g_0`` is added: against JAX's derivative of the matrix
    exponential solution (in closed form), in y0 and theta too."""
    with jax.enable_x64(True):
        solve = OdeSolve(
            Rotation(), method="LSODA", rtol=1e-11, atol=1e-13, sensitivity=sensitivity
        )

        def loss(solver):
            return lambda *args: jnp.sum(ROTATION_WEIGHTS * solver(*args))

        got = tuple(map(np.asarray, jax.jit(jax.grad(loss(solve), (0, 1, 2)))(*ROTATION_ARGS)))
        expected = jax.jit(jax.grad(loss(_rotation_reference), (0, 1, 2)))(*ROTATION_ARGS)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-7, atol=1e-8)
    assert abs(got[2][0]) > 0.1  # t0's gradient is not trivially zero here


def test_jacrev_jacfwd_vmap_and_jit_against_the_closed_form():
    """Adjoint-mode ``jacrev`` and forward mode (its ``jvp`` integrates the tangent along
    the saved outputs) against the matrix exponential; a ``vmap`` of the gradient over a
    batch of problems against one call each."""
    with jax.enable_x64(True):
        solve = OdeSolve(Rotation(), method="LSODA", rtol=1e-10, atol=1e-12)
        y0, theta, ts = ROTATION_ARGS
        expected = jax.jit(jax.jacrev(_rotation_reference, (0, 1, 2)))(y0, theta, ts)
        for jacobian in (jax.jacrev, jax.jacfwd):
            got = jax.jit(jacobian(solve, (0, 1, 2)))(y0, theta, ts)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-7, atol=1e-7)

        thetas = jnp.array([[0.7, 2.0], [0.2, -1.0], [1.5, 0.5]])
        y0s = jnp.array([[1.0, -0.5], [0.3, 0.2], [-1.0, 2.0]])

        def loss(y0, theta):
            return jnp.sum(ROTATION_WEIGHTS * solve(y0, theta, ts))

        values, grads = jax.jit(jax.vmap(jax.value_and_grad(loss, (0, 1))))(y0s, thetas)
        for i in range(3):
            value, grad = jax.value_and_grad(loss, (0, 1))(y0s[i], thetas[i])
            np.testing.assert_allclose(values[i], value, rtol=1e-12)
            for g, e in zip(grads, grad):
                np.testing.assert_allclose(g[i], e, rtol=1e-12)


def test_a_vectorized_rhs_gives_its_jacobian_in_one_backward_call():
    """BDF without a Jacobian hook stacks the n unit cotangents into one backward call."""
    with jax.enable_x64(True):
        args = (jnp.array([1.0, 2.0]), jnp.array([3.0]), jnp.array([0.0, 0.5, 1.0]))

        def loss(rhs, sensitivity):
            solve = OdeSolve(rhs, rtol=1e-10, atol=1e-12, sensitivity=sensitivity)
            return lambda *args: jnp.sum(solve(*args) ** 2)

        for sensitivity in ("adjoint", "forward"):
            got = jax.grad(loss(VectorizedDecay(), sensitivity), (0, 1, 2))(*args)
            expected = jax.grad(loss(Decay(), sensitivity), (0, 1, 2))(*args)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-8)
            # and the closed form: sum of y0² exp(-2 k (t - t0)) over the outputs
            np.testing.assert_allclose(
                got[1][0], -5.0 * (np.exp(-3.0) + 2 * np.exp(-6.0)), rtol=1e-7
            )


# ---------------------------------------------------------------- check_adapter

DAMPED_ARGS = (np.array([0.5, -1.0]), np.array([0.3, -0.2]), np.array([-0.1, 0.4, 1.0]))


def test_check_adapter_forward_sensitivities():
    """Every check, the transposition of the two modes to rounding included (both are
    products with the same saved sensitivities)."""
    solve = OdeSolve(Damped(), method="LSODA", rtol=1e-10, atol=1e-12, sensitivity="forward")
    with jax.enable_x64(True):
        check_adapter(solve, *DAMPED_ARGS)
    check_adapter(solve, *(a.astype(np.float32) for a in DAMPED_ARGS), checks=("specs", "grad"))


def test_check_adapter_adjoint():
    """Every check; "transpose" to the solver's tolerance, not to rounding: the backward
    (the adjoint) and the jvp (the tangent equations) are two integrations, which agree to
    about rtol (next test); the other checks keep their defaults."""
    solve = OdeSolve(Damped(), method="LSODA", rtol=1e-10, atol=1e-12)
    with jax.enable_x64(True):
        check_adapter(solve, *DAMPED_ARGS, rtol={"transpose": 1e-7})
    check_adapter(solve, *(a.astype(np.float32) for a in DAMPED_ARGS), checks=("specs", "grad"))


class CountedDamped(Damped):
    """``Damped``, counting its host evaluations (a class-level log: not a parameter)."""

    calls = [0]

    def forward(self, t, y, theta):
        CountedDamped.calls[0] += 1
        return super().forward(t, y, theta)


def test_forward_sensitivities_only_where_differentiated():
    """With sensitivity="forward", a value-only call solves for y alone (as many rhs
    evaluations as the adjoint setting's value), and a differentiated call returns the same
    outputs, to the bit, with the sensitivities' gradient."""
    with jax.enable_x64(True):
        counts = {}
        for sensitivity in ("adjoint", "forward"):
            solve = jax.jit(OdeSolve(CountedDamped(), method="BDF", sensitivity=sensitivity))
            solve(*DAMPED_ARGS).block_until_ready()  # (compiled)
            CountedDamped.calls[0] = 0
            value = solve(*DAMPED_ARGS)
            counts[sensitivity] = CountedDamped.calls[0]
        assert counts["forward"] == counts["adjoint"] > 0
        forward = OdeSolve(CountedDamped(), method="BDF", sensitivity="forward")
        y0, theta, ts = DAMPED_ARGS
        ys, pullback = jax.vjp(lambda y0, theta: forward(y0, theta, ts), y0, theta)
        grad = pullback(jnp.ones_like(ys))
        np.testing.assert_array_equal(ys, value)
        adjoint = OdeSolve(Damped(), method="BDF", rtol=1e-12, atol=1e-14, sensitivity="adjoint")
        reference = jax.grad(lambda y0, theta: adjoint(y0, theta, ts).sum(), (0, 1))(y0, theta)
        for got, expected in zip(grad, reference):
            np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_the_rules_read_the_differentiated_forwards_solution(monkeypatch):
    """A differentiated call solves with dense output and keeps it: the backward and the
    jvp then evaluate the rhs only for the adjoint or the tangent; where it is not kept,
    they solve again, as many evaluations as the forward's solve, and give the same bits.
    The outputs are the value-only call's, to the bit."""
    # (the a posteriori check solves again: counted elsewhere)
    solve = OdeSolve(CountedDamped(), method="BDF", sensitivity="adjoint", check_derivatives=False)

    def counted(call):
        CountedDamped.calls[0] = 0
        out = call()
        return out, CountedDamped.calls[0]

    with jax.enable_x64(True):
        y0, theta, ts = (jnp.asarray(a) for a in DAMPED_ARGS)
        value, value_count = counted(lambda: solve(y0, theta, ts))
        cotangent = jnp.asarray(np.random.default_rng(4).normal(size=value.shape))
        tangents = tuple(
            jnp.asarray(np.random.default_rng(5).normal(size=a.shape)) for a in (y0, theta, ts)
        )
        (ys, pullback), forward_count = counted(lambda: jax.vjp(solve, y0, theta, ts))
        kept, kept_count = counted(lambda: pullback(cotangent))
        again, _ = counted(lambda: pullback(cotangent))  # (the last taken is still there)
        (_, tangent), tangent_count = counted(lambda: jax.jvp(solve, (y0, theta, ts), tangents))
        monkeypatch.setattr(ode_solve, "kept", Trajectories(budget=0))  # keeps nothing
        solved, solved_count = counted(lambda: pullback(cotangent))
        (_, tangent_solved), tangent_solved_count = counted(
            lambda: jax.jvp(solve, (y0, theta, ts), tangents)
        )
    np.testing.assert_array_equal(ys, value)
    assert forward_count == value_count > 0
    assert solved_count == kept_count + value_count
    assert tangent_solved_count == tangent_count + value_count
    for got in (again, solved):
        for a, b in zip(got, kept):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(tangent_solved, tangent)


def test_adjoint_and_tangent_are_transposes_to_the_tolerance():
    """<g, J t> by the jvp and <Jᵀ g, t> by the adjoint, along every argument at once: equal
    to ~rtol, and they converge together as rtol shrinks (a wrong term would not)."""
    rng = np.random.default_rng(3)
    g = rng.normal(size=(3, 2))
    tangents = tuple(rng.normal(size=a.shape) for a in DAMPED_ARGS)
    gaps = []
    with jax.enable_x64(True):
        for rtol in (1e-7, 1e-10):
            solve = OdeSolve(Damped(), method="LSODA", rtol=rtol, atol=rtol * 1e-2)
            _, jt = jax.jvp(solve, DAMPED_ARGS, tangents)
            _, pullback = jax.vjp(solve, *DAMPED_ARGS)
            jtg = pullback(jnp.asarray(g))
            forward = float(jnp.sum(g * jt))
            reverse = sum(float(jnp.sum(c * t)) for c, t in zip(jtg, tangents))
            gaps.append(abs(forward - reverse) / abs(forward))
    assert gaps[1] < 1e-8, gaps
    assert gaps[1] < gaps[0] / 10, gaps


def test_rhs_and_integrand_cases_pass_check_adapter():
    """The hand-written derivatives of the test problems themselves."""
    import _integrate_cases as cases

    rng = np.random.default_rng(4)
    with jax.enable_x64(True):
        for rhs, n, p in [(cases.Robertson(), 3, 3), (cases.Damped(), 2, 3), (cases.Decay(), 2, 1)]:
            args = (np.array(0.3), rng.uniform(0.1, 1.0, n), rng.normal(size=p))
            check_adapter(rhs, *args, checks=("specs", "grad"))
        check_adapter(
            cases.Rotation(),
            np.array(0.3),
            rng.normal(size=2),
            rng.normal(size=2),
            checks=("specs", "grad", "jvp"),
        )
        for integrand, p in [(cases.GaussianCosine(), 2), (cases.Exponential(), 1)]:
            check_adapter(integrand, np.array(0.4), rng.normal(size=p), checks=("specs", "grad"))


# ---------------------------------------------------------------- failures


def test_a_failed_solve_names_forward_and_quotes_scipy():
    solve = OdeSolve(BlowUp(), method="BDF")  # y' = y² blows up at t = 1
    with pytest.raises(RuntimeError, match=r"OdeSolve\.forward.*Required step size"):
        solve(jnp.array([1.0]), jnp.zeros(1), jnp.array([0.0, 2.0]))
    # LSODA would stall for ever on the overflow; it stops with its own message
    with pytest.raises(RuntimeError, match=r"OdeSolve\.forward.*non-finite derivative"):
        OdeSolve(BlowUp(), method="LSODA")(jnp.array([1.0]), jnp.zeros(1), jnp.array([0.0, 2.0]))
    # under jit too, its own type (read in the block: a GPU reports it at the read)
    with pytest.raises(RuntimeError, match=r"OdeSolve\.forward.*Required step size"):
        with jb.host_errors():
            jax.jit(solve)(
                jnp.array([1.0]), jnp.zeros(1), jnp.array([0.0, 2.0])
            ).block_until_ready()


def test_a_solve_that_needs_too_many_steps_stops():
    """SciPy's solvers have no step limit (LSODA can creep on for ever): ``max_evaluations``."""
    solve = OdeSolve(Decay(), method="LSODA", rtol=1e-12, atol=1e-14, max_evaluations=50)
    with pytest.raises(RuntimeError, match=r"OdeSolve\.forward.*more than max_evaluations = 50"):
        solve(jnp.array([1.0]), jnp.array([1.0]), jnp.array([0.0, 10.0]))


def test_on_failure_nan_marks_only_the_failed_batch_element():
    solve = OdeSolve(BlowUp(), method="BDF", on_failure="nan")
    y0s = jnp.array([[1.0], [-1.0]])  # the second decays like 1 / (1 + t): no blow-up
    ts = jnp.array([0.0, 2.0])

    def last(y0):
        return solve(y0, jnp.zeros(1), ts)[-1, 0]

    values, grads = jax.jit(jax.vmap(jax.value_and_grad(last)))(y0s)
    assert np.isnan(values[0]) and np.isnan(grads[0, 0])
    np.testing.assert_allclose(values[1], -1 / 3, rtol=1e-6)
    np.testing.assert_allclose(grads[1, 0], 1 / 9, rtol=1e-5)  # d/dy0 of y0/(1 - y0 t)


def test_a_nan_time_is_a_failed_solve_that_nan_marks_per_element():
    """A NaN in ``ts`` is non-finite input, which ``on_failure="nan"`` turns into NaN for its
    batch element alone (it raised, blaming the order of the times, for the whole batch)."""
    solve = OdeSolve(Decay(), on_failure="nan", rtol=1e-10, atol=1e-12)
    tss = jnp.array([[0.0, 1.0], [0.0, jnp.nan]])
    got = jax.vmap(solve, (None, None, 0))(jnp.ones(2), jnp.array([0.5]), tss)
    np.testing.assert_allclose(got[0], [[1.0, 1.0], [np.exp(-0.5)] * 2], rtol=1e-6)  # float32
    assert np.isnan(got[1]).all()
    with pytest.raises(RuntimeError, match=r"OdeSolve\.forward.*non-finite"):
        OdeSolve(Decay())(jnp.ones(2), jnp.array([0.5]), tss[1])


@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_no_output_times_have_zero_derivatives(sensitivity):
    """``ts`` empty: no output, so zero gradients and an empty tangent (the rules crashed)."""
    solve = OdeSolve(Decay(), sensitivity=sensitivity)
    y0, theta, ts = jnp.ones(2), jnp.array([0.5]), jnp.zeros(0)
    assert solve(y0, theta, ts).shape == (0, 2)
    grads = jax.grad(lambda y0, theta: solve(y0, theta, ts).sum(), (0, 1))(y0, theta)
    np.testing.assert_array_equal(grads[0], [0.0, 0.0])
    np.testing.assert_array_equal(grads[1], [0.0])
    _, tangent = jax.jvp(lambda theta: solve(y0, theta, ts), (theta,), (jnp.ones(1),))
    assert tangent.shape == (0, 2)


@pytest.mark.parametrize("sensitivity", ["auto", "adjoint", "forward", "steps"])
@pytest.mark.parametrize("method", ["BDF", "RK45"])
def test_no_unknowns_have_zero_derivatives(sensitivity, method):
    """``y0`` empty: an empty solution, zero gradients in ``theta`` and ``ts`` and an empty
    tangent (forward mode and forward sensitivities crashed); bad times still fail."""
    solve = OdeSolve(Decay(), method=method, sensitivity=sensitivity)
    y0, theta, ts = jnp.zeros(0), jnp.array([0.5]), jnp.array([0.0, 1.0, 2.0])
    assert solve(y0, theta, ts).shape == (3, 0)
    grads = jax.grad(lambda *a: solve(*a).sum(), (0, 1, 2))(y0, theta, ts)
    assert grads[0].shape == (0,)
    np.testing.assert_array_equal(grads[1], [0.0])
    np.testing.assert_array_equal(grads[2], [0.0, 0.0, 0.0])
    _, tangent = jax.jvp(solve, (y0, theta, ts), (y0, jnp.ones(1), jnp.ones(3)))
    assert tangent.shape == (3, 0)
    with pytest.raises(RuntimeError, match=r"OdeSolve\.forward.*non-finite"):
        solve(y0, theta, jnp.array([0.0, jnp.nan]))


@pytest.mark.parametrize("sensitivity", ["adjoint", "steps"])
def test_a_failed_adjoint_names_backward_and_is_never_a_start_value(sensitivity):
    # the adjoint meets NaN before t = 0.5 (through the steps: in the steps there)
    solve = OdeSolve(BadDerivative(), method="RK45", sensitivity=sensitivity)

    def final(k):
        return solve(jnp.array([1.0]), k, jnp.array([0.0, 1.0]))[-1, 0]

    with pytest.raises(RuntimeError, match=r"OdeSolve\.backward.*the adjoint.*non-finite"):
        jax.grad(final)(jnp.array([2.0]))
    solve = OdeSolve(BadDerivative(), method="RK45", sensitivity=sensitivity, on_failure="nan")
    assert np.isnan(jax.grad(final)(jnp.array([2.0]))).all()


def test_bad_inputs_and_parameters_are_refused_clearly():
    solve = OdeSolve(Decay())
    with pytest.raises(ValueError, match=r"'ts' must be strictly increasing.*ts\[1\]"):
        solve(jnp.array([1.0]), jnp.array([1.0]), jnp.array([0.0, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match=r"OdeSolve\.forward.*non-finite entries"):
        solve(jnp.array([jnp.nan]), jnp.array([1.0]), jnp.array([0.0, 1.0]))
    got = OdeSolve(Decay(), on_failure="nan")(
        jnp.array([1.0]), jnp.array([jnp.inf]), jnp.array([0.0, 1.0])
    )
    assert np.isnan(got).all()
    with pytest.raises(ValueError, match=r"'method' must be one of"):
        OdeSolve(Decay(), method="Euler")
    with pytest.raises(ValueError, match=r"'sensitivity' must be one of"):
        OdeSolve(Decay(), sensitivity="backsolve")
    with pytest.raises(TypeError, match=r"'control_quadrature' must be True or False; got 1"):
        OdeSolve(Decay(), control_quadrature=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'rtol' must be a positive number"):
        OdeSolve(Decay(), rtol=0.0)
    with pytest.raises(ValueError, match=r"'rhs' \(Rotation\) must have signature"):
        OdeSolve(type("Rotation", (Rotation,), {"signature": "(n),(p)->(n)"})())
    with pytest.raises(TypeError, match=r"'rhs' must be a jaxbridge.Adapter"):
        OdeSolve(lambda t, y, theta: -y)  # type: ignore[arg-type]
