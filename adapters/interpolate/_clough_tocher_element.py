"""SciPy's Clough-Tocher element, split where its derivatives split: on the host, per query,
the affine barycentric map of its triangle (``BarycentricMap``, fixed) and the triangle's 19
Bezier control coefficients (``ControlCoefficients``, linear in the values, a NumPy port of
SciPy's ``_clough_tocher_2d_single``); in JAX, the cubic Bezier polynomial in the
barycentric coordinates (``bezier``), which the rules differentiate in the queries."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

import jaxbridge as jb

from ._scattered import Scattered, refused_by_scipy
from ._sizes import refused

# The control coefficients' order, as exponents (i, j, k, l) of the sub-coordinates
# (b1, b2, b3, b4): SciPy's c3000, c2100, ... in the order its polynomial sums them
EXPONENTS = np.array([
    (3, 0, 0, 0), (2, 1, 0, 0), (2, 0, 1, 0), (2, 0, 0, 1), (1, 2, 0, 0),
    (1, 1, 0, 1), (1, 0, 2, 0), (1, 0, 1, 1), (1, 0, 0, 2), (0, 3, 0, 0),
    (0, 2, 1, 0), (0, 2, 0, 1), (0, 1, 2, 0), (0, 1, 1, 1), (0, 1, 0, 2),
    (0, 0, 3, 0), (0, 0, 2, 1), (0, 0, 1, 2), (0, 0, 0, 3),
])  # fmt: skip
_MULTINOMIALS = np.array([6 / math.prod(math.factorial(e) for e in p) for p in EXPONENTS])


def bezier(b: jax.Array, coefficients: jax.Array) -> jax.Array:
    """The cubic at barycentric coordinates ``b`` (..., 3) with ``coefficients`` (..., 19):
    SciPy's split of the triangle into three about its centroid, ``b1..b3 = b - min(b)``,
    ``b4 = 3 min(b)``, and ``Σ 3!/(i! j! k! l!) b1ⁱ b2ʲ b3ᵏ b4ˡ c_ijkl`` (``c0003`` last)."""
    low = jnp.min(b, axis=-1, keepdims=True)
    sub = jnp.concatenate([b - low, 3 * low], axis=-1)
    # powers 0 to 3 as products (a zeroth power's derivative at 0 is 0, not 0 * inf)
    powers = jnp.stack([jnp.ones_like(sub), sub, sub * sub, sub * sub * sub], axis=-1)
    monomials = jnp.ones(coefficients.shape, coefficients.dtype)
    for axis in range(4):
        monomials = monomials * powers[..., axis, EXPONENTS[:, axis]]
    # about the centre's coefficient: the basis sums to 1, so this is the same cubic, but
    # on constant data its derivatives are exactly 0 (the basis' cancel only to rounding)
    centre = coefficients[..., -1:]
    # (a NumPy float64 constant here, traced once with 64-bit mode off, was lowered as float32
    # into a later float64 program; JAX's own array in the coefficients' dtype is not)
    weights = jnp.asarray(_MULTINOMIALS, coefficients.dtype)
    return centre[..., 0] + jnp.sum(weights * (coefficients - centre) * monomials, axis=-1)


def barycentric(maps: jax.Array, xi: jax.Array) -> jax.Array:
    """Barycentric coordinates (..., 3) of ``xi`` (..., 2) from ``BarycentricMap``'s rows
    ``(T₀, T₁, r)``: ``T (xi - r)`` and one minus their sum, as SciPy computes them."""
    head = jnp.einsum("...ij,...j->...i", maps[..., :2, :], xi - maps[..., 2, :])
    return jnp.concatenate([head, 1 - head[..., :1] - head[..., 1:]], axis=-1)


class BarycentricMap(jb.Adapter):
    """Per query, the barycentric map of the triangle of ``of``'s triangulation that holds
    it, (m, 3, 2): rows ``T₀, T₁, r`` with coordinates ``T (xi - r)``, in the caller's
    coordinates (SciPy's ``rescale`` folded in). Zero outside the hull (a triangle's map
    never is), NaN when the data are refused; no derivatives (called on
    ``stop_gradient`` arguments)."""

    of: Scattered

    signature = "(p,n),(m,n)->(m,k,n)"
    blas_threads = 1  # the triangulation's queries, as Scattered's

    def output_specs(self, points, xi):
        return jax.ShapeDtypeStruct(xi.shape[-2:-1] + (3, 2), jb.result_dtype(points, xi))

    def forward(self, points, xi):
        dtype = jb.result_dtype(points, xi)
        located = _locate(self.of, points, xi)
        if located is None:
            return np.full(xi.shape[:-1] + (3, 2), np.nan, dtype)
        interpolant, simplex = located
        maps = np.zeros(xi.shape[:-1] + (3, 2))
        inside = simplex >= 0
        transform = interpolant.tri.transform[simplex[inside]]  # (·, 3, 2), rescaled coords
        scale, offset = _scaling(self.of, interpolant)
        # T ((x - offset) / scale - r) = (T / scale) (x - (offset + scale r))
        maps[inside, :2] = transform[:, :2] / scale
        maps[inside, 2] = offset + scale * transform[:, 2]
        return maps.astype(dtype)


class ControlCoefficients(jb.Adapter):
    """Per query, the 19 control coefficients (``EXPONENTS``' order) of the Clough-Tocher
    cubic on the triangle of ``of``'s interpolant through ``(points, values)`` that holds it,
    (m, 19); 0 outside the hull, NaN when the data are refused. Linear in ``values`` (up to
    the vertex gradients' ``tol``); its pullback is ``TransposedCoefficients``, whose
    pullback is this again."""

    of: Scattered

    signature = "(p,n),(p),(m,n)->(m,k)"
    blas_threads = 1  # the triangulation's queries, as Scattered's
    linear_in = ("values",)

    def output_specs(self, points, values, xi):
        dtype = jb.result_dtype(points, values, xi)
        return jax.ShapeDtypeStruct(xi.shape[-2:-1] + (len(EXPONENTS),), dtype)

    def forward(self, points, values, xi):
        dtype = jb.result_dtype(points, values, xi)
        v64 = np.asarray(values, np.float64)
        located = _locate(self.of, points, xi, v64)
        if located is None:
            return np.full(xi.shape[:-1] + (len(EXPONENTS),), np.nan, dtype)
        interpolant, simplex = located
        tri, inside = interpolant.tri, simplex >= 0
        vertices = tri.simplices[simplex[inside]]  # (·, 3)
        local = _control_coefficients(
            tri, simplex[inside], v64[vertices][..., None], interpolant.grad[vertices]
        )
        coefficients = np.zeros(xi.shape[:-1] + (len(EXPONENTS),))
        coefficients[inside] = local[..., 0]
        return coefficients.astype(dtype)

    def pushforward(self, res, tangents):
        points, _, xi = res[:3]
        dvalues = tangents[1]
        return None if dvalues is None else self(points, dvalues, xi)

    def pullback(self, res, g):
        points, _, xi = res[:3]
        return None, TransposedCoefficients(self.of)(points, g, xi), None


class TransposedCoefficients(jb.Adapter):
    """``values̄ = Aᵀ g`` for ``ControlCoefficients``' linear map ``A`` at ``xi``: each
    triangle's coefficients are linear in its vertices' values and gradients (a 19 x 9
    matrix from SciPy's formulas on unit data), the vertex gradients linear in all the
    values (SciPy's fit of the p unit vectors, a (p, p, 2) array). Linear in ``g``; its
    pullback is ``ControlCoefficients``."""

    of: Scattered

    signature = "(p,n),(m,k),(m,n)->(p)"
    blas_threads = 1  # the triangulation's queries, as Scattered's
    linear_in = ("g",)

    def output_specs(self, points, g, xi):
        return jax.ShapeDtypeStruct(points.shape[-2:-1], jb.result_dtype(points, g, xi))

    def forward(self, points, g, xi):
        dtype = jb.result_dtype(points, g, xi)
        p = points.shape[0]
        located = _locate(self.of, points, xi, np.eye(p))
        if located is None:
            return np.full(p, np.nan, dtype)
        interpolant, simplex = located
        tri, inside = interpolant.tri, simplex >= 0
        vertices = tri.simplices[simplex[inside]]  # (q, 3)
        # unit data of the 3 vertices: values (q, 3, 9), gradients (q, 3, 9, 2)
        unit = np.eye(9).reshape(9, 3, 3).transpose(1, 2, 0)  # [vertex, (f, ∂x, ∂y), 9]
        count = len(vertices)
        f = np.broadcast_to(unit[:, 0], (count, 3, 9))
        df = np.broadcast_to(unit[:, 1:].transpose(0, 2, 1), (count, 3, 9, 2))
        local = _control_coefficients(tri, simplex[inside], f, df)  # (q, 19, 9)
        local_bar = np.einsum("qkj,qk->qj", local, np.asarray(g, np.float64)[inside])
        local_bar = local_bar.reshape(count, 3, 3)  # [query, vertex, (f, ∂x, ∂y)]
        values_bar = np.zeros(p)
        gradient_bar = np.zeros((p, 2))
        np.add.at(values_bar, vertices, local_bar[..., 0])
        np.add.at(gradient_bar, vertices, local_bar[..., 1:])
        # the vertex gradients of the unit vectors: grad[i, j] is ∂/∂x of unit vector j at
        # i; over the triangles' vertices alone, as a point Qhull leaves out of every
        # triangle (a repeated one) has NaN there, whose 0 cotangent made every value's NaN
        used = np.unique(tri.simplices)
        values_bar += np.einsum("ijd,id->j", interpolant.grad[used], gradient_bar[used])
        return values_bar.astype(dtype)

    def pushforward(self, res, tangents):
        points, _, xi = res[:3]
        dg = tangents[1]
        return None if dg is None else self(points, dg, xi)

    def pullback(self, res, ct):
        points, _, xi = res[:3]
        return None, ControlCoefficients(self.of)(points, ct, xi), None


def _locate(
    of: Scattered, points: np.ndarray, xi: np.ndarray, values: np.ndarray | None = None
) -> tuple[Any, np.ndarray] | None:
    """SciPy's interpolant through ``(points, values)`` (zeros: the triangulation alone) and
    the simplex of each query in it (-1 outside the hull); None if the data are refused
    with ``on_failure="nan"``, ``of``'s error with "raise" (see ``_sizes``)."""
    p64, xi64 = np.asarray(points, np.float64), np.asarray(xi, np.float64)
    values = np.zeros(p64.shape[0]) if values is None else values
    owner = type(of).__name__
    if refused(owner, of.on_failure, of.problem(p64, values, xi64)):
        return None
    try:
        interpolant = of.interpolant(p64, values)
    except (ValueError, scipy.spatial.QhullError) as error:
        refused(owner, of.on_failure, refused_by_scipy(error))
        return None
    scale, offset = _scaling(of, interpolant)
    return interpolant, interpolant.tri.find_simplex((xi64 - offset) / scale)


def _scaling(of: Scattered, interpolant: Any) -> tuple[np.ndarray, np.ndarray]:
    """SciPy's ``rescale``: its triangulation is of ``(points - offset) / scale``."""
    if of.rescale:
        return interpolant.scale, interpolant.offset
    return np.ones(2), np.zeros(2)


def _control_coefficients(tri, simplex, f, df):
    """SciPy's ``_clough_tocher_2d_single`` up to its evaluation, vectorised: the control
    coefficients (q, 19, t) of triangles ``simplex`` (q,) of ``tri`` from their vertices'
    values ``f`` (q, 3, t) and gradients ``df`` (q, 3, t, 2), in SciPy's order of
    operations (so equal to its own to rounding)."""
    corners = tri.points[tri.simplices[simplex]][:, :, None, :]  # (q, 3, 1, 2)
    e12 = corners[:, 1] - corners[:, 0]
    e23 = corners[:, 2] - corners[:, 1]
    e31 = corners[:, 0] - corners[:, 2]

    def along(vertex, edge):
        return df[:, vertex, :, 0] * edge[..., 0] + df[:, vertex, :, 1] * edge[..., 1]

    f1, f2, f3 = f[:, 0], f[:, 1], f[:, 2]
    df12, df21 = +along(0, e12), -along(1, e12)
    df23, df32 = +along(1, e23), -along(2, e23)
    df31, df13 = +along(2, e31), -along(0, e31)

    c3000 = f1
    c2100 = (df12 + 3 * c3000) / 3
    c2010 = (df13 + 3 * c3000) / 3
    c0300 = f2
    c1200 = (df21 + 3 * c0300) / 3
    c0210 = (df23 + 3 * c0300) / 3
    c0030 = f3
    c1020 = (df31 + 3 * c0030) / 3
    c0120 = (df32 + 3 * c0030) / 3

    c2001 = (c2100 + c2010 + c3000) / 3
    c0201 = (c1200 + c0300 + c0210) / 3
    c0021 = (c1020 + c0120 + c0030) / 3

    g0, g1, g2 = _edge_directions(tri, simplex)
    c0111 = (
        g0 * (-c0300 + 3 * c0210 - 3 * c0120 + c0030) + (-c0300 + 2 * c0210 - c0120 + c0021 + c0201)
    ) / 2
    c1011 = (
        g1 * (-c0030 + 3 * c1020 - 3 * c2010 + c3000) + (-c0030 + 2 * c1020 - c2010 + c2001 + c0021)
    ) / 2
    c1101 = (
        g2 * (-c3000 + 3 * c2100 - 3 * c1200 + c0300) + (-c3000 + 2 * c2100 - c1200 + c2001 + c0201)
    ) / 2

    c1002 = (c1101 + c1011 + c2001) / 3
    c0102 = (c1101 + c0111 + c0201) / 3
    c0012 = (c1011 + c0111 + c0021) / 3
    c0003 = (c1002 + c0102 + c0012) / 3

    # EXPONENTS' order
    return np.stack(
        [c3000, c2100, c2010, c2001, c1200, c1101, c1020, c1011, c1002, c0300]
        + [c0210, c0201, c0120, c0111, c0102, c0030, c0021, c0012, c0003],
        axis=1,
    )


def _edge_directions(tri, simplex):
    """SciPy's affine-invariant ``g`` of the three edges (each (q, 1)): the cross-edge
    derivative is taken towards the neighbour's centroid, or the centroid direction on
    the hull."""
    g = np.full((3, len(simplex)), -0.5)
    for k in range(3):
        neighbour = tri.neighbors[simplex, k]
        has = neighbour >= 0
        corners = tri.points[tri.simplices[neighbour[has]]]
        centroid = (corners[:, 0] + corners[:, 1] + corners[:, 2]) / 3
        transform = tri.transform[simplex[has]]
        shifted = centroid - transform[:, 2]
        c0 = transform[:, 0, 0] * shifted[:, 0] + transform[:, 0, 1] * shifted[:, 1]
        c1 = transform[:, 1, 0] * shifted[:, 0] + transform[:, 1, 1] * shifted[:, 1]
        c = (c0, c1, 1.0 - c0 - c1)
        # the edge opposite vertex k, from its two other vertices
        near, far = c[(k + 2) % 3], c[(k + 1) % 3]
        g[k, has] = (2 * near + far - 1) / (2 - 3 * near - 3 * far)
    return g[0][:, None], g[1][:, None], g[2][:, None]
