"""``ConvexHull``: SciPy's (Qhull's) convex hull's volume and area, differentiable in the
points with the hull's facets held fixed."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

import jaxbridge as jb

from .._shared._rules import compiled
from ._simplices import facet_areas, most_facets, simplex_volumes


class ConvexHull(jb.Adapter):
    """The volume and surface area of the convex hull of ``points``, with SciPy's Qhull on
    the host: ``volume, area = ConvexHull()(points)``, as ``hull =
    scipy.spatial.ConvexHull(points)``; ``hull.volume, hull.area``.

    ``points`` is (n, d), ``d >= 2``, with ``n > d`` points not all in one hyperplane;
    ``volume`` and ``area`` are numbers (for ``d = 2``, SciPy's area and perimeter). Leading
    axes are batch axes (one hull per batch element).

    Parameters:
        qhull_options: Qhull's options, as SciPy's (``None``: SciPy's default).

    Derivatives: in ``points``, to every order, with the hull's facets (Qhull's
    triangulated ``simplices``) held fixed: the volume as the sum of the simplices each
    facet spans with an interior point, the area as the sum of the facets' measures. That
    is the derivative wherever the hull's combinatorics do not change under a small move:
    points inside the hull get 0. Where a point lies on a facet without being its vertex,
    or a facet is not a simplex (four coplanar vertices in 3D, which Qhull triangulates),
    this is the derivative along Qhull's triangulation. First derivatives run on the host
    on the facets Qhull found (``_Gradients``), at a cost that follows them; second and
    higher ones are JAX over the facets padded to the most there can be, which grow as
    ``n^(d/2)`` (``2 n - 4`` in 3D, 152,000 for 100 points in 6D).
    """

    qhull_options: str | None = None

    signature = "(n,d)->(),()"

    def __post_init__(self) -> None:
        if self.qhull_options is not None and not isinstance(self.qhull_options, str):
            raise ValueError(
                "ConvexHull: parameter 'qhull_options' must be a string of Qhull's options "
                f"or None; got {self.qhull_options!r}."
            )

    def output_specs(self, points):
        dtype = jb.result_dtype(points)
        return jax.ShapeDtypeStruct((), dtype), jax.ShapeDtypeStruct((), dtype)

    def residual_specs(self, points):
        # the facets' vertex indices, padded with -1 to the most there can be
        n, d = points.shape[-2:]
        return jax.ShapeDtypeStruct((max(most_facets(n, d), 1), d), np.int32)

    def check(self, points):
        n, d = points.shape[-2:]
        if d < 2 or n <= d:
            raise ValueError(
                f"argument 'points' must hold more points than dimensions, in 2 or more "
                f"dimensions; got {n} in {d}."
            )
        if not np.isfinite(points).all():
            raise ValueError("argument 'points' has non-finite entries (NaN or inf).")

    def forward(self, points):
        try:
            hull = scipy.spatial.ConvexHull(points, qhull_options=self.qhull_options)
        except scipy.spatial.QhullError as error:
            first = str(error).strip().splitlines()[0]
            raise ValueError(
                f"argument 'points' has no full-dimensional hull (Qhull: {first})."
            ) from None
        n, d = points.shape
        facets = np.full((max(most_facets(n, d), 1), d), -1, np.int32)
        facets[: len(hull.simplices)] = hull.simplices
        dtype = jb.result_dtype(points)
        return np.asarray(hull.volume, dtype), np.asarray(hull.area, dtype), facets

    def pullback(self, res, g):
        points, _, _, facets = res
        g_volume, g_area = g
        volume, area = _Gradients()(points, facets)
        return (g_volume[..., None, None] * volume + g_area[..., None, None] * area,)

    def pushforward(self, res, tangents):
        points, _, _, facets = res
        (t,) = tangents
        volume, area = _Gradients()(points, facets)
        return jnp.sum(volume * t, (-2, -1)), jnp.sum(area * t, (-2, -1))


class _Gradients(jb.Adapter):
    """The gradients of the volume and the area of the hull of ``points`` (n, d) in the
    points, with its facets ``facets`` (f, d) held fixed (rows of -1: none), on the host:
    NumPy on the real facets alone, as many as Qhull found. The rows of -1 pad ``facets``
    to the Upper Bound Theorem's count, which grows as ``n^(d/2)``: 152,000 rows for 3,200
    real facets at n = 120 in 6-D, where batched determinants of every row in JAX blocked
    XLA's threads and never returned.

    Its own rules (second and higher derivatives of the hull) are ``_measures``' in JAX,
    over every row: they do grow as ``n^(d/2)``, elementwise (``_portable_linalg.det``: 2 s
    for a Hessian-vector product at n = 75 in 6-D, 62,125 rows)."""

    signature = "(n,d),(f,d)->(n,d),(n,d)"

    def forward(self, points, facets):
        dtype = jb.result_dtype(points)
        points = np.asarray(points, np.float64)
        facets = facets[facets[:, 0] >= 0]
        n, d = points.shape
        volume, area = np.zeros((n, d)), np.zeros((n, d))
        corners = points[facets]  # (f, d, d)
        # the cones from the points' mean (an interior point): |det| of their edges, whose
        # gradient in the edges is the adjugate's transpose, U diag(Π_{j≠i} s_j) Vᵀ from
        # the SVD (defined where a cone is flat, as the inverse is not)
        cones = corners - points.mean(0)
        np.add.at(volume, facets, _products_gradient(cones) / math.factorial(d))
        # the facets' measures Π s (the singular values of their d - 1 edges from the first
        # corner): the same form; 0 where a facet is flat, as _measures' where its Gram is 0
        edges = corners[:, 1:] - corners[:, :1]
        gradient = _products_gradient(edges) / math.factorial(d - 1)
        np.add.at(area, facets[:, 1:], gradient)
        np.add.at(area, facets[:, 0], -gradient.sum(1))
        return volume.astype(dtype), area.astype(dtype)

    @compiled
    def pullback(self, res, g):
        points, facets, _, _ = res
        return jax.vjp(lambda x: _measure_gradients(x, facets), points)[1](g)[0], None

    @compiled
    def pushforward(self, res, tangents):
        points, facets, _, _ = res
        t, _ = tangents
        points = jnp.broadcast_to(points, t.shape)  # (a tangent may add a batch)
        return jax.jvp(lambda x: _measure_gradients(x, facets), (points,), (t,))[1]


def _products_gradient(a: np.ndarray) -> np.ndarray:
    """The gradient of the product of the singular values of each (..., k, d) ``a``, k <= d
    (``|det a|`` for k = d): ``U diag(Π_{j≠i} s_j) Vᵀ``; 0 where two of them are 0, and
    where the product is 0 (a flat facet, as ``facet_areas`` gives) for k < d."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    k = s.shape[-1]
    others = np.stack([np.prod(np.delete(s, i, -1), -1) for i in range(k)], -1)
    if k < a.shape[-1]:
        others = np.where(np.prod(s, -1, keepdims=True) > 0, others, 0)
    return (u * others[..., None, :]) @ vt


def _measures(points: jax.Array, facets: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The volume and area of the hull of (..., n, d) ``points`` whose facets are (..., f,
    d) ``facets`` (rows of -1: none), in JAX."""
    real = facets[..., 0] >= 0
    corners = jnp.take_along_axis(
        points[..., None, :, :], jnp.where(real[..., None], facets, 0)[..., None], -2
    )  # (..., f, d, d)
    # the cones from an interior point, the points' mean (a combination with positive
    # weights); the sum of their volumes does not depend on it
    centre = jax.lax.stop_gradient(points.mean(-2))
    apex = jnp.broadcast_to(centre[..., None, None, :], (*corners.shape[:-2], 1, corners.shape[-1]))
    volume = jnp.sum(jnp.where(real, simplex_volumes(jnp.concatenate([corners, apex], -2)), 0), -1)
    area = jnp.sum(jnp.where(real, facet_areas(corners), 0), -1)
    return volume, area


def _measure_gradients(points: jax.Array, facets: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``_Gradients``' values in JAX, over every row of ``facets``."""
    measures = jnp.vectorize(_measures, signature="(n,d),(f,d)->(),()")
    volume = jax.grad(lambda x: jnp.sum(measures(x, facets)[0]))(points)
    area = jax.grad(lambda x: jnp.sum(measures(x, facets)[1]))(points)
    return volume, area
