"""Piecewise cubic Hermite interpolants (``PchipInterpolator``, ``Akima1DInterpolator``):
SciPy's values, and rules made of a bridged Hermite evaluation, linear in the values and
slopes at the sites, and the slope formulas written in JAX.

``out = H(x, y, d(x, y), xq)`` with ``H`` ``CubicHermiteSpline``'s evaluation and ``d`` the
interpolant's slope formula. ``H`` is linear in ``(y, d)``: its tangent is itself, its
cotangent ``TransposedPair`` (per query, the four Hermite basis functions of its interval,
scattered), its derivative in ``xq`` itself with ``nu + 1``, in ``x`` (``_sites``) itself
with ``nu + 1`` and with zero values, times the linear interpolant of the sites' tangent.
``d`` is JAX code mirroring SciPy's, so ``jax.jvp``/``jax.vjp`` of it carry the data's and
the sites' derivatives through the slopes, to every order (away from the formulas' branch
points). The cubic splines are this form too, with the spline's slopes
(``_spline_slopes``): ``hermite_form_moved`` is the tangent in the sites of all of them.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.interpolate

import jaxbridge as jb

from .._shared._failure import MayFail
from .._shared._rules import asked, compiled, total
from ._linear import TransposedPair
from ._one_d import Interpolant1D, checked_data, in_order, inside, sorting
from ._queries import first_site, isolating_nan_queries
from ._sites import interval_terms, periodic_queries, site_cotangent, within
from ._sizes import reading, refused


class Hermite(MayFail):
    """``CubicHermiteSpline(x, y, d)(xq, nu, extrapolate)``: the piecewise cubic with values
    ``y`` and slopes ``d`` at the sites ``x``; linear in ``y`` and ``d`` together."""

    nu: int = 0
    extrapolate: bool = True
    owner: str = "CubicHermiteSpline"  # the interpolant whose rule calls it, for its errors

    signature = "(n),(n),(n),(m)->(m)"
    linear_in = ("y", "d")

    def name(self) -> str:
        return self.owner

    def least_points(self) -> int:
        return 2

    def derivative(self) -> Hermite:
        return dataclasses.replace(self, nu=self.nu + 1)

    def site_refusal(self) -> str | None:
        return None

    def moved(self, x, data, xq, dx):
        """The tangent in the sites: ``-(H⁽ⁿᵘ⁺¹⁾ l + nu H⁽ⁿᵘ⁾ l') + H₀⁽ⁿᵘ⁾ l'`` (``_sites``),
        the last two terms one call by linearity: values ``-nu y``, slopes ``(1 - nu) d``."""
        y, d = data
        shift, stretch = interval_terms(x, dx, xq)  # l and l'
        # outside, without extrapolation, the value is NaN: its tangent is 0, and the
        # cotangents of l and l' must not meet NaN factors there
        keep = within(x, xq, self.extrapolate)
        following = jnp.where(keep, self.derivative()(x, y, d, xq), 0)
        scaled = jnp.where(keep, self(x, -self.nu * y, (1 - self.nu) * d, xq), 0)
        return scaled * stretch - following * shift

    def output_specs(self, x, y, d, xq):
        return jax.ShapeDtypeStruct(xq.shape[-1:], jb.result_dtype(x, y, d, xq))

    def forward(self, x, y, d, xq):
        dtype = jb.result_dtype(x, y, d, xq)
        x64 = np.asarray(x, np.float64)
        if refused(self.owner, self.on_failure, checked_data(2, x64, x64)):
            return np.full(xq.shape, np.nan, dtype)
        spline = scipy.interpolate.CubicHermiteSpline(x64, y, d, extrapolate=self.extrapolate)
        return in_order(lambda q: spline(q, self.nu), np.asarray(xq, np.float64)).astype(dtype)

    def pushforward(self, res, tangents):
        x, y, d, xq = res[:4]
        dx, dy, dd, dxq = tangents
        moved = None if dx is None else self.moved(x, (y, d), xq, dx)
        data = None
        if dy is not None or dd is not None:
            data = self(
                x, y * 0 if dy is None else dy, d * 0 if dd is None else dd, xq
            )  # (a zero data tangent in the other: the evaluation is linear in both)
        query = None if dxq is None else self.derivative()(x, y, d, xq) * dxq
        return total([moved, data, query])

    def pullback(self, res, g, *, wanted=None):
        x, y, d, xq = res[:4]
        y_bar = d_bar = None
        if asked(wanted, "y") or asked(wanted, "d"):
            y_bar, d_bar = TransposedPair(self)(x, g, xq)
        return (
            site_cotangent(self, x, (y, d), xq, g) if asked(wanted, "x") else None,
            y_bar,
            d_bar,
            g * self.derivative()(x, y, d, xq) if asked(wanted, "xq") else None,
        )

    def transpose(self, x, g, xq):
        """``(ȳ, d̄)``: each query's cotangent times the ``nu``-th derivatives of the four
        Hermite basis functions of its interval, summed onto the interval's two ends: from
        the sums ``Σ g tauᵖ`` over each interval's queries (p = 0..3, ``tau = xq - x_i``),
        as the basis functions' coefficients depend on the interval alone."""
        n = x.shape[-1]
        order = sorting(xq)  # (the value's sort, kept: the intervals are found from it)
        if order is not None:
            xq, g = xq[order], g[order]
        keep = inside(x, xq, self.extrapolate)
        if not keep.all():
            xq, g = xq[keep], g[keep]
        sums = interval_sums(x, xq, g, ordered=order is not None)
        h = np.diff(x)
        h2 = h * h
        # coefficients of tau**0..3 (SciPy's PPoly form of CubicHermiteSpline); None is 0
        basis = {
            "y0": (1.0, None, -3 / h2, 2 / (h2 * h)),
            "y1": (None, None, 3 / h2, -2 / (h2 * h)),
            "d0": (None, 1.0, -2 / h, 1 / h2),
            "d1": (None, None, -1 / h, 1 / h2),
        }

        def weight(name):  # per interval: Σ over its queries of g times the basis function
            terms = [
                c * math.perm(p, self.nu) * sums[p - self.nu]
                for p, c in enumerate(basis[name])
                if p >= self.nu and c is not None
            ]
            return total(terms) if terms else np.zeros(n - 1)

        def scatter(left, right):
            out = np.zeros(n)
            out[:-1] += weight(left)
            out[1:] += weight(right)
            return out

        return scatter("y0", "y1"), scatter("d0", "d1")


def interval_sums(x: np.ndarray, xq: np.ndarray, g: np.ndarray, ordered: bool) -> np.ndarray:
    """(4, n - 1): ``Σ g tauᵖ`` (p = 0..3, ``tau = xq - x_i``) over the queries in each of
    SciPy's intervals ``i = clip(searchsorted(x, xq, "right") - 1, 0, n - 2)``. For sorted
    queries, each interval's queries are a run: found from where each inner site falls among
    them and summed run by run (4x faster than ``bincount``)."""
    n, m = x.shape[-1], xq.shape[0]
    terms = np.empty((4, m))
    if ordered:
        starts = np.searchsorted(xq, x[:-1], side="left")  # the first query at or past x_i
        starts[0] = 0
        lengths = np.diff(starts, append=m)
        tau = xq - np.repeat(x[:-1], lengths)
    else:
        i = np.clip(np.searchsorted(x, xq, side="right") - 1, 0, n - 2)
        tau = xq - x[i]
    terms[0] = g
    for p in range(1, 4):
        np.multiply(terms[p - 1], tau, out=terms[p])
    if not ordered:
        return np.stack([np.bincount(i, t, n - 1) for t in terms])
    sums = np.zeros((4, n - 1))
    runs = np.greater(lengths, 0)  # (np.add.reduceat sums from each start to the next one given)
    if runs.any():
        sums[:, runs] = np.add.reduceat(terms, starts[runs], axis=1)
    return sums


@isolating_nan_queries(0, first_site)
class HermiteInterpolant(Interpolant1D):
    """A 1-D interpolant that is ``CubicHermiteSpline`` with slopes ``slopes(x, y)``."""

    def slopes(self, x: jax.Array, y: jax.Array) -> jax.Array:
        """The slopes at the sites as SciPy computes them, in JAX, along the last axis
        (leading axes are batch axes)."""
        raise NotImplementedError

    def moved(self, x, data, xq, dx):
        return hermite_form_moved(self, self.slopes, x, data[0], xq, dx)

    def pushforward(self, res, tangents):
        x, y, xq, out = res[:4]
        dx, dy, dxq = tangents
        moved = None if dx is None else self.moved(x, (y,), xq, dx)
        data = None if dy is None else _data_tangent(self, x, y, xq, dy)
        return reading(out, total([moved, data, self.query_tangent(x, y, xq, dxq)]))

    def pullback(self, res, g, *, wanted=None):
        x, y, xq, out = res[:4]
        cotangents = (
            site_cotangent(self, x, (y,), xq, g) if asked(wanted, "x") else None,
            _data_cotangent(self, x, y, xq, g) if asked(wanted, "y") else None,
            self.query_cotangent(x, y, xq, g) if asked(wanted, "xq") else None,
        )
        return reading(out, cotangents)


# Each rule is one compiled program (called eagerly, the slope formula's dozens of
# operations would each compile on their own); the adapter is static.
@compiled
def _data_tangent(adapter: HermiteInterpolant, x, y, xq, dy):
    slopes = functools.partial(adapter.slopes, x.astype(y.dtype))
    y_wide, dy_wide = jnp.broadcast_arrays(y, dy)
    _, dd = jax.jvp(slopes, (y_wide,), (dy_wide,))
    return hermite_of(adapter)(x, dy, dd, xq)


@compiled
def _data_cotangent(adapter: HermiteInterpolant, x, y, xq, g):
    y_bar, d_bar = TransposedPair(hermite_of(adapter))(x, g, xq)
    y_wide = jnp.broadcast_to(y, jnp.broadcast_shapes(y.shape, d_bar.shape))
    _, slopes_vjp = jax.vjp(functools.partial(adapter.slopes, x.astype(y.dtype)), y_wide)
    (through_slopes,) = slopes_vjp(d_bar.astype(y.dtype))
    return y_bar + through_slopes


def hermite_form_moved(adapter: Interpolant1D, slopes, x, y, xq, dx):
    """The tangent in the sites of an interpolant that is the cubic Hermite interpolant of
    ``(x, y)`` with slopes ``slopes(x, y)`` (JAX): Hermite's own rule in ``x``, plus
    ``Hermite(x, 0, ∂slopes, xq)``, plus where SciPy extrapolates periodically
    (``extrapolate`` None with ``bc_type`` "periodic") the queries' move into the period.
    Explicit rather than a ``jax.jvp`` of the Hermite call, so that its bridged calls take
    ``(x, y)`` as primals alone and it transposes in ``y``."""
    hermite = hermite_of(adapter)
    y = jnp.asarray(y)
    x, dx = jnp.broadcast_arrays(jnp.asarray(x, y.dtype), jnp.asarray(dx, y.dtype))
    d, dd = jax.jvp(lambda x: slopes(x, y), (x,), (dx,))
    moved_queries = None
    if getattr(adapter, "bc_type", None) == "periodic" and adapter.extrapolate is None:
        xq, dxq = jax.jvp(lambda x: periodic_queries(x, xq), (x,), (dx,))
        moved_queries = hermite.derivative()(x, y, d, xq) * dxq
    terms = [hermite.moved(x, (y, d), xq, dx), hermite(x, jnp.zeros_like(y), dd, xq)]
    terms.append(moved_queries)
    return total(terms)


def hermite_of(adapter: Interpolant1D) -> Hermite:
    """The Hermite evaluation of ``adapter``'s pieces: its derivative order, extrapolation
    and failure policy, its errors named after it."""
    return Hermite(
        nu=adapter.nu,
        extrapolate=adapter.extrapolates(),
        on_failure=adapter.on_failure,
        owner=type(adapter).__name__,
    )
