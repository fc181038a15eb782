"""``ConvexHull`` and ``Delaunay``: SciPy's volumes, areas and simplices; derivatives with
the facets or the triangulation held fixed against central differences of SciPy's own
hull and closed forms (a square's shoelace and perimeter); bad input named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.spatial

from jaxbridge import host_errors
from jaxbridge.adapters._shared._portable_linalg import det
from jaxbridge.adapters.spatial import ConvexHull, Delaunay
from jaxbridge.adapters.spatial._simplices import most_facets
from jaxbridge.testing import check_adapter

RNG = np.random.default_rng(4)
SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.4, 0.3]])


def central(fun, x, h=1e-6):
    columns = []
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((fun(x + step) - fun(x - step)) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(fun(x)) + x.shape)


@pytest.mark.parametrize("d", [2, 3, pytest.param(4, marks=pytest.mark.slow)])
def test_hull_volume_and_area_are_scipys_and_their_derivatives_its_differences(d):
    points = RNG.normal(size=(10, d))
    with jax.enable_x64(True):
        volume, area = ConvexHull()(points)
        jacobian = jax.jacrev(lambda x: jnp.stack(ConvexHull()(x)))(jnp.asarray(points))
        tangent = jax.jvp(lambda x: jnp.stack(ConvexHull()(x)), (points,), (points[::-1],))[1]
    hull = scipy.spatial.ConvexHull(points)
    assert float(volume) == hull.volume and float(area) == hull.area

    def scipys(x):
        hull = scipy.spatial.ConvexHull(x)
        return np.array([hull.volume, hull.area])

    expected = central(scipys, points)
    np.testing.assert_allclose(jacobian, expected, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(tangent, np.tensordot(expected, points[::-1], 2), rtol=1e-7)
    inside = np.setdiff1d(np.arange(10), hull.vertices)
    np.testing.assert_array_equal(jacobian[:, inside], 0)  # (inner points do not move it)


@pytest.mark.parametrize(("d", "seed"), [(2, 1), (3, 0)])
def test_a_facet_that_starts_at_point_0_counts(d, seed):
    """Padded facets are rows of -1, real ones start at a vertex index >= 0: where Qhull
    lists point 0 first in a facet (these clouds), a test ``> 0`` would drop that facet, and
    no other test had point 0 there (in the square Qhull lists it second)."""
    points = np.random.default_rng(seed).normal(size=(7 if d == 2 else 9, d))
    hull = scipy.spatial.ConvexHull(points)
    assert (hull.simplices[:, 0] == 0).any()  # (the case this test is for)
    with jax.enable_x64(True):
        jacobian = jax.jacrev(lambda x: jnp.stack(ConvexHull()(x)))(jnp.asarray(points))

    def scipys(x):
        hull = scipy.spatial.ConvexHull(x)
        return np.array([hull.volume, hull.area])

    np.testing.assert_allclose(jacobian, central(scipys, points), rtol=1e-7, atol=1e-8)


def _float_shapes(jaxpr):
    """The shapes of every floating-point value a program computes, sub-programs included."""
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            if jnp.issubdtype(var.aval.dtype, jnp.floating):
                yield var.aval.shape
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _float_shapes(inner)


def test_a_6d_hull_differentiates_in_its_real_facets():
    """100 random points in 6-D: 3,194 facets, where the Upper Bound Theorem allows
    152,000 (the residual's rows). The first derivatives work on the real facets on the
    host: no floating-point array in the program has a row per possible facet (the rule in
    JAX over every row built 152,000 6 x 6 determinants, which blocked XLA's threads and
    never returned), and they match central differences of SciPy's volume and area along
    random directions (steps of 1e-6: at 1e-5 points near a facet join the hull)."""
    points = np.random.default_rng(0).normal(size=(100, 6))
    most = most_facets(100, 6)
    with jax.enable_x64(True):

        def measures(x):
            return jnp.stack(ConvexHull()(x))

        for transform in (jax.jacrev, jax.jacfwd):
            program = jax.make_jaxpr(transform(measures))(points).jaxpr
            assert not any(most in shape for shape in _float_shapes(program))
        jacobian = np.asarray(jax.jit(jax.jacrev(measures))(points))
        directions = np.random.default_rng(1).normal(size=(3, *points.shape))
        tangents = [jax.jvp(measures, (points,), (t,))[1] for t in directions]

    def scipys(x):
        hull = scipy.spatial.ConvexHull(x)
        return np.array([hull.volume, hull.area])

    for direction, tangent in zip(directions, tangents):
        h = 1e-6
        expected = (scipys(points + h * direction) - scipys(points - h * direction)) / (2 * h)
        np.testing.assert_allclose(tangent, expected, rtol=1e-6)
        np.testing.assert_allclose(np.tensordot(jacobian, direction, 2), expected, rtol=1e-6)


def test_a_6d_hulls_second_derivative_returns_and_is_its_gradients_differences():
    """A Hessian-vector product of the volume of 75 random points in 6-D: the rules in JAX
    run over every one of the Upper Bound Theorem's 62,125 rows. With determinants by XLA's
    batched LU it never returned (float32), and in float64 the cofactor expansion kept for
    a TPU took 55 s to trace at 12 points; it must match central differences of the
    first derivatives (computed on the host, on the real facets)."""
    points = np.random.default_rng(0).normal(size=(75, 6))
    direction = np.random.default_rng(1).normal(size=points.shape)
    with jax.enable_x64(True):

        def gradient(x):
            return jax.grad(lambda x: ConvexHull()(x)[0])(x)

        second = np.asarray(
            jax.jit(lambda x, t: jax.jvp(gradient, (x,), (t,))[1])(points, direction)
        )
        h = 1e-6
        expected = (gradient(points + h * direction) - gradient(points - h * direction)) / (2 * h)
    np.testing.assert_allclose(second, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_the_geometry_determinant_is_lus_without_xlas_lu(n):
    """``_portable_linalg.det``: NumPy's determinant, its gradient the adjugate's transpose
    (at a singular matrix too), with no LAPACK call in its second derivative's program."""
    rng = np.random.default_rng(n)
    a = rng.normal(size=(20, n, n))
    with jax.enable_x64(True):
        np.testing.assert_allclose(det(jnp.asarray(a)), np.linalg.det(a), rtol=1e-12)
        adjugate = np.linalg.det(a[0]) * np.linalg.inv(a[0]).T
        np.testing.assert_allclose(jax.grad(det)(jnp.asarray(a[0])), adjugate, rtol=1e-10)
        program = jax.jit(lambda x, t: jax.jvp(jax.grad(lambda x: det(x).sum()), (x,), (t,))[1])
        assert "custom_call" not in program.lower(a, a).as_text()
    singular = jnp.asarray([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    adjugate_t = [[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]]  # by cofactors
    np.testing.assert_allclose(jax.grad(det)(singular), adjugate_t, atol=1e-12)


def test_closed_form_of_a_square():
    """The unit square and an inner point: area 1 and perimeter 4; moving the corner (1, 1)
    along x grows the area by 1/2 (the shoelace: ``(y_next - y_previous) / 2``) and the
    perimeter by 1 (the top edge); moving (0, 0) along y shrinks the area by 1/2."""
    with jax.enable_x64(True):
        volume, area = ConvexHull()(SQUARE)
        d_volume, d_area = jax.jacrev(lambda x: jnp.stack(ConvexHull()(x)))(jnp.asarray(SQUARE))
    assert (float(volume), float(area)) == (1.0, 4.0)
    np.testing.assert_allclose(d_volume[2], [0.5, 0.5], atol=1e-15)
    np.testing.assert_allclose(d_volume[0], [-0.5, -0.5], atol=1e-15)
    np.testing.assert_allclose(d_area[2], [1.0, 1.0], atol=1e-15)
    np.testing.assert_array_equal(d_volume[4], [0.0, 0.0])


@pytest.mark.slow
def test_second_derivative_of_a_squares_area_is_the_shoelaces():
    """``A = ½ Σ (x_i y_{i+1} - x_{i+1} y_i)`` counter-clockwise: ``∂²A/∂x_2∂y_3 = ½``,
    ``∂²A/∂x_3∂y_2 = -½``, and 0 for the inner point."""
    with jax.enable_x64(True):
        second = jax.hessian(lambda x: ConvexHull()(x)[0])(jnp.asarray(SQUARE))
    np.testing.assert_allclose(second[2, 0, 3, 1], 0.5, atol=1e-15)
    np.testing.assert_allclose(second[3, 0, 2, 1], -0.5, atol=1e-15)
    np.testing.assert_array_equal(second[4], 0)


def test_delaunay_simplices_are_scipys_and_volumes_differentiate_with_them_fixed():
    points = RNG.normal(size=(12, 2))
    with jax.enable_x64(True):
        simplices, volumes = map(np.asarray, Delaunay()(points))
        jacobian = np.asarray(jax.jacfwd(lambda x: Delaunay()(x)[1])(jnp.asarray(points)))
    expected = np.sort(scipy.spatial.Delaunay(points).simplices, -1)
    expected = expected[np.lexsort(expected.T[::-1])]  # (rows and rows' indices sorted)
    count = len(expected)
    assert simplices.dtype == np.int32 and simplices.shape == (2 * 12 - 2, 3)
    np.testing.assert_array_equal(simplices[:count], expected)
    np.testing.assert_array_equal(simplices[count:], -1)
    np.testing.assert_array_equal(volumes[count:], 0)
    hull = scipy.spatial.ConvexHull(points)
    np.testing.assert_allclose(np.sum(volumes), hull.volume, rtol=1e-14)
    for simplex, volume in zip(expected, volumes):  # (each a triangle: its own hull's area)
        np.testing.assert_allclose(volume, scipy.spatial.ConvexHull(points[simplex]).volume)

    def areas(x):  # (SciPy's areas of the same triangles)
        return np.array([scipy.spatial.ConvexHull(x[s]).volume for s in expected])

    np.testing.assert_allclose(jacobian[:count], central(areas, points), rtol=1e-7, atol=1e-8)
    # the whole triangulation's area is the hull's, and so is its gradient
    hull_gradient = central(lambda x: scipy.spatial.ConvexHull(x).volume, points)
    np.testing.assert_allclose(jacobian.sum(0), hull_gradient, rtol=1e-7, atol=1e-8)


def test_vmap_and_every_transformation():
    batch = RNG.normal(size=(3, 8, 3))
    with jax.enable_x64(True):
        check_adapter(Delaunay(), batch[0], seed=0, checks=("specs", "vmap", "jvp", "transpose"))
        volumes, areas = jax.jit(jax.vmap(ConvexHull()))(batch)
    for points, volume, area in zip(batch, volumes, areas):
        hull = scipy.spatial.ConvexHull(points)
        assert (float(volume), float(area)) == (hull.volume, hull.area)


@pytest.mark.slow
def test_check_adapter_every_check():
    with jax.enable_x64(True):
        check_adapter(ConvexHull(), RNG.normal(size=(9, 3)), seed=1)
        check_adapter(Delaunay(), RNG.normal(size=(7, 2)), seed=1)


def test_bad_input_is_named():
    with jax.enable_x64(True):
        for adapter in (ConvexHull(), Delaunay()):
            name = type(adapter).__name__
            with pytest.raises(ValueError, match=f"{name}.*'points'.*more points than dim"):
                adapter(np.ones((2, 2)))
            with pytest.raises(ValueError, match=f"{name}.*'points' has no full-dimensional"):
                adapter(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]))
            with pytest.raises(ValueError, match=f"{name}.*'points'.*non-finite"):
                adapter(np.array([[0.0, 0.0], [1.0, np.nan], [2.0, 0.0]]))
    with pytest.raises(ValueError, match="ConvexHull: parameter 'qhull_options'"):
        ConvexHull(qhull_options=3)


def test_points_of_no_coordinates_are_named():
    """d = 0: ConvexHull's residual shapes asked for C(n, -1) and failed with
    "k must be a non-negative integer" (#54's search of empty inputs), eager and jitted."""
    with jax.enable_x64(True):
        for adapter in (ConvexHull(), Delaunay()):
            name = type(adapter).__name__
            for call in (adapter, jax.jit(adapter)):
                with (
                    pytest.raises(ValueError, match=f"{name}.*'points'.*got 4 in 0"),
                    host_errors(),
                ):
                    call(np.zeros((4, 0)))
