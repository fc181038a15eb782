"""sqrtm, logm, the Riccati equations and the discrete Lyapunov equation: values against
mpmath at high precision and closed forms, derivatives against closed forms and float64
central differences, every order, jit, vmap, check_adapter, and errors."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.linalg

import jaxbridge as jb
from jaxbridge.adapters.linalg import (
    ContinuousRiccatiSolve,
    DiscreteLyapunovSolve,
    DiscreteRiccatiSolve,
    MatrixLog,
    MatrixSqrt,
    logm,
    solve_continuous_are,
    solve_discrete_are,
    solve_discrete_lyapunov,
    sqrtm,
)
from jaxbridge.testing import check_adapter


@pytest.fixture(autouse=True)
def _precision():
    """float64 throughout (the float32 cases switch it off locally), mpmath at 40 digits
    (set here, not globally: other test modules share the process)."""
    with jax.enable_x64(True), mpmath.workdps(40):
        yield


# Nonsymmetric, with a complex pair of eigenvalues (2 ± 0.5i) and a real one (1.5).
A = np.array([[2.0, 0.5, 0.1], [-0.5, 2.0, 0.3], [0.2, -0.1, 1.5]])
RNG = np.random.default_rng(0)
E = RNG.normal(size=(3, 3))  # a direction
G = RNG.normal(size=(3, 3))  # a cotangent


def _mp(m):
    return mpmath.matrix(np.asarray(m, np.float64).tolist())


def _np(m):
    return np.array(m.tolist(), dtype=np.float64)


def _central(f, x, direction, h=1e-6):
    """Central difference of ``f`` along ``direction``, float64, with Richardson extrapolation
    (error O(h⁴) plus rounding ~eps/h)."""
    d1 = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
    d2 = (f(x + 2 * h * direction) - f(x - 2 * h * direction)) / (4 * h)
    return (4 * d1 - d2) / 3


def _close(actual, expected, rtol):
    expected = np.asarray(expected, np.float64)
    scale = float(np.max(np.abs(expected)))
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, atol=rtol * scale)


# ---------------------------------------------------------------- sqrtm and logm: values

_MP_FUNCTIONS = {"sqrtm": (sqrtm, mpmath.sqrtm), "logm": (logm, mpmath.logm)}


@pytest.mark.parametrize("name", list(_MP_FUNCTIONS))
def test_matrix_function_matches_mpmath(name):
    adapter, reference = _MP_FUNCTIONS[name]
    expected = _np(reference(_mp(A)))
    _close(adapter(A), expected, 1e-14)
    _close(jax.jit(adapter)(A), expected, 1e-14)
    with jax.enable_x64(False):
        got = adapter(A.astype(np.float32))
        assert got.dtype == np.float32
        _close(got, expected, 1e-6)


def test_identities_in_high_precision():
    """sqrtm(a)² = a and expm(logm(a)) = a, with the products and mpmath's expm at 40
    digits, so only the adapters' rounding is measured."""
    root = _mp(sqrtm(A))
    _close(_np(root * root), A, 1e-14)
    _close(_np(mpmath.expm(_mp(logm(A)))), A, 1e-14)


def test_a_symmetric_matrix_is_its_eigen_decomposition():
    """Closed form: f(a) = Q f(Λ) Qᵀ for symmetric a."""
    s = A + A.T
    lam, q = np.linalg.eigh(s)
    _close(sqrtm(s), q @ np.diag(np.sqrt(lam)) @ q.T, 1e-14)
    _close(logm(s), q @ np.diag(np.log(lam)) @ q.T, 1e-14)


# ------------------------------------------------------- sqrtm and logm: derivatives


def _frechet_symmetric(f, df, s, e):
    """Daleckii-Krein: L(s, e) = Q (F ∘ Qᵀ e Q) Qᵀ, F the divided differences of f on the
    eigenvalues of the symmetric s."""
    lam, q = np.linalg.eigh(s)
    li, lj = np.meshgrid(lam, lam, indexing="ij")
    same = np.isclose(li, lj)
    f_ij = np.where(same, df(li), (f(li) - f(lj)) / np.where(same, 1.0, li - lj))
    return q @ (f_ij * (q.T @ e @ q)) @ q.T


@pytest.mark.parametrize(
    "name, f, df",
    [("sqrtm", np.sqrt, lambda x: 0.5 / np.sqrt(x)), ("logm", np.log, lambda x: 1 / x)],
)
def test_derivatives_match_the_daleckii_krein_closed_form(name, f, df):
    adapter = _MP_FUNCTIONS[name][0]
    s = A + A.T
    expected = _frechet_symmetric(f, df, s, E)
    _close(jax.jvp(adapter, (s,), (E,))[1], expected, 1e-12)
    # the adjoint of L(s, ·) for symmetric s is L(s, ·) itself
    _close(jax.vjp(adapter, s)[1](E)[0], expected, 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_MP_FUNCTIONS))
def test_gradient_matches_finite_differences_and_catches_one_percent(name):
    adapter, _ = _MP_FUNCTIONS[name]
    got = jax.grad(lambda a: jnp.sum(adapter(a) * G))(A)
    forward = type(adapter)().forward
    for i, j in [(0, 0), (0, 2), (2, 1)]:
        unit = np.zeros((3, 3))
        unit[i, j] = 1
        expected = np.sum(_central(forward, A, unit) * G)
        assert abs(got[i, j] - expected) < 1e-8 * max(1.0, abs(expected))
        assert abs(1.01 * got[i, j] - expected) > 1e-8 * max(1.0, abs(expected))


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, derivatives",
    [
        ("sqrtm", [lambda x: 0.5 * x**-0.5, lambda x: -0.25 * x**-1.5, lambda x: 0.375 * x**-2.5]),
        ("logm", [lambda x: 1 / x, lambda x: -1 / x**2, lambda x: 2 / x**3]),
    ],
)
def test_every_order_on_a_1x1_matrix(name, derivatives):
    """First and second derivatives in both modes and the third mixed, against closed
    forms (each order of logm doubles the matrix the host sees: 1, 2, 4, 8)."""
    adapter = _MP_FUNCTIONS[name][0]

    def f(x):
        return adapter(x.reshape(1, 1))[0, 0]

    x = jnp.asarray(2.5)
    d1, d2, d3 = (d(2.5) for d in derivatives)
    assert np.isclose(jax.grad(f)(x), d1, rtol=1e-13)
    assert np.isclose(jax.jacfwd(f)(x), d1, rtol=1e-13)
    assert np.isclose(jax.hessian(f)(x), d2, rtol=1e-12)
    assert np.isclose(jax.jacfwd(jax.jacfwd(f))(x), d2, rtol=1e-12)
    assert np.isclose(jax.jacfwd(jax.grad(jax.grad(f)))(x), d3, rtol=1e-11)


@pytest.mark.slow
def test_sqrtm_second_derivative_matches_mpmath_diff():
    """d²/dt² sqrtm(a + t e)[0, 1] at t = 0 from jax.hessian, against mpmath's numerical
    derivative of mpmath.sqrtm at 40 digits."""
    a, e = A[:2, :2], E[:2, :2]
    expected = mpmath.diff(lambda t: mpmath.sqrtm(_mp(a) + t * _mp(e))[0, 1], 0, 2)
    hessian = jax.hessian(lambda m: sqrtm(m)[0, 1])(a)
    assert np.isclose(np.einsum("ij,ijkl,kl", e, hessian, e), float(expected), rtol=1e-10)


@pytest.mark.slow
def test_vmap_equals_a_loop():
    stack = np.stack([A, A.T, A + np.eye(3)])
    for adapter in (sqrtm, logm):
        got = jax.jit(jax.vmap(adapter))(stack)
        for k in range(3):
            _close(got[k], adapter(stack[k]), 1e-15)
    grads = jax.vmap(jax.grad(lambda a: jnp.sum(sqrtm(a) * G)))(stack)
    _close(grads[1], jax.grad(lambda a: jnp.sum(sqrtm(a) * G))(stack[1]), 1e-15)


# check_adapter's cheap checks on these fixed inputs (declared specs and dtypes, jit, and
# <g, J t> = <J^T g, t> between the two modes); the property suite runs every check on drawn
# inputs, in both precisions.
_CHEAP = ("specs", "jit", "transpose")


def test_check_adapter_on_matrix_functions():
    check_adapter(sqrtm, A, checks=_CHEAP)
    check_adapter(logm, A[:2, :2], checks=_CHEAP)


# ------------------------------------------------------------ Riccati and Stein equations


def _system():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 3))  # unstable in both senses, stabilisable through b
    b = rng.normal(size=(3, 2))
    m = rng.normal(size=(3, 3))
    q = m @ m.T + np.eye(3)
    r = np.array([[2.0, 0.3], [0.3, 1.0]])
    return a, b, q, r


def _care_residual(a, b, q, r, x):
    a, b, q, r, x = (_mp(m) for m in (a, b, q, r, x))
    return _np(a.T * x + x * a - x * b * mpmath.inverse(r) * b.T * x + q)


def _dare_residual(a, b, q, r, x):
    a, b, q, r, x = (_mp(m) for m in (a, b, q, r, x))
    gain = mpmath.inverse(r + b.T * x * b) * b.T * x * a
    return _np(a.T * x * a - x - a.T * x * b * gain + q)


@pytest.mark.parametrize(
    "solve, residual",
    [(solve_continuous_are, _care_residual), (solve_discrete_are, _dare_residual)],
    ids=["care", "dare"],
)
def test_riccati_residual_in_high_precision(solve, residual):
    a, b, q, r = _system()
    x = np.asarray(solve(a, b, q, r))
    scale = np.linalg.norm(a) ** 2 * np.linalg.norm(x) + np.linalg.norm(q)
    assert np.abs(residual(a, b, q, r, x)).max() < 1e-15 * scale
    np.testing.assert_array_equal(x, x.T)
    assert np.linalg.eigvalsh(x).min() > 0


def _care_scalar(a, b, q, r):
    return r * (a + np.sqrt(a**2 + b**2 * q / r)) / b**2


def _dare_scalar(a, b, q, r):
    p = r - a**2 * r - q * b**2
    return (-p + np.sqrt(p**2 + 4 * b**2 * q * r)) / (2 * b**2)


def _care_scalar_gradient(a, b, q, r):
    """Implicit differentiation of 2ax - b²x²/r + q = 0."""
    x = _care_scalar(a, b, q, r)
    fx = 2 * a - 2 * b**2 * x / r
    return -np.array([2 * x, -2 * b * x**2 / r, 1.0, b**2 * x**2 / r**2]) / fx


@pytest.mark.slow
@pytest.mark.parametrize("a", [1.3])  # unstable: the feedback must stabilise it
def test_scalar_care_closed_form_and_its_gradient(a):
    b, q, r = 0.8, 1.5, 0.6
    args = [np.array([[v]]) for v in (a, b, q, r)]
    x = solve_continuous_are(*args)
    assert np.isclose(x[0, 0], _care_scalar(a, b, q, r), rtol=1e-14)
    grads = jax.grad(lambda *m: solve_continuous_are(*m)[0, 0], argnums=(0, 1, 2, 3))(*args)
    expected = _care_scalar_gradient(a, b, q, r)
    np.testing.assert_allclose([g[0, 0] for g in grads], expected, rtol=1e-12)
    # second derivative in a: jax.hessian against mpmath's derivative of the closed form
    second = jax.hessian(lambda s: solve_continuous_are(s.reshape(1, 1), *args[1:])[0, 0])(
        jnp.asarray(a)
    )
    mp_x = lambda s: r * (s + mpmath.sqrt(s**2 + b**2 * q / r)) / b**2  # noqa: E731
    assert np.isclose(second, float(mpmath.diff(mp_x, a, 2)), rtol=1e-11)


@pytest.mark.slow
@pytest.mark.parametrize("a", [1.7])  # unstable: the feedback must stabilise it
def test_scalar_dare_closed_form_and_its_derivatives(a):
    b, q, r = 0.8, 1.5, 0.6
    args = [np.array([[v]]) for v in (a, b, q, r)]
    assert np.isclose(solve_discrete_are(*args)[0, 0], _dare_scalar(a, b, q, r), rtol=1e-14)

    def mp_x(a, b, q, r):
        p = r - a**2 * r - q * b**2
        return (-p + mpmath.sqrt(p**2 + 4 * b**2 * q * r)) / (2 * b**2)

    grads = jax.grad(lambda *m: solve_discrete_are(*m)[0, 0], argnums=(0, 1, 2, 3))(*args)
    values = [mpmath.mpf(v) for v in (a, b, q, r)]
    for k in range(4):

        def moved(t, k=k):
            return mp_x(*[t if i == k else v for i, v in enumerate(values)])

        expected = mpmath.diff(moved, values[k])
        assert np.isclose(grads[k][0, 0], float(expected), rtol=1e-12)
    second = jax.jacfwd(jax.jacfwd(lambda s: solve_discrete_are(s.reshape(1, 1), *args[1:])))(
        jnp.asarray(a)
    )
    expected = mpmath.diff(lambda t: mp_x(t, *values[1:]), values[0], 2)
    assert np.isclose(second[0, 0], float(expected), rtol=1e-11)


def test_dare_with_a_tiny_a_is_its_q_and_its_check_passes():
    """With ``a`` ~ 1e-99 the solution is ``q`` (the other terms are quadratic in ``a``).
    The property suite drew it: the finite differences of the gradient check move ``b`` and
    ``r`` to closed loops that are stable but far from normal (an entry of 7.7e16), where
    SciPy's Lyapunov solve in the Newton refinement warns of its condition number (an error
    under this suite's filterwarnings) although its residual is at rounding."""
    a = np.full((2, 2), 2.0069659195572395e-99)
    b, q = np.array([[0.0], [0.69921875]]), np.array([[0.75, 0.25], [0.25, 0.75]])
    r = np.full((1, 1), 0.5)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(solve_discrete_are(a, b, q, r), q)
        check_adapter(solve_discrete_are, a, b, q, r, seed=0, checks=("grad",))


def test_care_whose_scipy_start_rounding_ruined_restarts_from_zero():
    """SciPy returns an entry of -1.4e17 for this system (a 1e-51 off ``a``'s diagonal
    spoils its pencil), and a Newton step from there lands on a destabilising solution; ``a``
    is stable, so the refinement restarts from zero. The property suite drew it. The
    solution decouples: the second state is uncontrolled (``x22 = q22 / 1``), the first a
    scalar equation ``-x - 6 x^2 + 1/2 = 0`` (``b R^-1 b^T``'s entry is 4 * 3/2)."""
    a = np.array([[-0.5, -3.594266648509442e-51], [-3.594266648509442e-51, -0.5]])
    b, q = np.array([[0.0, 2.0], [0.0, 0.0]]), np.eye(2) / 2
    r = np.array([[0.75, 0.25], [0.25, 0.75]])
    with jax.enable_x64(True):
        x = np.asarray(solve_continuous_are(a, b, q, r))
    expected = np.diag([(np.sqrt(13.0) - 1) / 12, 0.5])
    np.testing.assert_allclose(x, expected, rtol=1e-14, atol=1e-30)


@pytest.mark.parametrize("r", [0.5 - 1e-9, 0.5 + 1e-8, 0.51, 0.6])
def test_care_refinement_does_not_stop_on_a_large_step_that_shrinks_slowly(r):
    """From SciPy's start here (``x11 = 0`` where it is 1/2) Newton's steps are 34.9, then
    34.4, then 1e-51: a step that stops halving is no sign of rounding while it is large
    (the refinement used to return ``x11 = 34.9`` there, silently). The first state is
    uncontrolled (``x11 = q11 = 1/2``), the second a scalar equation
    ``-x - (2.25 / r) x^2 + 1/2 = 0``."""
    a = np.array([[-0.5, -3.594266648509442e-51], [-3.594266648509442e-51, -0.5]])
    b, q = np.array([[0.0], [1.5]]), np.eye(2) / 2
    with jax.enable_x64(True):
        x = np.asarray(solve_continuous_are(a, b, q, np.array([[r]])))
    s = 2.25 / r
    expected = np.diag([0.5, (np.sqrt(1 + 2 * s) - 1) / (2 * s)])
    np.testing.assert_allclose(x, expected, rtol=1e-14, atol=1e-30)


@pytest.mark.parametrize("solve", [solve_continuous_are, solve_discrete_are], ids=["care", "dare"])
def test_riccati_gradients_match_finite_differences(solve):
    a, b, q, r = _system()
    args = (a, b, q, r)
    grads = jax.grad(lambda *m: jnp.sum(solve(*m) * G), argnums=(0, 1, 2, 3))(*args)
    forward = type(solve)().forward
    for k, direction in enumerate(
        [E, RNG.normal(size=(3, 2)), E + E.T, np.array([[1.0, 0.5], [0.5, -1.0]])]
    ):

        def along(m, k=k):
            return forward(*args[:k], m, *args[k + 1 :])

        expected = np.sum(_central(along, args[k], direction) * G)
        got = np.sum(np.asarray(grads[k]) * direction)
        assert abs(got - expected) < 1e-7 * abs(expected)
        assert abs(1.01 * got - expected) > 1e-7 * abs(expected)


def test_discrete_lyapunov_residual_gradient_and_linearity():
    a = 0.4 * E
    q = G
    x = solve_discrete_lyapunov(a, q)
    residual = _np(_mp(x) - _mp(a) * _mp(x) * _mp(a).T - _mp(q))
    assert np.abs(residual).max() < 1e-14 * np.abs(x).max()
    grads = jax.grad(lambda a, q: jnp.sum(solve_discrete_lyapunov(a, q) * G), (0, 1))(a, q)
    forward = DiscreteLyapunovSolve().forward
    for k, direction in enumerate([A, E.T]):

        def along(m, k=k):
            return forward(*(a, q)[:k], m, *(a, q)[k + 1 :])

        expected = np.sum(_central(along, (a, q)[k], direction) * G)
        assert abs(np.sum(grads[k] * direction) - expected) < 1e-8 * abs(expected)
    transposed = jax.linear_transpose(lambda q: solve_discrete_lyapunov(a, q), q)(G)[0]
    _close(transposed, grads[1], 1e-14)


def test_riccati_vmap_and_jit():
    a, b, q, r = _system()
    stack = np.stack([a, a + 0.1, a.T])
    got = jax.jit(jax.vmap(solve_discrete_are, (0, None, None, None)))(stack, b, q, r)
    for k in range(3):
        _close(got[k], solve_discrete_are(stack[k], b, q, r), 1e-15)


@pytest.mark.slow
def test_check_adapter_on_equations():
    a, b, q, r = _system()
    small = (a[:2, :2], b[:2, :1], q[:2, :2], r[:1, :1])
    check_adapter(solve_continuous_are, *small, checks=_CHEAP)
    check_adapter(solve_discrete_are, *small, checks=_CHEAP)
    check_adapter(solve_discrete_lyapunov, 0.4 * E[:2, :2], G[:2, :2], checks=_CHEAP)
    with jax.enable_x64(False):  # float32 inputs (the property suite runs float64 alone)
        single = tuple(m.astype(np.float32) for m in small)
        check_adapter(solve_continuous_are, *single, checks=(*_CHEAP, "grad"))
        check_adapter(solve_discrete_are, *single, checks=(*_CHEAP, "grad"))


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "adapter, a, message",
    [
        (sqrtm, np.diag([-1.0, 2.0]), "sqrtm: matrix 'a' has the eigenvalue -1 on the closed"),
        (logm, np.diag([0.0, 2.0]), "logm: matrix 'a' has the eigenvalue 0 on the closed"),
        (sqrtm, np.array([[np.nan, 0], [0, 1]]), "matrix 'a' has non-finite entries"),
    ],
)
def test_no_real_principal_value_is_an_error_or_nan(adapter, a, message):
    with pytest.raises(np.linalg.LinAlgError, match=message):
        adapter(a)
    assert np.isnan(type(adapter)(on_failure="nan")(a)).all()


@pytest.mark.parametrize(
    "solve, args, message",
    [
        (
            solve_continuous_are,
            (np.eye(2), np.zeros((2, 1)), np.eye(2), np.eye(1)),
            "solve_continuous_are: SciPy found no solution",
        ),
        (
            solve_discrete_are,
            (2 * np.eye(2), np.zeros((2, 1)), np.eye(2), np.eye(1)),
            "solve_discrete_are: SciPy found no solution",
        ),
        (
            solve_discrete_lyapunov,
            (np.diag([2.0, 0.5]), np.eye(2)),
            "solve_discrete_lyapunov: the equation x = a x aᵀ \\+ q is singular",
        ),
    ],
    ids=["care", "dare", "stein"],
)
def test_unsolvable_equation_is_an_error_or_nan(solve, args, message):
    with pytest.raises(np.linalg.LinAlgError, match=message):
        solve(*args)
    assert np.isnan(type(solve)(on_failure="nan")(*args)).all()


def test_bad_parameter_and_shape_are_named():
    with pytest.raises(ValueError, match="MatrixSqrt: parameter 'on_failure'"):
        MatrixSqrt(on_failure="zero")
    with pytest.raises(ValueError, match="MatrixLog: parameter 'on_failure'"):
        MatrixLog(on_failure=None)
    with pytest.raises(ValueError, match="MatrixLog"):
        logm(np.ones((2, 3)))
    with pytest.raises(ValueError, match="ContinuousRiccatiSolve"):
        ContinuousRiccatiSolve()(np.eye(2), np.ones((3, 1)), np.eye(2), np.eye(1))
    no_inputs = (-np.eye(2) / 2, np.zeros((2, 0)), np.eye(2), np.zeros((0, 0)))
    for solve, lyapunov in [
        (ContinuousRiccatiSolve(), "LyapunovSolve"),
        (DiscreteRiccatiSolve(), "DiscreteLyapunovSolve"),
    ]:
        with pytest.raises(ValueError, match=rf"'b' has no columns .* use {lyapunov}\."):
            solve(*no_inputs)


@pytest.mark.parametrize("function", [sqrtm, logm, solve_discrete_lyapunov])
def test_empty_matrices_give_empty_results_and_derivatives(function):
    """n = 0 in every mode (the Lyapunov check and the Fréchet block reduced over nothing)."""
    with jax.enable_x64(True):
        args = (jnp.zeros((0, 0)),) * (2 if function is solve_discrete_lyapunov else 1)
        loss = lambda *a: function(*a).sum()  # noqa: E731
        for result in (function(*args), jax.jit(function)(*args)):
            assert result.shape == (0, 0)
        for grads in (jax.grad(loss, range(len(args)))(*args), jax.jit(jax.grad(loss))(*args)):
            assert all(g.shape == (0, 0) for g in jax.tree.leaves(grads))
        assert jax.jvp(function, args, args)[1].shape == (0, 0)
        assert jax.jacfwd(function)(*args).shape == (0, 0, 0, 0)


# SciPy's logm warns that this input is nearly singular; its value is still right
@pytest.mark.filterwarnings("ignore:The logm input matrix may be nearly singular")
def test_logm_derivative_scipy_cannot_compute_is_a_clear_error_in_both_modes():
    """logm(diag(1, 1e-300)) is SciPy's; its derivative is logm of the Fréchet block
    [[a, e], [0, a]], on which SciPy's own intermediate results overflow. Both modes, eager
    and under jit, refuse it naming logm, not with SciPy's "array must not contain infs or
    NaNs"; NaN with on_failure="nan" (#54)."""
    with jax.enable_x64(True):
        a = jnp.diag(jnp.array([1.0, 1e-300]))
        np.testing.assert_allclose(logm(a), scipy.linalg.logm(np.asarray(a)), rtol=1e-14)
        for adapter in (logm, MatrixLog(on_failure="nan")):
            loss = lambda a, f=adapter: jnp.sum(f(a))  # noqa: E731
            tangent = lambda a, f=adapter: jax.jvp(f, (a,), (jnp.ones_like(a),))[1]  # noqa: E731
            for derivative in (jax.grad(loss), jax.jit(jax.grad(loss)), tangent, jax.jit(tangent)):
                if adapter is logm:
                    with (
                        pytest.raises(np.linalg.LinAlgError, match="logm: SciPy failed"),
                        jb.host_errors(),
                    ):
                        jax.block_until_ready(derivative(a))
                else:
                    assert np.isnan(derivative(a)).all()


def test_the_frechet_scale_is_an_exact_power_of_two_with_no_bitcast():
    """The Fréchet block's scale (a power of 2 near size(a) / size(e)) is exact, and built
    without ``frexp``/``ldexp`` (float64 bitcasts, which a TPU's compiler refused for
    ``MatrixLog``) or ``exp2`` (inexact on a TPU, where the block then differed)."""
    from jaxbridge.adapters.linalg._matrix_functions import _power_of_two

    with jax.enable_x64(True):
        for dtype, smallest, largest in [(np.float64, -1022, 1023), (np.float32, -126, 127)]:
            k = np.arange(smallest, largest + 1)
            got = np.asarray(_power_of_two(jnp.asarray(k, dtype)))
            np.testing.assert_array_equal(got, np.ldexp(dtype(1), k).astype(dtype))
        a = np.array([[2.0, 0.5], [0.25, 3.0]])
        program = jax.make_jaxpr(lambda a, t: jax.jvp(logm, (a,), (t,)))(a, 1e-9 * a)
    text = str(program)
    assert "bitcast_convert_type" not in text and "exp2" not in text
