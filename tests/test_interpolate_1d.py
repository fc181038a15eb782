"""The 1-D interpolants (InterpSpline/make_interp_spline, CubicSpline, PchipInterpolator,
Akima1DInterpolator): values against SciPy's objects, derivatives in the queries against
SciPy's ``.derivative()`` to third order, in the data against SciPy's interpolant of the
unit vectors (exact for the linear ones) or central differences of SciPy in float64,
polynomial exactness, the transposed B-spline system against the columns, batching, and
errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.interpolate as si
from _interpolate_cases import quick_and_slow, scipy_object

from jaxbridge.adapters.interpolate import (
    Akima1DInterpolator,
    CubicSpline,
    InterpSpline,
    PchipInterpolator,
    _one_d,
    make_interp_spline,
)
from jaxbridge.adapters.interpolate._linear import bspline_transpose

RNG = np.random.default_rng(7)
N, M = 11, 40
X = np.sort(RNG.uniform(0.0, 10.0, N))
Y = np.sin(X) + 0.3 * X
XQ = np.concatenate([RNG.uniform(-1.0, 11.0, M - 3), X[[2, 5, 9]]])  # knots too
W = RNG.normal(size=M)


@pytest.fixture(autouse=True)
def _precision():
    with jax.enable_x64(True):
        yield


LINEAR = [
    make_interp_spline,
    InterpSpline(k=1),
    InterpSpline(k=2),
    InterpSpline(k=5),
    InterpSpline(k=3, bc_type="natural"),
    InterpSpline(k=3, bc_type="clamped"),
    CubicSpline(),
    CubicSpline("natural"),
    CubicSpline("clamped"),
]
HERMITE = [
    PchipInterpolator(),
    Akima1DInterpolator(extrapolate=True),
    Akima1DInterpolator("makima", extrapolate=True),
]
ALL = LINEAR + HERMITE


def _id(adapter):
    return repr(adapter).replace(" ", "")


@pytest.mark.parametrize("adapter", ALL, ids=_id)
def test_values_are_scipys(adapter):
    reference = scipy_object(adapter, X, Y)
    for nu in range(4):
        spline = type(adapter)(**{**adapter.__dict__, "nu": nu})
        np.testing.assert_array_equal(jax.jit(spline)(X, Y, XQ), reference(XQ, nu))


@pytest.mark.parametrize("adapter", quick_and_slow(ALL, {0, 6}, _id))
def test_query_derivatives_to_third_order_are_scipys(adapter):
    """grad, jacfwd and their nestings in xq equal SciPy's derivative splines, also at the
    knots (the one-sided derivative SciPy gives there)."""
    reference = scipy_object(adapter, X, Y)

    def f(q):
        return adapter(X, Y, q)

    first_rev = jax.vmap(jax.grad(lambda q: f(q[None])[0]))(XQ)
    first_fwd = jnp.diagonal(jax.jacfwd(f)(XQ))
    second = jax.vmap(jax.grad(jax.grad(lambda q: f(q[None])[0])))(XQ)
    third = jax.vmap(jax.jacfwd(jax.jacrev(jax.grad(lambda q: f(q[None])[0]))))(XQ)
    degree = getattr(adapter, "k", 3)
    for order, got in ((1, first_rev), (1, first_fwd), (2, second), (3, third)):
        expected = reference.derivative(order)(XQ) if order <= degree else np.zeros(M)
        np.testing.assert_allclose(
            got, expected, rtol=1e-11, atol=1e-11 * max(np.abs(expected).max(), 1)
        )


def _unit_jacobian(adapter, nu=0):
    """d out / d y from SciPy: the interpolants of the unit vectors, exact for a linear
    interpolant."""
    return np.stack([scipy_object(adapter, X, e)(XQ, nu) for e in np.eye(N)], axis=1)


@pytest.mark.parametrize("adapter", LINEAR, ids=_id)
def test_data_derivatives_of_linear_ones_equal_the_unit_interpolants(adapter):
    expected = _unit_jacobian(adapter)
    scale = np.abs(expected).max()
    for jac in (jax.jacrev, jax.jacfwd):
        got = jax.jit(jac(lambda y: adapter(X, y, XQ)))(Y)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * scale)
    transpose = jax.linear_transpose(lambda y: adapter(X, y, XQ), Y)
    np.testing.assert_allclose(transpose(W)[0], expected.T @ W, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("adapter", quick_and_slow(LINEAR, {0, 6}, _id))
def test_second_order_in_data_and_queries(adapter):
    """∂²out/∂y∂xq is the derivative spline's map from the data, both ways round; ∂²/∂y² is 0."""
    expected = _unit_jacobian(adapter, nu=1)
    scale = np.abs(expected).max()

    def f(y, q):
        return adapter(X, y, q) @ W

    mixed = jax.jacfwd(jax.grad(f, argnums=1), argnums=0)(Y, XQ)
    np.testing.assert_allclose(mixed, W[:, None] * expected, rtol=0, atol=1e-11 * scale)
    mixed_rev = jax.jacrev(jax.grad(f, argnums=0), argnums=1)(Y, XQ)
    np.testing.assert_allclose(mixed_rev, (W[:, None] * expected).T, rtol=0, atol=1e-11 * scale)
    np.testing.assert_allclose(jax.hessian(f)(Y, XQ), 0.0, atol=1e-12 * scale)


def _central(f, y, direction, h=1e-5):
    return (f(y + h * direction) - f(y - h * direction)) / (2 * h)


@pytest.mark.parametrize("adapter", quick_and_slow(HERMITE, {0}, _id))
def test_data_derivatives_of_hermite_ones_against_scipy_differences(adapter):
    """Jacobians in y (both modes) against central differences of SciPy in float64."""

    def scipy_values(y):
        return scipy_object(adapter, X, y)(XQ)

    expected = np.stack([_central(scipy_values, Y, e) for e in np.eye(N)], axis=1)
    scale = np.abs(expected).max()
    for jac in (jax.jacrev, jax.jacfwd):
        got = jax.jit(jac(lambda y: adapter(X, y, XQ)))(Y)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-7 * scale)


@pytest.mark.parametrize("adapter", quick_and_slow(HERMITE, (), _id))
def test_second_data_derivatives_of_hermite_ones(adapter):
    """The Hessian in y (forward over reverse) against central differences of the exact
    gradient, and the mixed y–xq derivative against differences of SciPy's derivative."""

    def f(y):
        return adapter(X, y, XQ) @ W

    grad = jax.jit(jax.grad(f))
    hessian = jax.hessian(f)(Y)
    expected = np.stack([_central(lambda y: np.asarray(grad(y)), Y, e) for e in np.eye(N)])
    np.testing.assert_allclose(hessian, expected, rtol=0, atol=1e-6 * np.abs(expected).max())

    mixed = jax.jacfwd(jax.grad(lambda y, q: adapter(X, y, q) @ W, argnums=1))(Y, XQ)

    def slopes(y):
        return scipy_object(adapter, X, y)(XQ, 1) * W

    expected = np.stack([_central(slopes, Y, e) for e in np.eye(N)], axis=1)
    np.testing.assert_allclose(mixed, expected, rtol=0, atol=1e-7 * np.abs(expected).max())


@pytest.mark.parametrize(
    ("k", "bc_type"),
    [(3, None), (1, None), (2, None), (4, None), (5, None), (3, "natural"), (3, "clamped")],
)
@pytest.mark.parametrize("extrapolate", [True, False])
def test_sparse_transpose_equals_the_unit_interpolants(k, bc_type, extrapolate):
    spline = InterpSpline(k=k, bc_type=bc_type)
    for nu in range(k + 2):
        fast = bspline_transpose(X, W, XQ, k, bc_type, nu, extrapolate)
        assert fast is not None
        spline = InterpSpline(k=k, bc_type=bc_type, nu=nu, extrapolate=extrapolate)
        columns = spline.transpose_by_columns(X, W, XQ)
        np.testing.assert_allclose(fast, columns, rtol=0, atol=1e-11 * np.abs(columns).max())


@pytest.mark.parametrize("adapter", [InterpSpline(bc_type="periodic"), CubicSpline("periodic")])
def test_periodic_splines(adapter):
    """Periodic data (y[0] == y[-1]) moves at both ends together: the tangent along such a
    direction, and the transpose, against SciPy's periodic splines of the unit vectors."""
    y = Y.copy()
    y[-1] = y[0]
    reference = scipy_object(adapter, X, y)
    np.testing.assert_array_equal(adapter(X, y, XQ), reference(XQ))
    direction = RNG.normal(size=N)
    direction[-1] = direction[0]
    tangent = jax.jvp(lambda v: adapter(X, v, XQ), (y,), (direction,))[1]
    expected = scipy_object(adapter, X, direction)(XQ)
    np.testing.assert_allclose(tangent, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    cotangent = jax.grad(lambda v: adapter(X, v, XQ) @ W)(y)
    assert cotangent[0] == cotangent[-1]
    np.testing.assert_allclose(cotangent @ direction, tangent @ W, rtol=1e-12)
    slope = jax.vmap(jax.grad(lambda q: adapter(X, y, q[None])[0]))(XQ)
    np.testing.assert_allclose(slope, reference(XQ, 1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_splines_reproduce_polynomials_of_their_degree(k):
    coefficients = RNG.normal(size=k + 1)
    polynomial = np.polynomial.Polynomial(coefficients)
    inside = np.clip(XQ, X[0], X[-1])
    spline = InterpSpline(k=k)
    np.testing.assert_allclose(spline(X, polynomial(X), inside), polynomial(inside), rtol=1e-9)
    slope = jax.vmap(jax.grad(lambda q: spline(X, polynomial(X), q[None])[0]))(inside)
    np.testing.assert_allclose(slope, polynomial.deriv()(inside), rtol=1e-8, atol=1e-8)
    cubic = np.polynomial.Polynomial(RNG.normal(size=4))
    np.testing.assert_allclose(CubicSpline()(X, cubic(X), inside), cubic(inside), rtol=1e-9)
    curvature = jax.vmap(jax.hessian(lambda q: CubicSpline()(X, cubic(X), q[None])[0]))(inside)
    np.testing.assert_allclose(curvature, cubic.deriv(2)(inside), rtol=1e-8, atol=1e-8)


def test_batches_of_data_share_or_own_their_sites():
    """vmap over y (shared x), over everything, and leading batch axes given directly."""
    ys = np.stack([Y, 2 * Y, np.cos(X)])
    xs = np.stack([X, X + 1.0, X * 1.5])
    for adapter in (make_interp_spline, PchipInterpolator()):
        shared = jax.jit(jax.vmap(adapter, (None, 0, None)))(X, ys, XQ)
        owned = adapter(xs, ys, XQ)
        for i in range(3):
            np.testing.assert_array_equal(shared[i], scipy_object(adapter, X, ys[i])(XQ))
            np.testing.assert_array_equal(owned[i], scipy_object(adapter, xs[i], ys[i])(XQ))
        grads = jax.vmap(jax.grad(lambda y: adapter(X, y, XQ) @ W))(ys)
        single = jax.grad(lambda y: adapter(X, y, XQ) @ W)
        for i in range(3):
            np.testing.assert_allclose(grads[i], single(ys[i]), rtol=1e-13, atol=1e-13)


def test_float32():
    for adapter in (make_interp_spline, PchipInterpolator()):
        with jax.enable_x64(False):
            out = adapter(X.astype(np.float32), Y.astype(np.float32), XQ.astype(np.float32))
            grad = jax.grad(
                lambda y: adapter(X.astype(np.float32), y, XQ.astype(np.float32)).sum()
            )(Y.astype(np.float32))
        assert out.dtype == np.float32 and grad.dtype == np.float32
        np.testing.assert_allclose(out, scipy_object(adapter, X, Y)(XQ), rtol=1e-4, atol=1e-4)


def test_akima_does_not_extrapolate_by_default():
    out = Akima1DInterpolator()(X, Y, np.array([X[0] - 1, X[3], X[-1] + 1]))
    assert np.isnan(out[0]) and np.isnan(out[2]) and np.isfinite(out[1])
    grad = jax.grad(lambda q: Akima1DInterpolator()(X, Y, q).sum())(np.array([X[3] + 0.1]))
    expected = si.Akima1DInterpolator(X, Y).derivative()(X[3] + 0.1)
    np.testing.assert_allclose(grad[0], expected, rtol=1e-12)


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 5])
def test_sites_of_other_degrees_are_not_differentiated(k):
    """Degrees other than 1 and 3 (not cubic or linear between the sites): a TypeError naming 'x'
    (tests/test_interpolate_sites.py differentiates the others)."""
    adapter = InterpSpline(k=k)
    name = type(adapter).__name__
    with pytest.raises(TypeError, match=f"{name} is not differentiable in its argument 'x'"):
        jax.grad(lambda x: adapter(x, Y, XQ).sum())(X)
    with pytest.raises(TypeError, match=f"{name} is not differentiable in its argument 'x'"):
        jax.jvp(lambda x: adapter(x, Y, XQ), (X,), (np.ones(N),))


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (X[::-1], Y, r"argument 'x' must be strictly increasing"),
        (np.concatenate([X[:3], X[2:-1]]), Y, r"argument 'x' must be strictly increasing"),
        (X, np.where(np.arange(N) == 4, np.nan, Y), r"argument 'y' has non-finite entries"),
        (X[:3], Y[:3], r"argument 'x' has 3 points; this interpolant needs at least 4"),
    ],
)
def test_bad_data_is_an_error_naming_the_argument(x, y, message):
    with pytest.raises(ValueError, match=f"InterpSpline: {message}"):
        make_interp_spline(x, y, XQ)
    with pytest.raises(Exception, match=message):  # under jit: JaxRuntimeError
        jax.jit(make_interp_spline)(x, y, XQ).block_until_ready()


def test_on_failure_nan_is_per_batch_element():
    xs = np.stack([X, X[::-1], X])
    for adapter in (InterpSpline(on_failure="nan"), PchipInterpolator(on_failure="nan")):
        out = jax.jit(adapter)(xs, np.stack([Y, Y, 2 * Y]), XQ)
        assert np.isnan(out[1]).all()
        np.testing.assert_array_equal(out[0], scipy_object(adapter, X, Y)(XQ))
        np.testing.assert_array_equal(out[2], scipy_object(adapter, X, 2 * Y)(XQ))
        grads = jax.grad(lambda y: jnp.nansum(adapter(xs, y, XQ) * W))(np.stack([Y, Y, Y]))
        grads = np.asarray(grads)
        assert np.isnan(grads[1]).all() and np.isfinite(grads[[0, 2]]).all()


def test_mismatched_lengths_name_the_arguments():
    with pytest.raises(ValueError, match="'y'"):
        make_interp_spline(X, Y[:-1], XQ)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: InterpSpline(k=-1), "InterpSpline: parameter 'k'"),
        (lambda: InterpSpline(bc_type="free"), "InterpSpline: parameter 'bc_type'"),
        (lambda: CubicSpline("free"), "CubicSpline: parameter 'bc_type'"),
        (lambda: Akima1DInterpolator("spline"), "Akima1DInterpolator: parameter 'method'"),
        (lambda: PchipInterpolator(nu=-1), "PchipInterpolator: parameter 'nu'"),
        (lambda: CubicSpline(on_failure="ignore"), "CubicSpline: parameter 'on_failure'"),
    ],
)
def test_bad_parameters(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "adapter", [make_interp_spline, CubicSpline(), PchipInterpolator()], ids=_id
)
def test_many_queries_are_evaluated_in_order(adapter):
    """From 1,024 queries on, the host evaluates at the sorted queries (faster in SciPy) and
    puts the results back (B-splines from 32 (k + 1) sites on: the next test): values still
    SciPy's exactly, the cotangent the same sum."""
    xq = RNG.uniform(-1.0, 11.0, 3000)
    w = RNG.normal(size=3000)
    np.testing.assert_array_equal(jax.jit(adapter)(X, Y, xq), scipy_object(adapter, X, Y)(xq))
    got = jax.grad(lambda y: adapter(X, y, xq) @ w)(Y)
    expected = np.concatenate(
        [
            jax.grad(lambda y: adapter(X, y, q) @ v)(Y)[None]
            for q, v in zip(np.split(xq, 6), np.split(w, 6))
        ]
    ).sum(0)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


@pytest.mark.parametrize("k, n, sorted_", [(3, 127, False), (3, 128, True), (1, 64, True)])
def test_bsplines_sort_the_queries_from_enough_sites(k, n, sorted_, monkeypatch):
    """B-splines evaluate 1,024 queries and more sorted from 32 (k + 1) sites on, in their
    own order below (where sorting costs more than it saves): SciPy's values exactly."""
    sorts = []
    monkeypatch.setattr(_one_d, "sort_order", lambda q: sorts.append(q) or np.argsort(q))
    rng = np.random.default_rng(n)
    x = np.sort(rng.uniform(0.0, 10.0, n))
    y = np.sin(x)
    xq = rng.uniform(-1.0, 11.0, 3000)
    got = jax.jit(InterpSpline(k=k))(x, y, xq)
    np.testing.assert_array_equal(got, si.make_interp_spline(x, y, k)(xq))
    assert bool(sorts) == sorted_


# 3,000 queries: the host sorts them (from 1,024; B-splines of these 11 sites do not), keeps
# the order and the built interpolant for the calls of one gradient, and the transposes take
# their sorted paths
XQ_MANY = np.concatenate([RNG.uniform(-1.0, 11.0, 2990), X[1:]])
W_MANY = RNG.normal(size=XQ_MANY.shape[0])


@pytest.mark.parametrize(
    "adapter",
    [CubicSpline(), make_interp_spline, CubicSpline("natural", nu=1), PchipInterpolator()],
    ids=repr,
)
def test_many_queries_derivatives_against_scipy(adapter):
    def scipy_objective(y):
        values = scipy_object(adapter, X, y)(XQ_MANY, adapter.nu)
        return values @ W_MANY

    step = 1e-6
    expected = np.array(
        [
            (scipy_objective(Y + step * e) - scipy_objective(Y - step * e)) / (2 * step)
            for e in np.eye(N)
        ]
    )
    value, grad = jax.jit(jax.value_and_grad(lambda y: adapter(X, y, XQ_MANY) @ W_MANY))(Y)
    np.testing.assert_allclose(value, scipy_objective(Y), rtol=1e-13)  # (XLA's dot)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(grad, expected, rtol=0, atol=1e-6 * scale)
    in_xq = jax.jit(jax.grad(lambda q: adapter(X, Y, q) @ W_MANY))(XQ_MANY)
    expected_xq = scipy_object(adapter, X, Y)(XQ_MANY, adapter.nu + 1) * W_MANY
    np.testing.assert_allclose(in_xq, expected_xq, rtol=0, atol=1e-11 * np.abs(expected_xq).max())


@pytest.mark.parametrize("adapter", [InterpSpline(k=1), CubicSpline()], ids=repr)
def test_what_the_host_keeps_serves_equal_data_only(adapter):
    call = jax.jit(adapter)
    for y, q in ((Y, XQ_MANY), (2 * Y, XQ_MANY), (Y, XQ_MANY[::-1]), (Y, XQ_MANY)):
        np.testing.assert_array_equal(call(X, y, q), scipy_object(adapter, X, y)(q))


def test_rules_in_jax_still_refuse_bad_data():
    # the gradient alone does not use the value: the rules read it, so the forward's check runs
    grad = jax.jit(jax.grad(lambda y: CubicSpline()(X[::-1], y, XQ_MANY).sum()))
    with pytest.raises(Exception, match="argument 'x' must be strictly increasing"):
        grad(Y).block_until_ready()
