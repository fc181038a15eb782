"""RegularGridInterpolator: values against SciPy's object (the B-spline methods with a direct
solve, and the default iterative one to its tolerance), derivatives in the queries against
SciPy's ``nu=`` and central differences of SciPy, in the values against SciPy's interpolants
of the unit vectors, polynomial exactness, bounds, batching and errors."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.interpolate as si
import scipy.sparse.linalg

from jaxbridge.adapters.interpolate import RegularGridInterpolator

RNG = np.random.default_rng(3)
A = np.sort(RNG.uniform(0.0, 5.0, 7))
B = np.sort(RNG.uniform(-1.0, 2.0, 6))
C = np.sort(RNG.uniform(0.0, 1.0, 6))
V2 = RNG.normal(size=(7, 6))
V3 = RNG.normal(size=(7, 6, 6))
M = 25


def _queries(axes, m=M, rng=RNG):
    return np.stack([rng.uniform(a[0], a[-1], m) for a in axes], axis=-1)


XI2 = _queries((A, B))
XI3 = _queries((A, B, C))
SPLINES = ("slinear", "cubic", "quintic")
LINEAR_METHODS = ("linear", "nearest") + SPLINES


@pytest.fixture(autouse=True)
def _precision():
    with jax.enable_x64(True):
        yield


def _scipy(axes, values, method, **options):
    solver = {"solver": scipy.sparse.linalg.spsolve} if method in SPLINES else {}
    return si.RegularGridInterpolator(axes, values, method=method, **solver, **options)


@pytest.mark.parametrize("method", LINEAR_METHODS + ("pchip",))
@pytest.mark.parametrize("axes", [(A, B), (A, B, C)], ids=["2d", "3d"])
def test_values_are_scipys(method, axes):
    values = V2 if len(axes) == 2 else V3
    xi = XI2 if len(axes) == 2 else XI3
    got = jax.jit(RegularGridInterpolator(method))(axes, values, xi)
    np.testing.assert_allclose(got, _scipy(axes, values, method)(xi), rtol=1e-13, atol=1e-13)
    if method in SPLINES and len(axes) == 2:
        # SciPy's default iterative solve agrees to its tolerance (in 3-D, quintic, it
        # does not converge: the direct solve is why the adapter uses one)
        default = si.RegularGridInterpolator(axes, values, method=method)(xi)
        np.testing.assert_allclose(got, default, rtol=0, atol=1e-3 * np.abs(values).max())


SLOW = pytest.mark.slow  # seconds of compiling second-order programs


@pytest.mark.parametrize(
    "method", [pytest.param(m, marks=() if m == "cubic" else SLOW) for m in ("linear",) + SPLINES]
)
def test_query_derivatives_are_scipys_nu(method):
    """Gradients (both modes) and second derivatives in xi against SciPy's ``nu=`` (for
    "linear", the degree-1 B-spline's: the same function)."""
    reference = _scipy((A, B), V2, "slinear" if method == "linear" else method)
    adapter = RegularGridInterpolator(method)

    def f(q):
        return adapter((A, B), V2, q[None])[0]

    for jac in (jax.grad, jax.jacfwd):
        got = jax.vmap(jac(f))(XI2)
        for j, nu in enumerate([(1, 0), (0, 1)]):
            expected = reference(XI2, nu=nu)
            np.testing.assert_allclose(got[:, j], expected, rtol=1e-11, atol=1e-11)
    hessians = jax.vmap(jax.hessian(f))(XI2)
    for (i, j), nu in {(0, 0): (2, 0), (0, 1): (1, 1), (1, 1): (0, 2)}.items():
        np.testing.assert_allclose(hessians[:, i, j], reference(XI2, nu=nu), rtol=1e-10, atol=1e-10)


def test_linear_gradient_is_piecewise_constant_against_central_differences():
    """Away from grid lines, the bilinear interpolant's gradient equals central differences
    of SciPy's "linear" in float64; along each axis it is constant inside a cell."""
    reference = si.RegularGridInterpolator((A, B), V2)
    h = 1e-6
    got = jax.vmap(jax.grad(lambda q: RegularGridInterpolator()((A, B), V2, q[None])[0]))(XI2)
    for j in range(2):
        e = np.eye(2)[j] * h
        expected = (reference(XI2 + e) - reference(XI2 - e)) / (2 * h)
        np.testing.assert_allclose(got[:, j], expected, rtol=1e-7, atol=1e-7)
    # inside a cell, the x-derivative does not depend on x
    cell = np.array([[A[2] + 0.1 * (A[3] - A[2]), B[1] + 0.5 * (B[2] - B[1])]])
    moved = cell + [[0.7 * (A[3] - A[2]), 0.0]]
    grad = jax.grad(lambda q: RegularGridInterpolator()((A, B), V2, q).sum())
    np.testing.assert_allclose(grad(cell)[0, 0], grad(moved)[0, 0], rtol=1e-13)


@pytest.mark.parametrize(
    "method", [pytest.param(m, marks=() if m == "cubic" else SLOW) for m in LINEAR_METHODS]
)
def test_value_derivatives_equal_the_unit_interpolants(method):
    units = np.eye(V2.size).reshape(-1, *V2.shape)
    expected = np.stack([_scipy((A, B), u, method)(XI2) for u in units], axis=-1)
    expected = expected.reshape(M, *V2.shape)
    scale = np.abs(expected).max()
    for jac in (jax.jacrev, jax.jacfwd):
        got = jac(lambda v: RegularGridInterpolator(method)((A, B), v, XI2))(V2)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10 * scale)
    w = RNG.normal(size=M)
    (transposed,) = jax.linear_transpose(
        lambda v: RegularGridInterpolator(method)((A, B), v, XI2), V2
    )(w)
    np.testing.assert_allclose(transposed, np.tensordot(w, expected, 1), rtol=0, atol=1e-10 * scale)


@SLOW
@pytest.mark.parametrize("method", ("linear", "cubic"))
def test_mixed_derivative_in_values_and_queries(method):
    """∂²(wᵀ out)/∂values∂xi from both orders of differentiation, against the unit
    interpolants' ``nu`` derivatives."""
    name = "slinear" if method == "linear" else method
    units = np.eye(V2.size).reshape(-1, *V2.shape)
    w = RNG.normal(size=M)
    d_dx = np.stack([_scipy((A, B), u, name)(XI2, nu=(1, 0)) for u in units], axis=-1)
    expected = (w[:, None] * d_dx).reshape(M, *V2.shape)

    def f(v, q):
        return RegularGridInterpolator(method)((A, B), v, q) @ w

    got = jax.jacrev(jax.grad(f, argnums=1), argnums=0)(V2, XI2)[:, 0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    got = jax.jacfwd(jax.grad(f, argnums=0), argnums=1)(V2, XI2)[..., 0]
    np.testing.assert_allclose(np.moveaxis(got, -1, 0), expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize(("method", "degree"), [("linear", 1), ("cubic", 3), ("quintic", 5)])
def test_reproduces_tensor_polynomials_of_its_degree(method, degree):
    """Not-a-knot B-splines of degree k reproduce products of polynomials of degree k."""
    a, b = np.linspace(-1, 1.5, 8), np.linspace(0, 2, 7)
    coefficients = RNG.normal(size=(degree + 1, degree + 1))

    def poly(x, y):
        return sum(
            coefficients[i, j] * x**i * y**j
            for i, j in itertools.product(range(degree + 1), repeat=2)
        )

    grid = poly(*np.meshgrid(a, b, indexing="ij"))
    xi = _queries((a, b))
    got = RegularGridInterpolator(method)((a, b), grid, xi)
    np.testing.assert_allclose(got, poly(xi[:, 0], xi[:, 1]), rtol=1e-9, atol=1e-9)


def test_out_of_bounds_queries():
    outside = np.array([[A[0] - 1.0, B[1]], [A[2], B[-1] + 0.5], [A[3], B[2]]])
    with pytest.raises(
        ValueError,
        match="RegularGridInterpolator: argument 'xi' has points outside the grid along axis 0",
    ):
        RegularGridInterpolator()((A, B), V2, outside)
    for method in ("linear", "cubic"):
        for fill in (np.nan, -3.0, None):
            adapter = RegularGridInterpolator(method, bounds_error=False, fill_value=fill)
            expected = _scipy((A, B), V2, method, bounds_error=False, fill_value=fill)(outside)
            np.testing.assert_allclose(adapter((A, B), V2, outside), expected, rtol=1e-13)
            grad = jax.grad(lambda v, a=adapter: jnp.nansum(a((A, B), v, outside)))(V2)
            if fill is not None:  # only the inside query depends on the values
                inside = jax.grad(lambda v, a=adapter: a((A, B), v, outside[2:]).sum())(V2)
                np.testing.assert_allclose(grad, inside, rtol=0, atol=1e-14)


@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_derivatives_where_fill_value_is_taken_are_scipys_differences(method):
    """Outside the grid the result is ``fill_value``, a constant: SciPy's central differences
    are 0 there, where forward mode in the values and both modes in ``xi`` gave
    ``fill_value`` itself (the tangent's interpolant and SciPy's ``nu=`` fill it too; #54)."""
    xi = np.array([[A[2] + 0.1, B[1] + 0.2], [A[-1] + 0.5, B[2] + 0.1]])  # the second outside
    adapter = RegularGridInterpolator(method, bounds_error=False, fill_value=3.0)

    def scipy(values, q):
        return _scipy((A, B), values, method, bounds_error=False, fill_value=3.0)(q)

    h = 1e-6
    units = np.eye(V2.size).reshape(-1, *V2.shape)
    in_values = np.stack([(scipy(V2 + h * u, xi) - scipy(V2 - h * u, xi)) / (2 * h) for u in units])
    in_values = np.moveaxis(in_values, 0, -1).reshape(len(xi), *V2.shape)
    in_xi = np.stack(
        [(scipy(V2, xi + h * e) - scipy(V2, xi - h * e)) / (2 * h) for e in np.eye(2)], axis=-1
    )
    assert np.all(in_values[1] == 0) and np.all(in_xi[1] == 0)  # SciPy's, outside
    for jac in (jax.jacfwd, jax.jacrev):
        got = jac(lambda v: adapter((A, B), v, xi))(V2)
        np.testing.assert_allclose(got, in_values, rtol=0, atol=1e-8)
        got = jax.vmap(jac(lambda q: adapter((A, B), V2, q[None])[0]))(xi)
        np.testing.assert_allclose(got, in_xi, rtol=0, atol=1e-7 * np.abs(in_xi).max())


def _pchip_difference(axes, values, xi, dvalues, dxi, h=1e-7):
    """Central difference of SciPy's grid PCHIP along ``(dvalues, dxi)`` (a small step: C
    has cells of 0.03, where a cubic piece bends fast enough that h = 1e-6 is 1e-4 off)."""

    def at(s):
        return _scipy(axes, values + s * dvalues, "pchip")(xi + s * dxi)

    return (at(h) - at(-h)) / (2 * h)


@pytest.mark.parametrize(
    "axes", [(A, B), pytest.param((A, B, C), marks=pytest.mark.slow)], ids=["2d", "3d"]
)
def test_pchip_first_derivatives_against_scipy_differences(axes):
    """The fold of 1-D PCHIPs differentiated in the values and the queries, forward against
    central differences of SciPy's own grid PCHIP (a 1% wrong rule fails by 1e-2 of the
    largest entry; observed about 1e-9), reverse against forward."""
    values = V2 if len(axes) == 2 else V3
    xi = XI2 if len(axes) == 2 else XI3
    adapter = RegularGridInterpolator("pchip")
    rng = np.random.default_rng(5)
    dvalues, dxi = rng.normal(size=values.shape), rng.normal(size=xi.shape)
    f = jax.jit(lambda v, q: adapter(axes, v, q))
    for tangent in ((dvalues, np.zeros_like(xi)), (np.zeros_like(values), dxi)):
        _, got = jax.jvp(f, (values, xi), tangent)
        expected = _pchip_difference(axes, values, xi, *tangent)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-7 * np.abs(expected).max())
    g = rng.normal(size=M)
    v_bar, xi_bar = jax.jit(jax.grad(lambda v, q: g @ f(v, q), argnums=(0, 1)))(values, xi)
    _, both = jax.jvp(f, (values, xi), (dvalues, dxi))
    np.testing.assert_allclose(np.sum(v_bar * dvalues) + np.sum(xi_bar * dxi), g @ both, rtol=1e-12)


@pytest.mark.slow
def test_pchip_second_derivatives_against_differences_of_gradients():
    adapter = RegularGridInterpolator("pchip")
    q0 = XI3[0]
    value = jax.jit(lambda q: adapter((A, B, C), V3, q[None])[0])
    gradient = jax.jit(jax.grad(value))
    h = 1e-5
    expected = np.stack(
        [(gradient(q0 + h * e) - gradient(q0 - h * e)) / (2 * h) for e in np.eye(3)]
    )
    for hessian in (jax.hessian(value), jax.jacrev(jax.jacfwd(value))):
        np.testing.assert_allclose(
            jax.jit(hessian)(q0), expected, rtol=0, atol=1e-6 * np.abs(expected).max()
        )
    # mixed: values and queries
    mixed = jax.jit(jax.jacfwd(jax.grad(lambda v, q: adapter((A, B), v, q).sum()), argnums=1))
    got = mixed(V2, XI2[:3])  # (7, 6, 3, 2)
    grad_v = jax.jit(jax.grad(lambda v, q: adapter((A, B), v, q).sum()))
    d = np.zeros_like(XI2[:3])
    d[1, 0] = h
    expected = (grad_v(V2, XI2[:3] + d) - grad_v(V2, XI2[:3] - d)) / (2 * h)
    np.testing.assert_allclose(got[..., 1, 0], expected, rtol=0, atol=1e-6)


def test_pchip_fill_value_vmap_and_no_transpose():
    outside = np.concatenate([XI2[:3], [[A[-1] + 1.0, B[0]], [A[0], B[-1] + 2.0]]])
    for fill in (np.nan, None):
        adapter = RegularGridInterpolator("pchip", bounds_error=False, fill_value=fill)
        xi_bar = jax.jit(jax.grad(lambda q, a=adapter: jnp.nansum(a((A, B), V2, q))))(outside)
        if fill is None:  # extrapolated: SciPy's PCHIPs continue outside
            h = 1e-6
            e = np.zeros_like(outside)
            e[3, 0] = h
            ref = _scipy((A, B), V2, "pchip", bounds_error=False, fill_value=None)
            expected = (ref(outside + e) - ref(outside - e)).sum() / (2 * h)
            np.testing.assert_allclose(xi_bar[3, 0], expected, rtol=1e-7)
        else:  # fill_value, a constant: zero derivative there
            np.testing.assert_array_equal(xi_bar[3:], 0.0)
            assert np.abs(xi_bar[:3]).min() > 0
    adapter = RegularGridInterpolator("pchip")
    values = np.stack([V2, V2**2])
    gradient = jax.grad(lambda v: adapter((A, B), v, XI2).sum())
    per_element = jax.jit(jax.vmap(gradient))(values)
    for v, got in zip(values, per_element):
        np.testing.assert_allclose(got, jax.jit(gradient)(v), rtol=1e-14)
    with pytest.raises(TypeError, match="not declared linear in argument 'values'"):
        jax.linear_transpose(lambda v: adapter((A, B), v, XI2), V2)(np.ones(M))


def test_grid_is_not_differentiated():
    with pytest.raises(TypeError, match="not differentiable in its argument 'points'"):
        jax.grad(lambda a: RegularGridInterpolator()((a, B), V2, XI2).sum())(A)


def test_batches_of_values_and_queries():
    values = np.stack([V2, 2 * V2 + 1, -V2])
    xi = np.stack([XI2, XI2[::-1], XI2])
    got = jax.jit(jax.vmap(lambda v, q: RegularGridInterpolator("cubic")((A, B), v, q)))(values, xi)
    leading = RegularGridInterpolator("cubic")((A, B), values, xi)  # leading batch axes
    for i in range(3):
        expected = _scipy((A, B), values[i], "cubic")(xi[i])
        np.testing.assert_allclose(got[i], expected, rtol=1e-13)
        np.testing.assert_allclose(leading[i], expected, rtol=1e-13)


def test_float32():
    with jax.enable_x64(False):
        got = RegularGridInterpolator()((A, B), V2.astype(np.float32), XI2.astype(np.float32))
        grad = jax.grad(lambda q: RegularGridInterpolator()((A, B), V2, q).sum())(
            XI2.astype(np.float32)
        )
    assert got.dtype == np.float32 and grad.dtype == np.float32
    np.testing.assert_allclose(
        got, si.RegularGridInterpolator((A, B), V2)(XI2), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    ("points", "values", "method", "message"),
    [
        (
            (A[::-1], B),
            V2,
            "linear",
            "argument 'points' must be strictly increasing along each axis; axis 0",
        ),
        ((A, B), np.where(V2 > 1, np.nan, V2), "linear", "argument 'values' has non-finite"),
        (
            (A[:3], B),
            V2[:3],
            "cubic",
            "argument 'points' has 3 points along axis 0; method 'cubic' needs at least 4",
        ),
    ],
)
def test_bad_data_is_an_error_naming_the_argument(points, values, method, message):
    xi = np.array([[A[3], B[2]]])
    with pytest.raises(ValueError, match=f"RegularGridInterpolator: {message}"):
        RegularGridInterpolator(method)(points, values, xi)
    assert np.isnan(RegularGridInterpolator(method, on_failure="nan")(points, values, xi)).all()


def test_on_failure_nan_is_per_batch_element():
    values = np.stack([V2, np.where(V2 > 1, np.nan, V2)])
    got = RegularGridInterpolator(on_failure="nan")((A, B), values, XI2)
    np.testing.assert_allclose(got[0], si.RegularGridInterpolator((A, B), V2)(XI2), rtol=1e-13)
    assert np.isnan(got[1]).all()


def test_shapes_and_parameters_are_checked():
    with pytest.raises(ValueError, match=r"argument 'values' must have trailing shape \(7, 6\)"):
        RegularGridInterpolator()((A, B), V2[:5], XI2)
    with pytest.raises(ValueError, match="argument 'xi' has 3 coordinates for a grid of 2 axes"):
        RegularGridInterpolator()((A, B), V2, XI3)
    with pytest.raises(ValueError, match="parameter 'method'"):
        RegularGridInterpolator("spline")
    with pytest.raises(ValueError, match="parameter 'nu' is not available for 'pchip'"):
        RegularGridInterpolator("pchip", nu=(1, 0))
