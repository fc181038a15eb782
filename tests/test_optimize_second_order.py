"""Second derivatives through the implicit solvers (``Root``, ``Minimize``, ``MinimizeBounded``,
``MinimizeConstrained``, ``LeastSquares``): ``jax.hessian``, ``jacfwd(grad)``,
``jacrev(jacrev)``, ``jacfwd(jacfwd)`` and Hessian-vector products of a function of the
solution, under ``jit`` and ``vmap``, against closed forms written in JAX (the minimiser of
a quadratic, ``A(θ)⁻¹ b(θ)``; a triangular polynomial system; a linear least-squares fit;
the KKT system of a quadratic with a linear constraint) to 1e-8 relative; and the errors
where no second derivative can be had."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters.optimize import (
    LeastSquares,
    Minimize,
    MinimizeBounded,
    MinimizeConstrained,
    OptimizeError,
    Root,
)

RTOL = 1e-8

# --------------------------------------------------------------------------- problems


def a_matrix(m, t):
    """``A(θ)``, symmetric positive definite near the θ used here."""
    return m.array([[2 + t[0] ** 2, t[1], 0.0], [t[1], 3 + m.sin(t[0]), 0.5], [0.0, 0.5, 2.0]])


def b_vector(m, t):
    return m.array([t[0] * t[1], m.exp(t[1]), m.cos(t[0] + t[1])])


# ∂A/∂θ₀, ∂A/∂θ₁ and ∂b/∂θ₀, ∂b/∂θ₁, by hand (the objective's host rules)
def _da(t):
    return [
        np.array([[2 * t[0], 0, 0], [0, np.cos(t[0]), 0], [0, 0, 0]]),
        np.array([[0, 1.0, 0], [1.0, 0, 0], [0, 0, 0]]),
    ]


def _db(t):
    s = -np.sin(t[0] + t[1])
    return [np.array([t[1], 0, s]), np.array([t[0], np.exp(t[1]), s])]


class Quadratic(jb.Adapter):
    """``½ xᵀA(θ)x - b(θ)ᵀx``, minimised at ``A(θ)⁻¹ b(θ)``; exact gradient, no hooks."""

    signature = "(n),(p)->()"

    def forward(self, x, t):
        return 0.5 * x @ a_matrix(np, t) @ x - b_vector(np, t) @ x

    def backward(self, res, g):
        x, t, _ = res
        gx = a_matrix(np, t) @ x - b_vector(np, t)
        gt = np.array([0.5 * x @ da @ x - db @ x for da, db in zip(_da(t), _db(t))])
        return g * gx, g * gt


class HookedQuadratic(Quadratic):
    """The same with an exact ``hessian`` hook."""

    def hessian(self, x, t):
        hxt = np.stack([da @ x - db for da, db in zip(_da(t), _db(t))], -1)
        return a_matrix(np, t), hxt


def quadratic_minimiser(t):
    return jnp.linalg.solve(a_matrix(jnp, t), b_vector(jnp, t))


def loss(x):
    """A nonlinear function of the solution, so that its own curvature enters too."""
    return jnp.sum(jnp.sin(x)) + 0.5 * jnp.sum(x**2) * x[0]


THETA = np.array([0.3, 0.7])  # (NumPy: float64 under x64 when used)


def close(got, expected, rtol=RTOL):
    expected = np.asarray(expected)
    np.testing.assert_allclose(got, expected, rtol=0, atol=rtol * np.abs(expected).max())


# ---------------------------------------------------------------------------- Minimize


@pytest.mark.parametrize(
    "objective",
    [Quadratic(), pytest.param(HookedQuadratic(), marks=pytest.mark.slow)],
    ids=["gradient", "hook"],
)
def test_minimize_hessian_every_composition(objective):
    solver = Minimize(objective)
    with jax.enable_x64(True):
        x0 = jnp.zeros(3)

        def through(t):
            return loss(solver(x0, t))

        def reference(t):
            return loss(quadratic_minimiser(t))

        expected = jax.jit(jax.hessian(reference))(THETA)
        v = jnp.array([0.4, -1.3])
        # one program: every composition, compiled together
        got = jax.jit(
            lambda t: (
                jax.hessian(through)(t),
                jax.jacrev(jax.jacrev(through))(t),
                jax.jacfwd(jax.jacfwd(through))(t),
                jax.jvp(jax.grad(through), (t,), (v,))[1],
            )
        )(THETA)
        for h in got[:3]:
            close(h, expected)
        close(got[3], expected @ v)
        # the hook's Hessian differenced once, the gradient's twice: both to 1e-10 or so
        assert np.abs(got[0] - expected).max() < 1e-9 * np.abs(expected).max()


@pytest.mark.slow
def test_minimize_hessian_under_vmap():
    solver = Minimize(Quadratic())
    with jax.enable_x64(True):
        thetas = jnp.array([[0.3, 0.7], [-0.5, 0.2], [1.1, -0.4]])

        def through(t):
            return loss(solver(jnp.zeros(3), t))

        got = jax.jit(jax.vmap(jax.hessian(through)))(thetas)
        expected = jax.jit(jax.vmap(jax.hessian(lambda t: loss(quadratic_minimiser(t)))))(thetas)
        close(got, expected)


def test_the_gradient_makes_no_second_order_call():
    """A first-order derivative never computes second derivatives (the first-order rules are
    one solve with the saved Jacobians): the user's function is called by SciPy's loop and
    the refinement only."""

    class Counted(Quadratic):
        calls = [0]

        def backward(self, res, g):
            Counted.calls[0] += 1
            return super().backward(res, g)

    solver = Minimize(Counted())
    with jax.enable_x64(True):
        x0 = jnp.zeros(3)
        value_only = jax.jit(lambda t: loss(solver(x0, t)))
        gradient = jax.jit(jax.grad(lambda t: loss(solver(x0, t))))
        tangent = jax.jit(lambda t: jax.jvp(lambda t: loss(solver(x0, t)), (t,), (THETA,))[1])
        calls = []
        for f in (value_only, gradient, tangent):
            f(THETA)  # (compiled)
            Counted.calls[0] = 0
            f(THETA)
            calls.append(Counted.calls[0])
        # a differentiated call takes accurate second derivatives at the solution (one
        # Hessian, as before); neither mode asks for anything beyond that
        assert calls[1] == calls[2], calls
        hvp = jax.jit(lambda t: jax.jvp(jax.grad(lambda t: loss(solver(x0, t))), (t,), (t,))[1])
        hvp(THETA)
        Counted.calls[0] = 0
        hvp(THETA)
        assert calls[1] < Counted.calls[0] <= calls[1] + 60, (calls, Counted.calls[0])


# ----------------------------------------------------------------------------- Root


class Triangular(jb.Adapter):
    """``(x₀³ - θ₀, x₀² x₁ - θ₁², x₂ - θ₂ x₀ x₁)``: the root is ``x₀ = θ₀^⅓``, ``x₁ =
    θ₁² / x₀²``, ``x₂ = θ₂ x₀ x₁``. Exact ``backward``, no ``jvp``."""

    signature = "(n),(p)->(n)"

    def forward(self, x, t):
        return np.array([x[0] ** 3 - t[0], x[0] ** 2 * x[1] - t[1] ** 2, x[2] - t[2] * x[0] * x[1]])

    def backward(self, res, g):
        x, t, _ = res
        jx = np.array(
            [
                [3 * x[0] ** 2, 0, 0],
                [2 * x[0] * x[1], x[0] ** 2, 0],
                [-t[2] * x[1], -t[2] * x[0], 1],
            ]
        )
        jt = np.array([[-1, 0, 0], [0, -2 * t[1], 0], [0, 0, -x[0] * x[1]]])
        return g @ jx, g @ jt


class TriangularWithJvp(Triangular):
    """The same with a host ``jvp`` (forward over forward then differences it once)."""

    def jvp(self, res, tangents):
        x, t, _ = res
        dx = np.zeros(3) if tangents[0] is None else tangents[0]
        dt = np.zeros(3) if tangents[1] is None else tangents[1]
        g = np.eye(3)
        jx = np.stack([self.backward(res, row)[0] for row in g])
        jt = np.stack([self.backward(res, row)[1] for row in g])
        return jx @ dx + jt @ dt


def triangular_root(t):
    x0 = jnp.cbrt(t[0])
    x1 = t[1] ** 2 / x0**2
    return jnp.array([x0, x1, t[2] * x0 * x1])


@pytest.mark.parametrize(
    "residual",
    [Triangular(), pytest.param(TriangularWithJvp(), marks=pytest.mark.slow)],
    ids=["plain", "jvp"],
)
def test_root_hessian_every_composition(residual):
    solver = Root(residual)
    with jax.enable_x64(True):
        theta = jnp.array([2.0, 0.8, -0.6])
        x0 = jnp.array([1.0, 1.0, 0.0])

        def through(t):
            return loss(solver(x0, t))

        expected = jax.jit(jax.hessian(lambda t: loss(triangular_root(t))))(theta)
        got = jax.jit(
            lambda t: (
                jax.hessian(through)(t),
                jax.jacrev(jax.jacrev(through))(t),
                jax.jacfwd(jax.jacfwd(through))(t),
            )
        )(theta)
        for h in got:
            close(h, expected)


# --------------------------------------------------------------------- LeastSquares

TIMES = np.linspace(0.0, 1.0, 6)


class Line(jb.Adapter):
    """``X(θ) β - y(θ)`` with rows ``(1, tᵢ + θ₀ tᵢ²)`` and ``yᵢ = exp(θ₁ tᵢ) + θ₂ sin(3tᵢ)``:
    linear in ``β``, nonlinear in ``θ``."""

    signature = "(n),(p)->(m)"

    def output_specs(self, beta, t):
        return jax.ShapeDtypeStruct((len(TIMES),), beta.dtype)

    def forward(self, beta, t):
        return design(np, t) @ beta - observations(np, t)

    def backward(self, res, g):
        beta, t, _ = res
        gt = np.array(
            [
                g @ (TIMES**2 * beta[1]),
                -g @ (TIMES * np.exp(t[1] * TIMES)),
                -g @ np.sin(3 * TIMES),
            ]
        )
        return design(np, t).T @ g, gt


def design(m, t):
    return m.stack([m.ones(len(TIMES)), TIMES + t[0] * TIMES**2], 1)


def observations(m, t):
    return m.exp(t[1] * TIMES) + t[2] * m.sin(3 * TIMES)


def least_squares_fit(t):
    x = design(jnp, t)
    return jnp.linalg.solve(x.T @ x, x.T @ observations(jnp, t))


def test_least_squares_hessian():
    solver = LeastSquares(Line())
    with jax.enable_x64(True):
        theta = jnp.array([0.4, 0.9, 0.3])

        def through(t):
            return loss(solver(jnp.zeros(2), t))

        expected = jax.jit(jax.hessian(lambda t: loss(least_squares_fit(t))))(theta)
        got = jax.jit(lambda t: (jax.hessian(through)(t), jax.jacrev(jax.jacrev(through))(t)))(
            theta
        )
        for h in got:
            close(h, expected)


# ------------------------------------------------------------------ MinimizeBounded


def test_bounded_hessian_in_theta_and_the_active_bound():
    """``x₂`` held at its upper bound ``u₂``; the free ones solve ``A_FF x_F = b_F - A_F2 u₂``.
    Second derivatives in ``θ`` and in ``u`` (the inactive bounds' are zero)."""
    solver = MinimizeBounded(Quadratic())
    with jax.enable_x64(True):
        lower = jnp.full(3, -5.0)
        upper = jnp.array([5.0, 5.0, 0.05])

        def reference(t, u):
            a, b = a_matrix(jnp, t), b_vector(jnp, t)
            free = jnp.linalg.solve(a[:2, :2], b[:2] - a[:2, 2] * u[2])
            return loss(jnp.concatenate([free, u[2:]]))

        def through(t, u):
            return loss(solver(jnp.zeros(3), t, lower, u))

        x = solver(jnp.zeros(3), THETA, lower, upper)
        assert x[2] == upper[2] and quadratic_minimiser(THETA)[2] > upper[2]  # (active)
        expected = jax.jit(jax.hessian(reference, (0, 1)))(THETA, upper)
        got = jax.jit(jax.hessian(through, (0, 1)))(THETA, upper)
        for row, row_expected in zip(got, expected):
            for h, e in zip(row, row_expected):
                close(h, e, RTOL * max(1.0, float(np.abs(np.asarray(expected[0][0])).max())))
        assert np.abs(np.asarray(got[1][1])[:, :2]).max() == 0  # (inactive bounds)


# -------------------------------------------------------------- MinimizeConstrained


class Plane(jb.Adapter):
    """``sin θ₀ - (x₀ + 2x₁ - x₂)`` (one equality, or one inequality ``>= 0``)."""

    signature = "(n),(p)->(m)"

    def output_specs(self, x, t):
        return jax.ShapeDtypeStruct((1,), x.dtype)

    def forward(self, x, t):
        return np.array([np.sin(t[0]) - (x[0] + 2 * x[1] - x[2])])

    def backward(self, res, g):
        _, t, _ = res
        return -g[0] * np.array([1.0, 2.0, -1.0]), g[0] * np.array([np.cos(t[0]), 0.0])


def plane_minimiser(t):
    """The KKT system of the quadratic on the plane, solved in JAX."""
    c = jnp.array([1.0, 2.0, -1.0])
    kkt = jnp.block([[a_matrix(jnp, t), -c[:, None]], [c[None], jnp.zeros((1, 1))]])
    rhs = jnp.concatenate([b_vector(jnp, t), jnp.sin(t[:1])])
    return jnp.linalg.solve(kkt, rhs)[:3]


@pytest.mark.parametrize("role", ["eq", pytest.param("ineq", marks=pytest.mark.slow)])
def test_constrained_hessian(role):
    solver = MinimizeConstrained(Quadratic(), **{role: Plane()})
    with jax.enable_x64(True):
        # (the unconstrained minimiser violates the inequality: it is active)
        c_free = jnp.sin(THETA[0]) - quadratic_minimiser(THETA) @ jnp.array([1.0, 2.0, -1.0])
        assert float(c_free) < 0

        def through(t):
            return loss(solver(jnp.zeros(3), t))

        expected = jax.jit(jax.hessian(lambda t: loss(plane_minimiser(t))))(THETA)
        got = jax.jit(lambda t: (jax.hessian(through)(t), jax.jacfwd(jax.jacfwd(through))(t)))(
            THETA
        )
        for h in got:
            close(h, expected)


# ------------------------------------------------------------------------ refusals


class Noisy(jb.Adapter):
    """``½(x - θ)² + x⁴/4`` whose gradient carries noise of 1e-10 (as an inner solve's
    rounding would): the first derivatives are good to 1e-7, but differences of the gradient
    cannot give its second derivatives (the solution's second ones)."""

    signature = "(n),(p)->()"

    def forward(self, x, t):
        return np.sum(0.5 * (x - t) ** 2 + x**4 / 4)

    def backward(self, res, g):
        x, t, _ = res
        noise = 1e-10 * np.sin(1e9 * x + 3e8 * t)
        return g * (x - t + x**3 + noise), -g * (x - t + noise)


def test_no_second_derivative_from_a_rough_gradient():
    with jax.enable_x64(True):
        x0, theta = jnp.array([0.5]), jnp.array([0.7])

        def through(solver):
            return lambda t: jnp.sum(jnp.sin(solver(x0, t)))

        # the reference: x + x³ = θ, x' = 1 / (1 + 3x²)
        x = float(np.real([r for r in np.roots([1, 0, 1, -0.7]) if abs(r.imag) < 1e-12][0]))
        solver = Minimize(Noisy())
        gradient = jax.grad(through(solver))(theta)
        np.testing.assert_allclose(gradient, np.cos(x) / (1 + 3 * x**2), rtol=1e-6)
        with pytest.raises(Exception, match="not smooth") as caught:
            with jb.host_errors():
                jax.hessian(through(solver))(theta)
        assert isinstance(caught.value, OptimizeError) and "Noisy" in str(caught.value)
        nan = Minimize(Noisy(), on_failure="nan")
        assert np.isnan(jax.hessian(through(nan))(theta)).all()


def test_third_order_is_refused_by_name():
    solver = Minimize(Quadratic())
    with jax.enable_x64(True), pytest.raises(TypeError, match="^Minimize differentiates to"):
        jax.jit(jax.jacfwd(jax.hessian(lambda t: loss(solver(jnp.zeros(3), t)))))(THETA)


@pytest.mark.slow
def test_every_way_into_a_third_order_is_refused_by_name():
    """Every way into a third derivative (each of the four second-order rules differentiated
    again) names the solver the user called and what it supports, under jit and outside."""
    with jax.enable_x64(True):
        x0 = jnp.zeros(3)
        theta = jnp.asarray(THETA)
        v = jnp.array([0.4, -1.3])
        for solver in (Minimize(Quadratic()), MinimizeConstrained(Quadratic(), eq=Plane())):
            owner = type(solver).__name__

            def through(t, solver=solver):
                return loss(solver(x0, t))

            thirds = [
                jax.jacfwd(jax.hessian(through)),  # the adjoint's jvp, then its jvp
                jax.jacrev(jax.jacrev(jax.grad(through))),  # the adjoint's backward's
                jax.jacfwd(jax.jacfwd(jax.jacfwd(through))),  # the tangent's jvp's
                jax.grad(lambda t: jax.jvp(jax.grad(through), (t,), (v,))[1][0]),
                jax.jit(jax.jacrev(jax.jacfwd(jax.jacfwd(through)))),  # the tangent's jvp's
            ]
            for third in thirds:
                with pytest.raises(TypeError, match=f"^{owner} differentiates to second order"):
                    third(theta)
