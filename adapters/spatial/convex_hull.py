"""``ConvexHull``: SciPy's (Qhull's) convex hull's volume and area, differentiable in the
points with the hull's facets held fixed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

import jaxbridge as jb

from .._rules import compiled
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
    facet spans with an interior point, the area as the sum of the facets' measures,
    written in JAX. That is the derivative wherever the hull's combinatorics do not
    change under a small move: points inside the hull get 0. Where a point lies on a facet
    without being its vertex, or a facet is not a simplex (four coplanar vertices in 3D,
    which Qhull triangulates), this is the derivative along Qhull's triangulation.
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

    @staticmethod
    def _measures(points: jax.Array, facets: jax.Array) -> tuple[jax.Array, jax.Array]:
        """The volume and area of the hull of (..., n, d) ``points`` whose facets are
        (..., f, d) ``facets`` (rows of -1: none)."""
        real = facets[..., 0] >= 0
        corners = jnp.take_along_axis(
            points[..., None, :, :], jnp.where(real[..., None], facets, 0)[..., None], -2
        )  # (..., f, d, d)
        # the cones from an interior point, the points' mean (a combination with positive
        # weights); the sum of their volumes does not depend on it
        centre = jax.lax.stop_gradient(points.mean(-2))
        apex = jnp.broadcast_to(
            centre[..., None, None, :], (*corners.shape[:-2], 1, corners.shape[-1])
        )
        volume = jnp.sum(
            jnp.where(real, simplex_volumes(jnp.concatenate([corners, apex], -2)), 0), -1
        )
        area = jnp.sum(jnp.where(real, facet_areas(corners), 0), -1)
        return volume, area

    @compiled
    def pullback(self, res, g):
        points, _, _, facets = res
        return jax.vjp(lambda x: self._measures(x, facets), points)[1](g)

    @compiled
    def pushforward(self, res, tangents):
        points, _, _, facets = res
        (t,) = tangents
        points = jnp.broadcast_to(points, t.shape)
        return jax.jvp(lambda x: self._measures(x, facets), (points,), (t,))[1]
