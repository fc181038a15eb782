"""What ``ConvexHull`` and ``Delaunay`` share: the most simplices Qhull can return for n
points (so that they fit a residual or output of fixed shape) and simplex measures in JAX."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .._shared._portable_linalg import det


def most_facets(n: int, d: int) -> int:
    """The most facets of a simplicial polytope with ``n`` vertices in ``d`` dimensions (the
    Upper Bound Theorem, which holds for simplicial spheres, as Qhull's triangulated hull
    is): ``C(n - ⌈d/2⌉, ⌊d/2⌋) + C(n - ⌊d/2⌋ - 1, ⌈d/2⌉ - 1)``; ``n`` for ``d = 2``,
    ``2 n - 4`` for ``d = 3``; 0 where Qhull builds none (``n <= d``, ``d < 2``: refused)."""
    if n <= d or d < 2:
        return 0
    up, down = -(-d // 2), d // 2
    return math.comb(n - up, down) + math.comb(n - down - 1, up - 1)


def simplex_volumes(corners: jax.Array) -> jax.Array:
    """The volumes ``|det(v_1 - v_0, ..., v_d - v_0)| / d!`` of (..., d + 1, d) corners."""
    d = corners.shape[-1]
    edges = corners[..., 1:, :] - corners[..., :1, :]
    return jnp.abs(det(edges)) / math.factorial(d)


def facet_areas(corners: jax.Array) -> jax.Array:
    """The (d - 1)-dimensional measures ``sqrt(det(Eᵀ E)) / (d - 1)!`` of (..., d, d) facet
    corners, ``E`` their edges from the first; a derivative 0 (not NaN) where one is 0."""
    d = corners.shape[-1]
    edges = corners[..., 1:, :] - corners[..., :1, :]
    gram = det(edges @ jnp.swapaxes(edges, -1, -2))
    positive = gram > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, gram, 1)), 0) / math.factorial(d - 1)
