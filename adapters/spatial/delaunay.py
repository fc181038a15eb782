"""``Delaunay``: SciPy's (Qhull's) Delaunay triangulation as integers, and its simplices'
volumes, differentiable in the points with the triangulation held fixed."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

import jaxbridge as jb

from .._shared._rules import compiled
from ._simplices import most_facets, simplex_volumes


def most_simplices(n: int, d: int) -> int:
    """The most simplices Qhull's Delaunay triangulation of ``n`` points in ``d``
    dimensions can have: the lower facets of the lifted points' hull in ``d + 1``
    dimensions, with Qhull's point at infinity (``Qz``)."""
    return max(most_facets(n + 1, d + 1), 1)


class Delaunay(jb.Adapter):
    """The Delaunay triangulation of ``points``, with SciPy's Qhull on the host:
    ``simplices, volumes = Delaunay()(points)``, as ``scipy.spatial.Delaunay(points)
    .simplices`` (sorted) and each simplex's volume.

    ``points`` is (n, d), ``d >= 2``, with ``n > d`` points not all in one hyperplane.
    ``simplices`` (int32) is (s, d + 1), SciPy's simplices (indices of ``points``) in a
    canonical order (each row's indices increasing, the rows sorted: Qhull's own order
    can change under a small move of the points, and with it which row holds which
    volume) and rows of -1 after them, ``s`` the most a triangulation of n points can have
    (``2 n - 2`` for ``d = 2``); ``volumes`` is (s,), each simplex's volume (area for ``d =
    2``), 0 on the rows of -1. Leading axes are batch axes (one triangulation per batch
    element).

    Parameters:
        qhull_options: Qhull's options, as SciPy's (``None``: SciPy's default).

    The simplices are integers (derivative zero). The volumes are differentiable in
    ``points``, to every order, with the triangulation held fixed: ``|det(v_1 - v_0, ...,
    v_d - v_0)| / d!`` in JAX. That is their derivative as long as the triangulation stays
    (Delaunay's flips where four points in 2D become cocircular; then this is the
    derivative along Qhull's choice).
    """

    qhull_options: str | None = None

    signature = "(n,d)->(s,k),(s)"

    def __post_init__(self) -> None:
        if self.qhull_options is not None and not isinstance(self.qhull_options, str):
            raise ValueError(
                "Delaunay: parameter 'qhull_options' must be a string of Qhull's options or "
                f"None; got {self.qhull_options!r}."
            )

    def output_specs(self, points):
        n, d = points.shape[-2:]
        s = most_simplices(n, d)
        return (
            jax.ShapeDtypeStruct((*points.shape[:-2], s, d + 1), np.int32),
            jax.ShapeDtypeStruct((*points.shape[:-2], s), jb.result_dtype(points)),
        )

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
            triangulation = scipy.spatial.Delaunay(points, qhull_options=self.qhull_options)
        except scipy.spatial.QhullError as error:
            first = str(error).strip().splitlines()[0]
            raise ValueError(
                f"argument 'points' has no full-dimensional triangulation (Qhull: {first})."
            ) from None
        n, d = points.shape
        # in a canonical order (each row's indices increasing, the rows sorted), so that a
        # triangulation that stays under a small move gives the same rows: Qhull's own
        # order can change with the points, and the volumes would jump between rows
        found = np.sort(triangulation.simplices, -1)
        found = found[np.lexsort(found.T[::-1])]
        simplices = np.full((most_simplices(n, d), d + 1), -1, np.int32)
        simplices[: len(found)] = found
        corners = np.asarray(points, np.float64)[found]
        volumes = np.zeros(len(simplices))
        edges = corners[:, 1:] - corners[:, :1]
        volumes[: len(corners)] = np.abs(np.linalg.det(edges)) / math.factorial(d)
        return simplices, volumes.astype(jb.result_dtype(points))

    @staticmethod
    def _volumes(points: jax.Array, simplices: jax.Array) -> jax.Array:
        real = simplices[..., 0] >= 0
        corners = jnp.take_along_axis(
            points[..., None, :, :], jnp.where(real[..., None], simplices, 0)[..., None], -2
        )  # (..., s, d + 1, d)
        return jnp.where(real, simplex_volumes(corners), 0)

    @compiled
    def pullback(self, res, g):
        points, simplices, _ = res
        _, g_volumes = g
        return jax.vjp(lambda x: self._volumes(x, simplices), points)[1](g_volumes)

    @compiled
    def pushforward(self, res, tangents):
        points, simplices, _ = res
        (t,) = tangents
        points = jnp.broadcast_to(points, t.shape)
        return None, jax.jvp(lambda x: self._volumes(x, simplices), (points,), (t,))[1]
