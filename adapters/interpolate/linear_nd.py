"""``LinearNDInterpolator``: piecewise-linear interpolation on the Delaunay triangulation,
linear in the values; its rules are the barycentric interpolation written in JAX on the
simplices SciPy locates."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import scipy.interpolate

from .._shared._portable_linalg import solve
from .._shared._rules import compiled
from ._queries import first_point, isolating_nan_queries
from ._scattered import Locate, Scattered, broadcast_batch
from ._sizes import reading


@isolating_nan_queries(1, first_point)
class LinearNDInterpolator(Scattered):
    """SciPy's piecewise-linear interpolant on the Delaunay triangulation of ``points``:
    ``LinearNDInterpolator(fill_value, rescale)(points, values, xi)`` is
    ``scipy.interpolate.LinearNDInterpolator(points, values, fill_value, rescale)(xi)``.

    ``points`` (p, n) with n >= 2 and p >= n + 1, ``values`` (p,), ``xi`` (m, n) → (m,);
    leading axes are batch axes. ``fill_value`` (NaN) outside the convex hull, as SciPy.
    Values are SciPy's.

    Derivatives: the rules are ``Σₖ λₖ(xi) values[vₖ]`` written in JAX, with ``vₖ`` the
    vertices of the simplex SciPy locates for each query (a bridged call, held fixed: the
    triangulation does not move under an infinitesimal change) and ``λ`` the barycentric
    coordinates solved in JAX. So: in ``xi``, the piecewise-constant gradient (on a shared
    face, that of the simplex SciPy finds); in ``values``, linear (``jax.linear_transpose``
    too); in ``points``, through the barycentric coordinates; every order, 0 outside the
    hull. Fails (see ``MayFail``) on too few or degenerate points (all on a hyperplane),
    non-finite points or values, with a ``ValueError`` naming the argument.
    """

    def interpolant(self, points, values):
        return scipy.interpolate.LinearNDInterpolator(
            points, values, fill_value=self.fill_value, rescale=self.rescale
        )

    def pushforward(self, res, tangents):
        points, values, xi, out = res[:4]
        tangents = tuple(
            jnp.zeros_like(a) if t is None else t for a, t in zip((points, values, xi), tangents)
        )
        return reading(out, _tangent(self, points, values, xi, *tangents))

    def pullback(self, res, g):
        points, values, xi, out = res[:4]
        return reading(out, tuple(_cotangent(self, points, values, xi, g)))


def _one(adapter: LinearNDInterpolator, points, values, xi, vertices):
    """The interpolant at the queries of one batch element, from the located simplices."""
    n = points.shape[-1]
    inside = vertices[:, 0] >= 0
    corners = points[jnp.where(vertices >= 0, vertices, 0)]  # (m, n + 1, n)
    last = corners[:, n]
    edges = jnp.swapaxes(corners[:, :n] - last[:, None, :], -1, -2)  # (m, n, n)
    # outside the hull a harmless system, whose result is replaced by fill_value
    edges = jnp.where(inside[:, None, None], edges, jnp.eye(n, dtype=edges.dtype))
    head = solve(edges, (xi - last)[..., None])[..., 0]
    at_corners = values[jnp.where(vertices >= 0, vertices, 0)]  # (m, n + 1)
    # from the last corner's value, not as the weights' sum: the same function, but its
    # derivatives on constant data are exactly 0 (the weights' cancel only to rounding)
    rise = jnp.sum(head * (at_corners[:, :n] - at_corners[:, n:]), axis=-1)
    return jnp.where(inside, at_corners[:, n] + rise, adapter.fill_value)


def _batched(adapter, points, values, xi):
    vertices = Locate(adapter)(jax.lax.stop_gradient(points), jax.lax.stop_gradient(xi))
    return jnp.vectorize(functools.partial(_one, adapter), signature="(p,n),(p),(m,n),(m,k)->(m)")(
        points, values, xi, vertices
    )


@compiled
def _tangent(adapter, points, values, xi, dp, dv, dx):
    arrays = broadcast_batch((points, values, xi, dp, dv, dx), (2, 1, 2, 2, 1, 2))
    return jax.jvp(functools.partial(_batched, adapter), tuple(arrays[:3]), tuple(arrays[3:]))[1]


@compiled
def _cotangent(adapter, points, values, xi, g):
    _, pullback = jax.vjp(functools.partial(_batched, adapter), points, values, xi)
    return pullback(g)
