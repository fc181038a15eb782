"""What the scattered-data interpolants on SciPy's Delaunay triangulation share: the base
class (call ``(points, values, xi)``, the checks, the failure policy), the located simplex
of each query as a bridged call, and the domains their tests draw from."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

import jaxbridge as jb

from .._shared._failure import InterpolationFailure, MayFail
from ._queries import per_point
from ._sizes import refuse_sizes, refused


def scattered_sites(raw: np.ndarray) -> np.ndarray:
    """Sites (p, n), within 0.1 of a fixed layout: the corners of the simplex ``{0, 20 e₁, …,
    20 eₙ}`` (at least ``n + 1`` sites), the others far outside its circumsphere. Distinct, not
    on a hyperplane, and the corner simplex is always a cell of the Delaunay triangulation;
    rounded up to integers (as the property suite holds arguments fixed) they still are."""
    p, n = raw.shape[-2:]
    layout = np.zeros((p, n))
    layout[1 : n + 1] = 20.0 * np.eye(n)[: max(0, min(p, n + 1) - 1)]
    centre = np.full(n, 10.0)
    for k in range(n + 1, p):
        direction = np.cos(1.7 * k + np.arange(n) * 2.3)
        layout[k] = centre + 40.0 * np.sqrt(n) * direction / np.linalg.norm(direction)
    return layout + 0.1 * np.tanh(raw)


def inner_queries(raw: np.ndarray) -> np.ndarray:
    """Queries (m, n) within half the inradius of the centre of ``scattered_sites``'s corner
    simplex: inside it, at least 1 from its faces, also when rounded up to integers."""
    n = raw.shape[-1]
    inradius = 20.0 / (n + np.sqrt(n))
    return inradius + 0.5 * inradius / np.sqrt(n) * np.tanh(raw)


def piece_queries(raw: np.ndarray) -> np.ndarray:
    """Queries (m, 2) within a third of the inradius of the incentre of one of the three
    pieces that Clough-Tocher splits ``scattered_sites``' corner triangle into (about its
    centroid; the cubic is smooth inside each, C¹ across): at least 2 from the piece's
    edges, so inside it also when the sites are rounded up to integers."""
    piece = np.array([[0.0, 0.0], [20.0, 0.0], [20.0 / 3, 20.0 / 3]])
    sides = np.linalg.norm(np.roll(piece, -1, axis=0) - np.roll(piece, 1, axis=0), axis=-1)
    incentre = sides @ piece / sides.sum()
    inradius = 20.0 * 20.0 / 3 / sides.sum()  # twice the area over the perimeter
    return incentre + inradius / 3 / np.sqrt(2) * np.tanh(raw)


class Scattered(MayFail):
    """A scattered-data interpolant through ``(points, values)`` at ``xi``: ``points``
    (p, n), ``values`` (p,), ``xi`` (m, n) → (m,); leading axes are batch axes. Subclasses
    say how SciPy builds it (``interpolant``)."""

    fill_value: float = math.nan
    rescale: bool = False

    signature = "(p,n),(p),(m,n)->(m)"
    linear_in = ("values",)
    domains = {"points": scattered_sites, "xi": inner_queries}
    # the triangulation's queries (find_simplex, transform) wake OpenBLAS's threads, which
    # then busy-wait (see Adapter.blas_threads)
    blas_threads = 1

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if isinstance(self.fill_value, bool) or not isinstance(self.fill_value, (int, float)):
            raise ValueError(f"{owner}: parameter 'fill_value' must be a number.")
        if self.rescale not in (True, False):
            raise ValueError(f"{owner}: parameter 'rescale' must be True or False.")

    def __call__(self, points: Any, values: Any, xi: Any) -> Any:
        return per_point(lambda q: super(Scattered, self).__call__(points, values, q), xi, 1)

    def interpolant(self, points: np.ndarray, values: np.ndarray) -> Any:
        """SciPy's interpolant through ``(points, values)`` in float64 (``values`` may have
        trailing axes)."""
        raise NotImplementedError

    def output_specs(self, points, values, xi):
        refuse_sizes(type(self).__name__, self.on_failure, self.sizes(points.shape, xi.shape))
        return jax.ShapeDtypeStruct(xi.shape[-2:-1], jb.result_dtype(points, values, xi))

    def forward(self, points, values, xi):
        dtype = jb.result_dtype(points, values, xi)
        p64, v64 = np.asarray(points, np.float64), np.asarray(values, np.float64)
        problem = self.problem(p64, v64, xi)
        if problem is None:
            try:
                return np.asarray(self.interpolant(p64, v64)(np.asarray(xi, np.float64))).astype(
                    dtype
                )
            except (ValueError, scipy.spatial.QhullError) as error:
                problem = refused_by_scipy(error)
        error = InterpolationFailure.because(f"{type(self).__name__}: {problem}")
        return self.nan_on_failure(error, xi.shape[:-1], dtype=dtype)

    def sizes(self, points: tuple[int, ...], xi: tuple[int, ...]) -> str | None:
        """What is wrong with the shapes of ``points`` and ``xi``, naming the argument, or
        None: the part of ``problem`` made when the call is traced."""
        p, n = points[-2:]
        if xi[-1] != n:
            return f"argument 'xi' has {xi[-1]} coordinates for points in {n} dimensions"
        if n < 2:
            return f"argument 'points' must be (p, n) with n >= 2 (SciPy's); got n = {n}"
        if p < n + 1:
            return (
                f"argument 'points' has {p} points; a triangulation in {n} dimensions needs at "
                f"least {n + 1}"
            )
        return None

    def problem(self, points: np.ndarray, values: np.ndarray, xi: np.ndarray) -> str | None:
        """What is wrong with the data, naming the argument, or None."""
        problem = self.sizes(points.shape, xi.shape)
        if problem is not None:
            return problem
        for name, array in (("points", points), ("values", values)):
            if not np.isfinite(array).all():
                return f"argument '{name}' has non-finite entries (NaN or inf)"
        return None


def refused_by_scipy(error: Exception) -> str:
    """The problem SciPy's triangulation found with the data (collinear points, say)."""
    return f"SciPy refused the data (argument 'points'): {error}"


class Locate(jb.Adapter):
    """The vertices (indices into ``points``) of the simplex of ``of``'s triangulation that
    holds each query, (m, n + 1), or -1 outside the hull; no derivatives (called on
    ``stop_gradient`` arguments)."""

    of: Scattered

    signature = "(p,n),(m,n)->(m,k)"
    blas_threads = 1  # as Scattered's

    def output_specs(self, points, xi):
        n = points.shape[-1]
        return jax.ShapeDtypeStruct(xi.shape[-2:-1] + (n + 1,), np.int32)

    def forward(self, points, xi):
        p64 = np.asarray(points, np.float64)
        xi64 = np.asarray(xi, np.float64)
        found = np.full(xi.shape[:-1] + (points.shape[-1] + 1,), -1, np.int32)
        of, owner = self.of, type(self.of).__name__
        if refused(owner, of.on_failure, of.problem(p64, np.zeros(p64.shape[0]), xi64)):
            return found  # (the values' NaN makes the result NaN)
        try:
            interpolant = of.interpolant(p64, np.zeros(p64.shape[0]))
        except (ValueError, scipy.spatial.QhullError) as error:
            refused(owner, of.on_failure, refused_by_scipy(error))
            return found
        # SciPy's own triangulation, of the rescaled points when ``rescale``
        scaled = xi64
        if self.of.rescale:
            scaled = (xi64 - interpolant.offset) / interpolant.scale
        simplex = interpolant.tri.find_simplex(scaled)
        inside = simplex >= 0
        found[inside] = interpolant.tri.simplices[simplex[inside]]
        return found


def broadcast_batch(arrays, cores):
    """``arrays`` broadcast to their common batch axes (``cores``: each one's core rank): in
    a rule, a tangent may carry batch axes that its primal lacks."""
    shapes = [a.shape[: a.ndim - c] for a, c in zip(arrays, cores)]
    batch = jnp.broadcast_shapes(*shapes)
    return [jnp.broadcast_to(a, batch + a.shape[a.ndim - c :]) for a, c in zip(arrays, cores)]
