"""Second derivatives through ``OdeSolve`` and ``Quad`` (``jax.hessian``, ``jax.jvp`` of
``jax.grad``, ``jax.jacfwd`` of ``jax.grad``, ``jax.jacrev`` of ``jax.jacrev``), under ``jit``
and ``vmap``, against references independent of the code: the linear ODE ``y' = A(θ) y``
solved by ``jax.scipy.linalg.expm`` and differentiated by JAX, integrals with closed-form
antiderivatives, and central differences of the checked gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _integrate_cases import Damped, GaussianCosine
from jax.scipy.linalg import expm

import jaxbridge as jb
from jaxbridge.adapters.integrate import OdeSolve, Quad

A0 = np.array([[-1.0, 0.3, 0.0], [0.2, -0.8, 0.1], [0.0, 0.4, -0.5]])
A1 = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.2]])
A2 = np.array([[0.3, 0.0, 0.0], [0.0, -0.2, 0.5], [0.1, 0.0, 0.0]])


def a_of(theta):
    return A0 + theta[0] * A1 + theta[1] * A2


class Linear(jb.Adapter):
    """``y' = A(θ) y``, ``A(θ) = A0 + θ0 A1 + θ1 A2``: first derivatives only (the second
    ones by differences of ``backward``)."""

    signature = "(),(n),(p)->(n)"

    def forward(self, t, y, theta):
        return a_of(theta) @ y

    def backward(self, res, g):
        _, y, theta, _ = res
        return None, a_of(theta).T @ g, np.array([g @ A1 @ y, g @ A2 @ y])


class LinearHooked(Linear):
    """``Linear`` with its exact second derivatives."""

    def backward_jvp(self, res, g, tangents):
        _, y, _, _ = res
        _, dy, dtheta = (np.zeros(np.shape(r)) if t is None else t for t, r in zip(tangents, res))
        da = dtheta[0] * A1 + dtheta[1] * A2
        return None, da.T @ g, np.array([g @ A1 @ dy, g @ A2 @ dy])


Y0 = np.array([1.0, 0.5, -0.3])
THETA = np.array([0.2, -0.1])
TS = np.array([0.0, 0.5, 1.2])
W = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [1.0, 1.0, 1.0]])
X = np.concatenate([Y0, THETA, TS])  # (the arguments flattened: y0, theta, ts)


@pytest.fixture(autouse=True)
def _float64():
    with jax.enable_x64(True):
        yield


def reference(y0, theta, ts):
    a = A0 + theta[0] * A1 + theta[1] * A2
    return jnp.stack([expm(a * (t - ts[0])) @ y0 for t in ts])


def flat_loss(solve):
    """The loss ``Σ W y²`` as a function of ``x = (y0, θ, ts)`` flattened."""

    def loss(x):
        return jnp.sum(W * solve(x[:3], x[3:5], x[5:]) ** 2)

    return loss


def relative(got, want):
    return float(jnp.max(jnp.abs(got - want)) / jnp.max(jnp.abs(want)))


def _check_against_expm(solve, rtol):
    loss, exact = flat_loss(solve), flat_loss(reference)
    # as accurate as the solve's own first derivatives (BDF's are 10-100x its rtol here),
    # within 10x: a 1% wrong second derivative is far outside
    first = relative(jax.jit(jax.grad(loss))(X), jax.grad(exact)(X))
    bound = 10 * max(rtol, first)
    want = jax.hessian(exact)(X)
    assert relative(jax.jit(jax.hessian(loss))(X), want) < bound
    return want, bound


def test_hessian_of_a_linear_ode_matches_expm_in_y0_theta_and_ts():
    solve = OdeSolve(LinearHooked(), rtol=1e-10, atol=1e-12)  # BDF, through its steps
    want, bound = _check_against_expm(solve, 1e-10)
    assert bound < 2e-7
    loss = flat_loss(solve)
    # every composition of modes, under jit
    v = jnp.linspace(1.0, -1.0, X.size)
    hvp = jax.jit(lambda x: jax.jvp(jax.grad(loss), (x,), (v,))[1])(X)
    assert relative(hvp, want @ v) < bound


@pytest.mark.slow
def test_every_composition_of_modes_matches_expm():
    solve = OdeSolve(LinearHooked(), rtol=1e-10, atol=1e-12)
    want, bound = _check_against_expm(solve, 1e-10)
    loss = flat_loss(solve)
    assert relative(jax.jit(jax.jacfwd(jax.grad(loss)))(X), want) < bound
    assert relative(jax.jit(jax.jacrev(jax.jacrev(loss)))(X), want) < bound
    assert relative(jax.jacrev(jax.grad(loss))(X), want) < bound  # (eager)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method, sensitivity",
    [
        ("BDF", "adjoint"),
        ("BDF", "forward"),
        ("Radau", "adjoint"),
        ("Radau", "forward"),
        ("Radau", "steps"),
        ("LSODA", "adjoint"),
        ("LSODA", "forward"),
        ("RK45", "steps"),
        ("RK45", "adjoint"),
        ("RK23", "steps"),
        ("DOP853", "forward"),
    ],
)
@pytest.mark.parametrize("rhs", [Linear(), LinearHooked()], ids=["differences", "hook"])
def test_every_method_and_sensitivity_matches_expm(method, sensitivity, rhs):
    solve = OdeSolve(rhs, method=method, sensitivity=sensitivity, rtol=1e-10, atol=1e-12)
    want, bound = _check_against_expm(solve, 1e-10)
    loss = flat_loss(solve)
    assert relative(jax.jit(jax.jacrev(jax.jacrev(loss)))(X), want) < bound


@pytest.mark.slow
def test_vmap_of_the_hessian_in_theta():
    solve = OdeSolve(LinearHooked(), method="RK45", rtol=1e-10, atol=1e-12)
    thetas = jnp.array([THETA, THETA * 2, -THETA])

    def loss(theta, solve):
        return jnp.sum(W * solve(Y0, theta, TS) ** 2)

    got = jax.jit(jax.vmap(jax.hessian(lambda t: loss(t, solve))))(thetas)
    want = jax.vmap(jax.hessian(lambda t: loss(t, reference)))(thetas)
    assert relative(got, want) < 1e-8

    # y0 shared by the batch (not batched), differentiated with theta
    def in_both(theta, y0, solve):
        return jnp.sum(W * solve(y0, theta, TS) ** 2)

    got = jax.jit(jax.vmap(jax.hessian(lambda t, y: in_both(t, y, solve), (0, 1)), (0, None)))(
        thetas, Y0
    )
    want = jax.vmap(jax.hessian(lambda t, y: in_both(t, y, reference), (0, 1)), (0, None))(
        thetas, Y0
    )
    for i in range(2):
        for j in range(2):
            assert relative(got[i][j], want[i][j]) < 1e-8


def _difference_of_gradients(grad, x, h):
    columns = [(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in jnp.eye(x.size)]
    return jnp.stack(columns, axis=1)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method, sensitivity", [("BDF", "steps"), ("Radau", "adjoint"), ("LSODA", "forward")]
)
def test_a_nonlinear_time_dependent_ode_matches_differences_of_its_gradient(method, sensitivity):
    # Damped: nonlinear in y, time-dependent (its ∂f/∂t enters the derivatives in ts),
    # second derivatives by differences of its backward
    solve = OdeSolve(Damped(), method=method, sensitivity=sensitivity, rtol=1e-12, atol=1e-14)
    x = jnp.array([0.7, -0.4, 0.3, 0.2, 0.1, 0.6, 1.5])  # y0 (2), theta (2), ts (3)

    def loss(x):
        ys = solve(x[:2], x[2:4], x[4:])
        return jnp.sum(ys**2) + jnp.sum(ys[:, 0] * ys[:, 1])

    grad = jax.jit(jax.grad(loss))
    # the gradient's noise is about the tolerance (1e-12): steps of 1e-4 make the
    # differences' rounding ~1e-8 and their truncation (h² ∂³) as small
    want = _difference_of_gradients(grad, x, 1e-4)
    got = jax.jit(jax.hessian(loss))(x)
    assert relative(got, want) < 1e-6
    assert relative(got, got.T) < 1e-6  # (the two orders of differentiation agree)


# ------------------------------------------------------------------------------------ Quad


class Exp(jb.Adapter):
    """``θ1 exp(θ0 x)``, whose integral over [a, b] is ``θ1 (e^{θ0 b} - e^{θ0 a}) / θ0``."""

    signature = "(),(p)->()"

    def forward(self, x, theta):
        return theta[1] * np.exp(theta[0] * x)

    def backward(self, res, g):
        x, theta, f = res
        return g * theta[0] * f, g * np.array([x * f, np.exp(theta[0] * x)])


class ExpHooked(Exp):
    def backward_jvp(self, res, g, tangents):
        x, theta, f = res
        _, dtheta = tangents
        e = np.exp(theta[0] * x)
        # ∂/∂θ of (x f, e), along dθ
        d_first = x * (x * f * dtheta[0] + e * dtheta[1])
        d_second = x * e * dtheta[0]
        d_x = theta[1] * e * (dtheta[0] * (1 + theta[0] * x)) + theta[0] * e * dtheta[1]
        return g * d_x, g * np.array([d_first, d_second])


def exp_integral(theta, a, b):
    return theta[1] * (jnp.exp(theta[0] * b) - jnp.exp(theta[0] * a)) / theta[0]


QUAD_ARGS = (np.array([0.7, 1.3]), np.array(-0.4), np.array(1.1))


@pytest.mark.parametrize(
    "integrand",
    [pytest.param(Exp(), marks=pytest.mark.slow), ExpHooked()],
    ids=["differences", "hook"],
)
def test_quad_second_derivatives_match_the_closed_form(integrand):
    quad = Quad(integrand, epsabs=0.0, epsrel=1e-12)

    def flat(f):
        return lambda x: f(x[:2], x[2], x[3])

    x = jnp.asarray(np.concatenate([QUAD_ARGS[0], np.stack(QUAD_ARGS[1:])]))
    want = jax.hessian(flat(exp_integral))(x)
    loss = flat(quad)
    assert relative(jax.jit(jax.hessian(loss))(x), want) < 1e-8
    assert relative(jax.jit(jax.jacrev(jax.jacrev(loss)))(x), want) < 1e-8
    # forward over forward and reverse over forward (the forward mode a bridged call)
    assert relative(jax.jit(jax.jacfwd(jax.jacfwd(loss)))(x), want) < 1e-8
    reverse_over_forward = jax.jacrev(jax.jacfwd(loss))
    if isinstance(integrand, ExpHooked):  # (eager in the slow case: seconds of dispatch)
        reverse_over_forward = jax.jit(reverse_over_forward)
    assert relative(reverse_over_forward(x), want) < 1e-8
    v = jnp.array([1.0, -2.0, 0.5, 0.3])
    hvp = jax.jit(lambda x: jax.jvp(jax.grad(loss), (x,), (v,))[1])(x)
    assert relative(hvp, want @ v) < 1e-8


@pytest.mark.slow
def test_quad_vmap_and_an_infinite_limit():
    # ∫_a^∞ θ1 exp(θ0 x) dx = -θ1 exp(θ0 a) / θ0 for θ0 < 0; b = ∞ moves nothing
    quad = Quad(ExpHooked(), epsabs=0.0, epsrel=1e-12)
    thetas = jnp.array([[-0.7, 1.3], [-1.2, 0.4], [-0.5, 2.0]])
    a = jnp.array(-0.4)

    def closed(theta, a):
        return -theta[1] * jnp.exp(theta[0] * a) / theta[0]

    got = jax.jit(jax.vmap(jax.hessian(lambda t, a: quad(t, a, jnp.inf), (0, 1)), (0, None)))(
        thetas, a
    )
    want = jax.vmap(jax.hessian(closed, (0, 1)), (0, None))(thetas, a)
    for i in range(2):
        for j in range(2):
            assert relative(got[i][j], want[i][j]) < 1e-8
    assert jax.hessian(lambda b: quad(thetas[0], a, b))(jnp.inf) == 0


def test_quad_of_a_failed_integral_has_nan_second_derivatives():
    # the integral of exp(-x²) cos(s x) over [0, 1e6] with 1 subinterval fails
    quad = Quad(GaussianCosine(), limit=1, on_failure="nan")
    got = jax.hessian(lambda t: quad(t, 0.0, 1e6))(jnp.array([0.3, 0.2]))
    assert np.isnan(got).all()


# ---------------------------------------------------------------------- what is refused


def test_a_third_derivative_is_refused_naming_the_adapter():
    solve = OdeSolve(LinearHooked(), method="RK45")

    def loss(theta):
        return jnp.sum(solve(Y0, theta, TS) ** 2)

    # (reverse over the second order differentiates the rhs's own rules again, where the
    # direction moves ts: its host backward may be the first to say)
    third = "^OdeSolve differentiates to second order at most|^LinearHooked.backward runs on"
    with pytest.raises(TypeError, match=third):
        jax.jit(jax.jacrev(jax.jacrev(jax.grad(loss))))(THETA)  # (traced: refused at once)


@pytest.mark.slow
@pytest.mark.parametrize("sensitivity", ["adjoint", "forward", "steps"])
def test_forward_over_forward_and_third_derivatives_are_refused_by_name(sensitivity):
    solve = OdeSolve(Linear(), method="RK45", sensitivity=sensitivity)

    def loss(theta):
        return jnp.sum(solve(Y0, theta, TS) ** 2)

    v = jnp.array([1.0, -0.5])
    refused = [
        jax.jacfwd(jax.jacfwd(loss)),
        jax.jacrev(jax.jacfwd(loss)),
        jax.jacfwd(jax.hessian(loss)),
        jax.jacrev(jax.hessian(loss)),
        jax.jacrev(jax.jacrev(jax.grad(loss))),
        jax.grad(lambda t: jax.jvp(jax.grad(loss), (t,), (v,))[1][0]),
    ]
    # (the last two: reverse over the second order differentiates the rhs's own rules
    # again, where the direction moves ts; its host backward may be the first to say)
    third = "^OdeSolve differentiates to second order|^Linear.backward runs on the host"
    for i, derivative in enumerate(refused):
        for run in (derivative, jax.jit(derivative)):
            match = third if i >= 3 else "^OdeSolve differentiates to second order"
            with pytest.raises(TypeError, match=match):
                run(THETA)


QUAD_X = np.array([0.7, 1.3, -0.4, 1.1])  # (theta, a, b; float64 under x64)


def test_a_third_derivative_of_quad_is_refused_by_name():
    quad = Quad(ExpHooked())
    third = jax.jit(jax.jacfwd(jax.hessian(lambda x: quad(x[:2], x[2], x[3]))))
    with pytest.raises(TypeError, match="^Quad differentiates to second order at most"):
        third(QUAD_X)  # (traced: refused before anything runs)


@pytest.mark.slow
@pytest.mark.parametrize("integrand", [Exp(), ExpHooked()], ids=["differences", "hook"])
def test_every_way_into_a_third_derivative_of_quad_is_refused_by_name(integrand):
    quad = Quad(integrand)

    def loss(x):
        return quad(x[:2], x[2], x[3])

    v = jnp.array([1.0, -2.0, 0.5, 0.3])
    thirds = [
        jax.jacfwd(jax.hessian(loss)),
        jax.jacrev(jax.hessian(loss)),
        jax.jacrev(jax.jacrev(jax.grad(loss))),
        jax.jacfwd(jax.jacfwd(jax.jacfwd(loss))),
        jax.jacrev(jax.jacfwd(jax.jacfwd(loss))),
        jax.grad(lambda x: jax.jvp(jax.grad(loss), (x,), (v,))[1][0]),
    ]
    for third in thirds:
        for run in (third, jax.jit(third)):
            with pytest.raises(TypeError, match="^Quad differentiates to second order at most"):
                run(QUAD_X)
    in_b = jax.jacfwd(jax.hessian(lambda b: quad(QUAD_X[:2], QUAD_X[2], b)))  # (f_x's)
    with pytest.raises(TypeError, match="^Quad differentiates to second order at most"):
        in_b(QUAD_X[3])


class WrongHook(Linear):
    def backward_jvp(self, res, g, tangents):
        return None, np.zeros(2), None  # y's is (3,)


def test_a_wrong_second_derivative_hook_is_named():
    solve = OdeSolve(WrongHook(), method="RK45")
    with pytest.raises(Exception, match=r"WrongHook\.backward_jvp"):
        jax.hessian(lambda t: jnp.sum(solve(Y0, t, TS) ** 2))(THETA)


@pytest.mark.parametrize("sensitivity", ["adjoint", "forward", "steps"])
def test_no_output_times_have_zero_second_derivatives(sensitivity):
    """``ts`` empty: no output depends on anything, so every second derivative is 0 (#54).
    The Hessian's rule returned ``J v`` with one row where there are no output times, a
    ValueError from jnp.vectorize about core dimension 'k'."""
    solve = OdeSolve(Damped(), sensitivity=sensitivity)
    y0, theta, ts = jnp.array([1.0, 0.5]), jnp.array([0.3]), jnp.zeros(0)

    def loss(y0, theta):
        return jnp.sum(solve(y0, theta, ts))

    for transform in (lambda f: f, jax.jit):
        hessian = transform(jax.hessian(loss, (0, 1)))(y0, theta)
        for block, shape in zip(jax.tree.leaves(hessian), [(2, 2), (2, 1), (1, 2), (1, 1)]):
            np.testing.assert_array_equal(block, np.zeros(shape))
        _, hvp = transform(lambda v: jax.jvp(jax.grad(loss), (y0, theta), (v, theta)))(y0)
        np.testing.assert_array_equal(hvp, np.zeros(2))
