"""The scattered-data interpolants (RBFInterpolator, LinearNDInterpolator,
CloughTocher2DInterpolator): values against SciPy's objects, derivatives in the queries, the
sites and the values against central differences of SciPy in float64 and SciPy's
interpolants of the unit vectors, polynomial exactness, the hull, batching and errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.interpolate as si

from jaxbridge.adapters.interpolate import (
    CloughTocher2DInterpolator,
    LinearNDInterpolator,
    RBFInterpolator,
)

RNG = np.random.default_rng(11)
P, M = 14, 9
SITES = RNG.uniform(0.0, 1.0, (P, 2))
DATA = np.sin(3 * SITES[:, 0]) + SITES[:, 1] ** 2
QUERIES = RNG.uniform(0.15, 0.85, (M, 2))
W = RNG.normal(size=M)
SLOW = pytest.mark.slow  # seconds of compiling second-order programs


@pytest.fixture(autouse=True)
def _precision():
    with jax.enable_x64(True):
        yield


def _central_jacobian(f, at, h=1e-6):
    """d f / d at, (f's shape, at's shape), by central differences in float64."""
    columns = []
    for e in np.eye(at.size):
        e = e.reshape(at.shape)
        columns.append((f(at + h * e) - f(at - h * e)) / (2 * h))
    return np.stack(columns, axis=-1).reshape(np.shape(f(at)) + at.shape)


RBFS = [
    RBFInterpolator(),
    RBFInterpolator("cubic"),
    RBFInterpolator("quintic", degree=3),
    RBFInterpolator("gaussian", epsilon=2.0),
    RBFInterpolator("multiquadric", epsilon=1.5, smoothing=0.1),
    RBFInterpolator("inverse_quadratic", epsilon=3.0, degree=-1),
]


def _rbf_scipy(adapter):
    def values(y, d, x):
        return si.RBFInterpolator(
            y,
            d,
            kernel=adapter.kernel,
            epsilon=adapter.epsilon,
            smoothing=adapter.smoothing,
            degree=adapter.degree,
        )(x)

    return values


@pytest.mark.parametrize(
    ("adapter", "jac"),
    [
        pytest.param(
            a,
            jac,
            marks=() if i == 0 and jac is jax.jacrev else SLOW,
            id=f"{a.kernel}-{jac.__name__}",
        )
        for i, a in enumerate(RBFS)
        for jac in (jax.jacrev, jax.jacfwd)
    ],
)
def test_rbf_values_and_first_derivatives_are_scipys(adapter, jac):
    """Values equal SciPy's; the Jacobians in x, y (both modes) and d against central
    differences of SciPy in float64 (d: SciPy's interpolants of the unit vectors)."""
    scipy = _rbf_scipy(adapter)
    np.testing.assert_allclose(
        jax.jit(adapter)(SITES, DATA, QUERIES), scipy(SITES, DATA, QUERIES), rtol=1e-13, atol=1e-13
    )
    expected = {
        "x": _central_jacobian(lambda x: scipy(SITES, DATA, x), QUERIES),
        "y": _central_jacobian(lambda y: scipy(y, DATA, QUERIES), SITES),
        "d": np.stack([scipy(SITES, e, QUERIES) for e in np.eye(P)], axis=-1),
    }
    for argnum, name in enumerate("ydx"):
        got = jac(adapter, argnums=argnum)(SITES, DATA, QUERIES)
        scale = np.abs(expected[name]).max()
        np.testing.assert_allclose(got, expected[name], rtol=0, atol=2e-7 * scale)
    (transposed,) = jax.linear_transpose(lambda d: adapter(SITES, d, QUERIES), DATA)(W)
    np.testing.assert_allclose(transposed, W @ expected["d"], rtol=1e-10, atol=1e-12)


@SLOW
@pytest.mark.parametrize("adapter", RBFS[:2] + RBFS[3:4], ids=lambda a: a.kernel)
def test_rbf_second_derivatives_against_differences_of_gradients(adapter):
    """Hessians in x and in y (forward over reverse) against central differences of the
    adapter's own gradient, itself checked against SciPy above."""
    for argnum, at in ((2, QUERIES), (0, SITES)):

        def f(a, argnum=argnum):
            args = [SITES, DATA, QUERIES]
            args[argnum] = a
            return adapter(*args) @ W

        gradient = jax.grad(f)
        hessian = jax.hessian(f)(at)
        expected = _central_jacobian(lambda a: np.asarray(gradient(a)), at, h=1e-5)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(hessian, expected, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("epsilon", [1.0, 2.0])
@pytest.mark.parametrize(
    "kernel", ["gaussian", "multiquadric", "inverse_multiquadric", "inverse_quadratic"]
)
def test_rbf_hessian_in_the_query_at_a_site_is_scipys_curvature(kernel, epsilon):
    """At a query on a data site (``ε·y`` exact in floating point), a smooth kernel's
    Hessian in the query against SciPy's values by fourth-order second differences (its
    curvature there was dropped: ``r`` has no derivative at 0)."""
    adapter = RBFInterpolator(kernel, epsilon=epsilon)
    scipy = _rbf_scipy(adapter)
    site = SITES[3]
    h = 1e-2

    def value(x):
        return scipy(SITES, DATA, x[None])[0]

    e0, e1 = np.eye(2) * h
    mixed = (
        value(site + e0 + e1)
        - value(site + e0 - e1)
        - value(site - e0 + e1)
        + value(site - e0 - e1)
    ) / (4 * h * h)  # (second order in h)
    expected = np.full((2, 2), mixed)
    for i, e in enumerate((e0, e1)):  # the diagonal to fourth order
        f = [value(site + k * e) for k in (-2, -1, 0, 1, 2)]
        expected[i, i] = (-f[0] + 16 * f[1] - 30 * f[2] + 16 * f[3] - f[4]) / (12 * h * h)
    got = jax.hessian(lambda x: adapter(SITES, DATA, x[None])[0])(jnp.asarray(site))
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-4 * scale)
    np.testing.assert_allclose(np.diag(got), np.diag(expected), rtol=0, atol=1e-6 * scale)


def test_rbf_reproduces_its_polynomial():
    """With degree 2, data from a quadratic is interpolated exactly everywhere."""

    def quadratic(p):
        return 1.0 + 2.0 * p[:, 0] - p[:, 1] + 0.5 * p[:, 0] * p[:, 1] - p[:, 1] ** 2

    got = RBFInterpolator("quintic", degree=2)(SITES, quadratic(SITES), QUERIES)
    np.testing.assert_allclose(got, quadratic(QUERIES), rtol=1e-9, atol=1e-9)


@SLOW
def test_rbf_batches():
    data = np.stack([DATA, 2 * DATA - 1])
    sites = np.stack([SITES, SITES + 0.01])
    got = jax.vmap(RBFInterpolator())(sites, data, QUERIES[None].repeat(2, 0))
    for i in range(2):
        np.testing.assert_allclose(
            got[i], si.RBFInterpolator(sites[i], data[i])(QUERIES), rtol=1e-12
        )
    grads = jax.grad(lambda y: RBFInterpolator()(y, data, QUERIES).sum())(SITES)
    single = sum(
        jax.grad(lambda y, d=d: RBFInterpolator()(y, d, QUERIES).sum())(SITES) for d in data
    )
    np.testing.assert_allclose(grads, single, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("y", "d", "message"),
    [
        (
            SITES[:2],
            DATA[:2],
            "argument 'y' has 2 sites; degree 1 in 2 dimensions needs at least 3",
        ),
        (SITES, np.where(DATA > 1, np.nan, DATA), "argument 'd' has non-finite"),
        (np.concatenate([SITES, SITES[:1]]), np.concatenate([DATA, DATA[:1]]), "argument 'y'"),
    ],
)
def test_rbf_bad_data(y, d, message):
    with pytest.raises(ValueError, match=f"RBFInterpolator: .*{message}"):
        RBFInterpolator()(y, d, QUERIES)
    assert np.isnan(RBFInterpolator(on_failure="nan")(y, d, QUERIES)).all()


def test_rbf_parameters():
    with pytest.raises(ValueError, match="RBFInterpolator: parameter 'epsilon' must be given"):
        RBFInterpolator("gaussian")
    with pytest.raises(ValueError, match="parameter 'kernel'"):
        RBFInterpolator("sinc")


# --- LinearNDInterpolator ------------------------------------------------------------------


def _linear_scipy(points, values, xi, **options):
    return si.LinearNDInterpolator(points, values, **options)(xi)


@pytest.mark.parametrize("jac", [jax.jacrev, pytest.param(jax.jacfwd, marks=SLOW)])
def test_linear_nd_values_and_derivatives_are_scipys(jac):
    """Values (inside and outside the hull) equal SciPy's; Jacobians in xi, points (both
    modes) and values against central differences of SciPy."""
    xi = np.concatenate([QUERIES, [[1.5, 0.5], [-0.2, 0.3]]])  # the last two outside
    np.testing.assert_array_equal(np.isnan(_linear_scipy(SITES, DATA, xi)[-2:]), True)
    np.testing.assert_allclose(
        jax.jit(LinearNDInterpolator())(SITES, DATA, xi), _linear_scipy(SITES, DATA, xi), rtol=1e-14
    )
    expected = {
        "xi": _central_jacobian(lambda x: _linear_scipy(SITES, DATA, x), QUERIES),
        "points": _central_jacobian(lambda p: _linear_scipy(p, DATA, QUERIES), SITES),
        "values": np.stack([_linear_scipy(SITES, e, QUERIES) for e in np.eye(P)], axis=-1),
    }
    for argnum, name in ((0, "points"), (1, "values"), (2, "xi")):
        got = jac(LinearNDInterpolator(), argnums=argnum)(SITES, DATA, QUERIES)
        scale = np.abs(expected[name]).max()
        np.testing.assert_allclose(got, expected[name], rtol=0, atol=1e-7 * scale)


@SLOW
def test_linear_nd_in_three_dimensions_and_exact_on_affine_data():
    points = RNG.uniform(0, 1, (20, 3))

    def affine(p):
        return 0.5 + p @ np.array([1.0, -2.0, 0.25])

    xi = RNG.uniform(0.3, 0.7, (6, 3))
    got = LinearNDInterpolator()(points, affine(points), xi)
    np.testing.assert_allclose(got, _linear_scipy(points, affine(points), xi), rtol=1e-13)
    np.testing.assert_allclose(got, affine(xi), rtol=1e-12)
    gradient = jax.vmap(
        jax.grad(lambda q: LinearNDInterpolator()(points, affine(points), q[None])[0])
    )(xi)
    np.testing.assert_allclose(gradient, np.broadcast_to([1.0, -2.0, 0.25], (6, 3)), rtol=1e-11)
    # moving the points while the data follows an affine function changes nothing
    moved = jax.grad(lambda p: LinearNDInterpolator()(p, affine(p), xi).sum())(points)
    np.testing.assert_allclose(moved, 0.0, atol=1e-11)


def test_linear_nd_fill_value_and_rescale():
    xi = np.concatenate([QUERIES, [[1.5, 0.5]]])
    for options in ({"fill_value": -1.0}, {"rescale": True}):
        got = LinearNDInterpolator(**options)(SITES * [1.0, 100.0], DATA, xi * [1.0, 100.0])
        expected = _linear_scipy(SITES * [1.0, 100.0], DATA, xi * [1.0, 100.0], **options)
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    # outside the hull the result is a constant: no derivative in anything
    grads = jax.grad(
        lambda p, v, q: LinearNDInterpolator(fill_value=-1.0)(p, v, q)[-1], argnums=(0, 1, 2)
    )(SITES, DATA, xi)
    for g in grads:
        np.testing.assert_array_equal(g, 0.0)


@SLOW
def test_linear_nd_second_derivatives():
    """Piecewise linear: ∂²/∂xi² is 0; ∂²/∂points² against differences of the gradient."""
    hessian_xi = jax.hessian(lambda q: LinearNDInterpolator()(SITES, DATA, q) @ W)(QUERIES)
    np.testing.assert_allclose(hessian_xi, 0.0, atol=1e-10)

    def f(p):
        return LinearNDInterpolator()(p, DATA, QUERIES) @ W

    expected = _central_jacobian(lambda p: np.asarray(jax.grad(f)(p)), SITES, h=1e-6)
    np.testing.assert_allclose(
        jax.hessian(f)(SITES), expected, rtol=0, atol=1e-6 * np.abs(expected).max()
    )


# --- CloughTocher2DInterpolator ------------------------------------------------------------


def test_clough_tocher_values_and_value_derivatives():
    adapter = CloughTocher2DInterpolator(tol=1e-13)

    def scipy(values):
        return si.CloughTocher2DInterpolator(SITES, values, tol=1e-13)(QUERIES)

    np.testing.assert_allclose(jax.jit(adapter)(SITES, DATA, QUERIES), scipy(DATA), rtol=1e-14)
    np.testing.assert_allclose(
        CloughTocher2DInterpolator()(SITES, DATA, QUERIES),
        si.CloughTocher2DInterpolator(SITES, DATA)(QUERIES),
        rtol=1e-14,
    )
    expected = np.stack([scipy(e) for e in np.eye(P)], axis=-1)
    for jac in (jax.jacrev, jax.jacfwd):
        np.testing.assert_allclose(
            jac(adapter, argnums=1)(SITES, DATA, QUERIES), expected, rtol=0, atol=1e-12
        )
    # and against central differences of SciPy's interpolant itself
    np.testing.assert_allclose(_central_jacobian(scipy, DATA), expected, rtol=0, atol=1e-8)
    (transposed,) = jax.linear_transpose(lambda v: adapter(SITES, v, QUERIES), DATA)(W)
    np.testing.assert_allclose(transposed, W @ expected, rtol=1e-12, atol=1e-12)


def test_clough_tocher_value_derivatives_with_a_repeated_site():
    """Qhull leaves a repeated site out of every triangle, and SciPy's vertex gradient there
    is NaN: the transpose summed it times a 0 cotangent, so reverse mode gave NaN in every
    value where forward mode and SciPy's interpolants of the unit vectors agree (#54)."""
    adapter = CloughTocher2DInterpolator(tol=1e-13)
    sites = SITES.copy()
    sites[3] = sites[2]

    def scipy(values, xi=QUERIES):
        return si.CloughTocher2DInterpolator(sites, values, tol=1e-13)(xi)

    queries = QUERIES[np.isfinite(scipy(DATA))]  # (one falls outside the smaller hull)
    w = W[: len(queries)]
    expected = np.stack([scipy(e, queries) for e in np.eye(P)], axis=-1)
    for jac in (jax.jacrev, jax.jacfwd):
        got = jac(adapter, argnums=1)(sites, DATA, queries)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    (transposed,) = jax.linear_transpose(lambda v: adapter(sites, v, queries), DATA)(w)
    np.testing.assert_allclose(transposed, w @ expected, rtol=1e-12, atol=1e-12)


def test_clough_tocher_reproduces_linear_data_and_fills_outside():
    def affine(p):
        return 2.0 - p[:, 0] + 3.0 * p[:, 1]

    xi = np.concatenate([QUERIES, [[2.0, 2.0]]])
    got = CloughTocher2DInterpolator(tol=1e-13)(SITES, affine(SITES), xi)
    np.testing.assert_allclose(got[:-1], affine(QUERIES), rtol=1e-10)
    assert np.isnan(got[-1])
    got = CloughTocher2DInterpolator(fill_value=5.0)(SITES, affine(SITES), xi)
    assert got[-1] == 5.0
    grad = jax.grad(lambda v: CloughTocher2DInterpolator(fill_value=5.0)(SITES, v, xi)[-1])(DATA)
    np.testing.assert_array_equal(grad, 0.0)


def test_clough_tocher_is_not_differentiated_in_points():
    with pytest.raises(
        TypeError,
        match="CloughTocher2DInterpolator is not differentiable in its argument 'points'",
    ):
        jax.grad(lambda p: CloughTocher2DInterpolator()(p, DATA, QUERIES).sum())(SITES)


def test_clough_tocher_refused_data_have_nan_derivatives():
    """With ``on_failure="nan"``, data SciPy refuses give NaN values and NaN derivatives in
    xi and values, never a silent number."""
    collinear = np.stack([np.arange(5.0), 2 * np.arange(5.0)], -1)
    adapter = CloughTocher2DInterpolator(on_failure="nan")
    grads = jax.grad(lambda v, q: adapter(collinear, v, q).sum(), argnums=(0, 1))(DATA[:5], QUERIES)
    for g in grads:
        assert np.isnan(g).all()


def _inside_pieces(points, xi, gap, rescale=False):
    """The queries whose SciPy triangle and centroid split hold a disc around them: every
    barycentric coordinate above ``gap``, the two smallest apart by more (SciPy's split of
    the triangle runs where they are equal), so SciPy's interpolant is one cubic there."""
    interpolant = si.CloughTocher2DInterpolator(points, np.zeros(len(points)), rescale=rescale)
    scaled = (xi - interpolant.offset) / interpolant.scale if rescale else xi
    simplex = interpolant.tri.find_simplex(scaled)
    transform = interpolant.tri.transform[simplex]
    head = np.einsum("mij,mj->mi", transform[:, :2], scaled - transform[:, 2])
    b = np.sort(np.concatenate([head, 1 - head.sum(-1, keepdims=True)], -1), -1)
    return xi[(simplex >= 0) & (b[:, 0] > gap) & (b[:, 1] - b[:, 0] > gap)]


CT_RNG = np.random.default_rng(12)  # its own: the draws above stay as they were
CT_SITES = CT_RNG.uniform(0.0, 1.0, (30, 2))
CT_DATA = np.sin(3 * CT_SITES[:, 0]) * np.cos(2 * CT_SITES[:, 1]) + CT_SITES[:, 1] ** 2
CT_QUERIES = _inside_pieces(CT_SITES, CT_RNG.uniform(0.1, 0.9, (40, 2)), gap=0.02)[:8]
assert len(CT_QUERIES) == 8


def _ct_scipy(values, xi, **options):
    return si.CloughTocher2DInterpolator(CT_SITES, values, **options)(xi)


@pytest.mark.parametrize("rescale", [False, True])
def test_clough_tocher_element_in_jax_is_scipys(rescale):
    """The rules' element (SciPy's coefficient formulas on the host, the Bezier cubic in
    JAX) against SciPy's own evaluation: the tangent along ``values`` itself is that
    element at ``values`` (0 outside the hull); at random queries, at queries 1e-9 from the
    triangles' edges, and with ``rescale`` on sites whose axes differ in scale by 100."""
    stretch = np.array([1.0, 100.0])
    points = CT_SITES * stretch
    interpolant = si.CloughTocher2DInterpolator(points, CT_DATA, rescale=rescale)
    corners = interpolant.tri.points[interpolant.tri.simplices]  # (rescaled when rescale)
    if rescale:
        corners = corners * interpolant.scale + interpolant.offset
    middles = 0.37 * corners + 0.63 * np.roll(corners, -1, axis=1)  # a point on each edge
    normal = (np.roll(corners, -1, axis=1) - corners)[..., ::-1] * [1.0, -1.0]
    normal /= np.linalg.norm(normal / stretch, axis=-1, keepdims=True)
    near_edges = np.concatenate([middles + 1e-9 * normal, middles - 1e-9 * normal])
    uniform = np.random.default_rng(13).uniform(0, 1, (200, 2))
    xi = np.concatenate([uniform * stretch, near_edges.reshape(-1, 2)])
    adapter = CloughTocher2DInterpolator(rescale=rescale)
    _, element = jax.jit(lambda v: jax.jvp(lambda u: adapter(points, u, xi), (v,), (v,)))(CT_DATA)
    expected = interpolant(xi)
    inside = np.isfinite(expected)
    assert inside.sum() > 300
    np.testing.assert_array_equal(element[~inside], 0.0)  # fill_value: no tangent
    np.testing.assert_allclose(element[inside], expected[inside], rtol=0, atol=1e-14)


@pytest.mark.parametrize("jac", [jax.jacrev, pytest.param(jax.jacfwd, marks=SLOW)])
def test_clough_tocher_first_derivatives_in_xi_are_scipys(jac):
    """Jacobians in xi against central differences of SciPy's interpolant in float64, at
    queries inside one cubic piece (with the default ``tol``: exact whatever the fit)."""
    adapter = CloughTocher2DInterpolator()
    got = jac(adapter, argnums=2)(CT_SITES, CT_DATA, CT_QUERIES)
    expected = _central_jacobian(lambda x: _ct_scipy(CT_DATA, x), CT_QUERIES, h=1e-6)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-9 * scale)  # 1.2e-10 measured


@SLOW
def test_clough_tocher_second_derivatives_in_xi_and_values():
    """Hessians in xi (both nestings) against central differences of the exact gradient
    (a quadratic inside one piece, so the differences are exact to rounding); the mixed
    derivative in values and xi (both modes) against central differences in xi of SciPy's
    interpolants of the unit vectors; reverse equals forward."""
    adapter = CloughTocher2DInterpolator(tol=1e-13)

    def f(values, xi):
        return adapter(CT_SITES, values, xi) @ W[: len(CT_QUERIES)]

    gradient = jax.jit(jax.grad(f, argnums=1))
    expected = _central_jacobian(lambda x: np.asarray(gradient(CT_DATA, x)), CT_QUERIES, h=1e-4)
    scale = np.abs(expected).max()
    # (6e-13 of the largest entry measured)
    for hessian in (jax.jacfwd(jax.jacrev(f, 1), 1), jax.jacrev(jax.jacfwd(f, 1), 1)):
        np.testing.assert_allclose(hessian(CT_DATA, CT_QUERIES), expected, atol=1e-10 * scale)
    units = np.eye(len(CT_SITES))
    mixed = np.stack(
        [
            _central_jacobian(lambda x, e=e: _ct_scipy(e, x, tol=1e-13), CT_QUERIES, h=1e-6)
            for e in units
        ],
        axis=-1,
    )  # (m, m, 2, p): ∂ value_i / ∂ xi_j ∂ values_k
    mixed = np.einsum("i,ijdk->jdk", W[: len(CT_QUERIES)], mixed)
    scale = np.abs(mixed).max()
    reverse = jax.jacrev(jax.grad(f, argnums=1), argnums=0)(CT_DATA, CT_QUERIES)
    forward = jax.jacfwd(jax.grad(f, argnums=1), argnums=0)(CT_DATA, CT_QUERIES)
    np.testing.assert_allclose(reverse, mixed, rtol=0, atol=2e-9 * scale)  # 1.4e-10 measured
    np.testing.assert_allclose(forward, reverse, rtol=0, atol=1e-12 * scale)


def test_clough_tocher_exact_on_linear_data():
    """SciPy's element reproduces a linear function (its vertex gradients fit to 1e-13): the
    gradient in xi is the function's slope inside, also 1e-9 from an edge, and 0 outside."""
    slope = np.array([-1.5, 2.5])
    values = 0.5 + CT_SITES @ slope
    tri = si.CloughTocher2DInterpolator(CT_SITES, values).tri
    corners = tri.points[tri.simplices[:4]]
    middles = (corners + np.roll(corners, -1, axis=1)).reshape(-1, 2) / 2
    xi = np.concatenate([CT_QUERIES[:6], middles + 1e-9, middles - 1e-9, [[2.0, 2.0]]])
    adapter = CloughTocher2DInterpolator(tol=1e-13)
    # each value depends on its own query alone: the gradient of the sum holds every one
    grads = jax.jit(jax.grad(lambda q: adapter(CT_SITES, values, q).sum()))(xi)
    inside = np.isfinite(_ct_scipy(values, xi))
    assert inside.sum() >= 20 and not inside[-1]
    np.testing.assert_allclose(
        grads[inside], np.broadcast_to(slope, grads[inside].shape), atol=1e-12
    )
    np.testing.assert_array_equal(grads[~inside], 0.0)


@SLOW
def test_clough_tocher_batches_under_jit():
    """``vmap`` over value vectors, over query sets and over tangents, under ``jit``: each
    element's value, gradient and tangent in xi equal the unbatched call's."""
    adapter = CloughTocher2DInterpolator()
    values = np.stack([CT_DATA, 2 * CT_DATA - CT_SITES[:, 0]])
    queries = np.stack([CT_QUERIES, CT_QUERIES[::-1] * 0.9 + 0.05])
    tangents = np.random.default_rng(14).normal(size=queries.shape)

    def value_and_grad(v, x):
        return jax.value_and_grad(lambda q: adapter(CT_SITES, v, q) @ W[: len(q)])(x)

    def tangent(x, t):
        return jax.jvp(lambda q: adapter(CT_SITES, CT_DATA, q), (x,), (t,))[1]

    by_values = jax.jit(jax.vmap(value_and_grad, (0, None)))(values, CT_QUERIES)
    by_queries = jax.jit(jax.vmap(value_and_grad, (None, 0)))(CT_DATA, queries)
    by_tangents = jax.jit(jax.vmap(tangent))(queries, tangents)
    for i in range(2):
        for got, (value, grad) in (
            ((by_values[0][i], by_values[1][i]), value_and_grad(values[i], CT_QUERIES)),
            ((by_queries[0][i], by_queries[1][i]), value_and_grad(CT_DATA, queries[i])),
        ):
            np.testing.assert_allclose(got[0], value, rtol=1e-13)
            np.testing.assert_allclose(got[1], grad, rtol=1e-12, atol=1e-12)
        jacobian = jax.jacrev(adapter, argnums=2)(CT_SITES, CT_DATA, queries[i])
        expected = np.einsum("ijd,jd->i", jacobian, tangents[i])
        np.testing.assert_allclose(by_tangents[i], expected, rtol=1e-12, atol=1e-12)


# --- errors and batches shared by the triangulated ones -------------------------------------


@pytest.mark.parametrize("make", [LinearNDInterpolator, CloughTocher2DInterpolator])
@pytest.mark.parametrize(
    ("points", "values", "message"),
    [
        (
            SITES[:2],
            DATA[:2],
            "argument 'points' has 2 points; a triangulation in 2 dimensions needs at least 3",
        ),
        (SITES, np.where(DATA > 1, np.inf, DATA), "argument 'values' has non-finite"),
        (
            np.stack([np.arange(5.0), 2 * np.arange(5.0)], -1),
            DATA[:5],
            "SciPy refused the data \\(argument 'points'\\)",
        ),
    ],
)
def test_bad_data_is_an_error_naming_the_argument(make, points, values, message):
    name = make.__name__
    with pytest.raises(ValueError, match=f"{name}: {message}"):
        make()(points, values, QUERIES)
    assert np.isnan(make(on_failure="nan")(points, values, QUERIES)).all()


@pytest.mark.parametrize("make", [LinearNDInterpolator, CloughTocher2DInterpolator])
def test_on_failure_nan_is_per_batch_element(make):
    values = np.stack([DATA, np.where(DATA > 1, np.nan, DATA)])
    got = jax.jit(make(on_failure="nan"))(SITES, values, QUERIES)
    expected = getattr(si, make.__name__)(SITES, DATA)(QUERIES)
    np.testing.assert_allclose(got[0], expected, rtol=1e-13)
    assert np.isnan(got[1]).all()
    gradient = jax.grad(lambda v: jnp.sum(make()(SITES, v, QUERIES) * W))(values[0])
    assert np.isfinite(gradient).all()


@SLOW
@pytest.mark.parametrize("make", [RBFInterpolator, LinearNDInterpolator])
def test_float32(make):
    """float32 in, float32 out (values and gradients), near SciPy's float64 values; the
    property suite checks these two in float64 alone (their float32 runs cost minutes)."""
    reference = getattr(si, make.__name__)(SITES, DATA)(QUERIES)
    with jax.enable_x64(False):
        args = [a.astype(np.float32) for a in (SITES, DATA, QUERIES)]
        got = make()(*args)
        grads = jax.grad(lambda *a: make()(*a).sum(), argnums=(0, 1, 2))(*args)
    assert got.dtype == np.float32 and all(g.dtype == np.float32 for g in grads)
    np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-4)
    expected = jax.grad(lambda *a: make()(*a).sum(), argnums=(0, 1, 2))(SITES, DATA, QUERIES)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=0, atol=2e-3 * np.abs(e).max())
