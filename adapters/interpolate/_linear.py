"""Interpolants linear in their data: the transposed evaluation ``Aᵀ g`` as an adapter of its
own, whose rules are the evaluation again, and the base of the splines that use it.

An evaluation ``out = A(x, xq) y`` (``A`` the interpolant's ``nu``-th derivative at ``xq``
applied to unit data) has the pullback ``ȳ = Aᵀ g`` and ``xq̄ = g · A'(x, xq) y`` with ``A'``
the next derivative. ``Transposed`` computes ``Aᵀ g`` on the host; its own tangent in ``g``
is itself, in ``xq`` the transposed next derivative, in ``x`` the transpose of the
evaluation's tangent in ``x`` (``_sites``), and its pullback is the evaluation: a closed
family, so derivatives of every order work in ``x``, ``y`` and ``xq``, mixed ones too.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.interpolate
import scipy.sparse
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._rules import asked, compiled, total
from ._one_d import Interpolant1D, checked_data, inside
from ._pieces import hermite_at, hermite_transpose
from ._queries import first_site, isolating_nan_queries
from ._sites import site_cotangent, transposed_site_tangent
from ._sizes import reading, refused

_CHUNK = 4096  # query points per block when the transpose evaluates unit data


class Transposed(jb.Adapter):
    """``ȳ = Aᵀ g``: the transpose of ``of``'s evaluation in its data, for the cotangent
    ``g`` of its result at the queries ``xq``. ``of`` is the evaluation (an adapter called as
    ``of(x, *data, xq)``, linear in its data, with a host method ``transpose`` and its
    tangent in ``x``, ``moved``)."""

    of: Any

    signature = "(n),(m),(m)->(n)"
    linear_in = ("g",)
    # transpose_by_columns's products (blocks of queries x n, transposed, times g) woke
    # OpenBLAS's threads, which then busy-wait (see Adapter.blas_threads): a periodic cubic
    # spline, n = 200, 1e4 queries, value_and_grad in y took 1.01x the time with one thread
    # on a quiet machine, 0.79x beside a busy process (2 cores)
    blas_threads = 1

    def output_specs(self, x, g, xq):
        spec = jax.ShapeDtypeStruct(x.shape[-1:], jb.result_dtype(x, g, xq))
        return (spec,) * self.outputs()

    def outputs(self) -> int:
        return 1

    def forward(self, x, g, xq):
        dtype = jb.result_dtype(x, g, xq)
        x64 = np.asarray(x, np.float64)
        of = self.of
        if refused(of.name(), of.on_failure, checked_data(of.least_points(), x64, x64)):
            results = [np.full(x.shape, np.nan, dtype)] * self.outputs()
        else:
            g64, xq64 = np.asarray(g, np.float64), np.asarray(xq, np.float64)
            results = [np.asarray(r).astype(dtype) for r in self.of.transpose(x64, g64, xq64)]
        return results[0] if self.outputs() == 1 else tuple(results)

    def pushforward(self, res, tangents):
        x, g, xq = res[:3]
        dx, dg, dxq = tangents
        moved = None
        if dx is not None:
            moved = transposed_site_tangent(self.of, x, g, xq, dx, self.outputs())
            moved = tuple(map(self.shared, moved))
        terms = [
            moved,
            None if dg is None else self(x, dg, xq),
            None if dxq is None else type(self)(self.of.derivative())(x, g * dxq, xq),
        ]
        present = [t if isinstance(t, tuple) else (t,) for t in terms if t is not None]
        if not present:
            return None
        summed = tuple(total(parts) for parts in zip(*present))  # output by output
        return summed[0] if self.outputs() == 1 else summed

    def shared(self, c: jax.Array) -> jax.Array:
        """``c``, with a periodic spline's two ends sharing their sum equally (its data
        has ``y[0] = y[-1]``, as ``transpose_by_columns`` gives)."""
        if not getattr(self.of, "periodic", lambda: False)():
            return c
        end = (c[..., :1] + c[..., -1:]) / 2
        return jnp.concatenate([end, c[..., 1:-1], end], axis=-1)

    def pullback(self, res, cts, *, wanted=None):
        x, g, xq = res[:3]
        cts = tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)
        return (
            site_cotangent(self.of, x, tuple(map(self.shared, cts)), xq, g)
            if asked(wanted, "x")
            else None,
            self.of(x, *cts, xq) if asked(wanted, "g") else None,
            g * self.of.derivative()(x, *cts, xq) if asked(wanted, "xq") else None,
        )


class TransposedPair(Transposed):
    """``Transposed`` for an evaluation linear in two data arguments (values and slopes)."""

    signature = "(n),(m),(m)->(n),(n)"

    def outputs(self) -> int:
        return 2


@isolating_nan_queries(0, first_site)
class LinearSpline(Interpolant1D):
    """A 1-D interpolant linear in ``y`` (``InterpSpline``, ``CubicSpline``): the tangent in
    ``y`` is the interpolant of the tangent, the cotangent ``Transposed``; ``linear_in`` lets
    ``jax.linear_transpose`` work in ``y``. In ``x``, the subclass's ``moved``."""

    linear_in = ("y",)

    def pushforward(self, res, tangents):
        x, y, xq, out = res[:4]
        dx, dy, dxq = tangents
        query = self.query_tangent(x, y, xq, dxq)
        if dxq is not None and self.pieces_in_jax(x.shape[-1]):
            query = dxq * _pieces_next_derivative(self, x, y, xq, out)
        terms = [
            None if dx is None else self.moved(x, (y,), xq, dx),
            None if dy is None else self(x, dy, xq),
            query,
        ]
        return reading(out, total(terms))

    def pullback(self, res, g, *, wanted=None):
        x, y, xq, out = res[:4]
        pieces = self.pieces_in_jax(x.shape[-1])
        y_bar = xq_bar = None
        if asked(wanted, "y"):
            y_bar = (
                _pieces_data_cotangent(self, x, y, xq, g, out)
                if pieces
                else Transposed(self)(x, g, xq)
            )
        if asked(wanted, "xq"):
            xq_bar = (
                g * _pieces_next_derivative(self, x, y, xq, out)
                if pieces
                else self.query_cotangent(x, y, xq, g)
            )
        x_bar = site_cotangent(self, x, (y,), xq, g) if asked(wanted, "x") else None
        return reading(out, (x_bar, y_bar, xq_bar))

    def pieces_in_jax(self, n: int) -> bool:
        """Whether this interpolant, through ``n`` sites, is the cubic Hermite interpolant
        with the slopes ``self.slopes(x, y)`` (JAX), its rules in ``y`` and ``xq`` then
        those of ``_pieces``, in JAX (the C² cubic splines but periodic ones; a 100-knot
        spline's at 10,000 queries 0.1 ms where a host call took 0.5): the cotangent in
        ``y`` the pieces transposed and their slopes' cotangent carried back through the
        slope system, the derivative in ``xq`` the pieces' next. Else bridged calls."""
        return False

    def periodic(self) -> bool:
        return getattr(self, "bc_type", None) == "periodic"

    def transpose(self, x: np.ndarray, g: np.ndarray, xq: np.ndarray) -> tuple[np.ndarray]:
        """``Aᵀ g`` on the host in float64; by default from the interpolants of unit data."""
        return (self.transpose_by_columns(x, g, xq),)

    def transpose_by_columns(self, x: np.ndarray, g: np.ndarray, xq: np.ndarray) -> np.ndarray:
        """``Aᵀ g`` from SciPy's interpolant of the n unit vectors (``y`` may have trailing
        axes), evaluated in blocks of queries: exact for any boundary condition, but O(n m).
        Periodic data has ``y[0] = y[-1]``: the two ends move together and share the
        cotangent equally."""
        n = x.shape[-1]
        columns = np.eye(n)
        if self.periodic():
            columns = np.eye(n)[:, : n - 1]
            columns[n - 1, 0] = 1.0
        spline = self.interpolant(x, columns)
        keep = inside(x, xq, self.extrapolates())
        xq, g = xq[keep], g[keep]
        total_ = np.zeros(columns.shape[1])
        for start in range(0, xq.shape[0], _CHUNK):
            block = np.asarray(spline(xq[start : start + _CHUNK], self.nu, self.extrapolate))
            total_ += block.T @ g[start : start + _CHUNK]
        if self.periodic():
            return np.concatenate([[total_[0] / 2], total_[1:], [total_[0] / 2]])
        return total_


# Each rule one compiled program; the adapter is static. The result of the queries' rules
# (the next derivative) and the data's (the Hermite pieces transposed, then the slopes' vjp).
@compiled
def _pieces_next_derivative(adapter: Any, x, y, xq, out):
    slopes = adapter.slopes(x.astype(y.dtype), y)
    found = hermite_at(x, y, slopes, xq, adapter.nu + 1, adapter.extrapolates())
    return _guarded(x, y, out, found)


@compiled
def _pieces_data_cotangent(adapter: Any, x, y, xq, g, out):
    y_bar, d_bar = hermite_transpose(x, g, xq, adapter.nu, adapter.extrapolates())
    y_wide = jnp.broadcast_to(y, jnp.broadcast_shapes(y.shape, d_bar.shape))
    _, slopes_vjp = jax.vjp(lambda y: adapter.slopes(x.astype(y.dtype), y), y_wide)
    (through_slopes,) = slopes_vjp(d_bar.astype(y.dtype))
    return _guarded(x, y, out, y_bar + through_slopes)


def _guarded(x, y, out, found):
    """``found`` (a rule's result, written in JAX) NaN for batch elements whose data the
    forward refuses (``on_failure="nan"``), and made to read the forward's value ``out``, so
    that the forward runs, and raises for such data, where the value is not asked for (a
    rule that read no host result would have XLA remove the call and compute on data the
    forward refuses)."""
    valid = jnp.isfinite(x).all(-1) & jnp.isfinite(y).all(-1) & (jnp.diff(x) > 0).all(-1)
    read = jnp.where(jnp.isfinite(out), out, 0).sum() * 0
    return jnp.where(valid[..., None], found, jnp.nan) + read.astype(found.dtype)


_CONDITIONS = {None: (), "not-a-knot": (), "natural": (2,), "clamped": (1,)}
"""The derivative orders that each named boundary condition sets to 0 at either end, as
``make_interp_spline`` reads the names."""


def bspline_transpose(
    x: np.ndarray,
    g: np.ndarray,
    xq: np.ndarray,
    k: int,
    bc_type: str | None,
    nu: int,
    extrapolate: bool,
) -> np.ndarray | None:
    """``Aᵀ g`` for ``make_interp_spline(x, ·, k, bc_type)``'s ``nu``-th derivative: the
    B-spline basis at the queries transposed (a sparse design matrix, and the transposed
    derivative maps ``c ↦ c'``), then the transposed interpolation system (collocation rows
    and the boundary conditions' rows) solved by sparse LU. O(n + m). None where the system
    is not square (a condition ``make_interp_spline`` reads differently): use the columns.
    """
    n = x.shape[-1]
    t = scipy.interpolate.make_interp_spline(x, np.zeros(n), k, bc_type=bc_type).t
    size = t.shape[0] - k - 1  # coefficients
    conditions = _CONDITIONS[bc_type]
    if size != n + 2 * len(conditions):
        return None
    keep = inside(x, xq, extrapolate)
    w = _basis_transpose(t, k, xq[keep], g[keep], nu)
    left = _end_rows(t, k, size, x[0], conditions, first=True)
    right = _end_rows(t, k, size, x[-1], conditions, first=False)
    colloc = scipy.interpolate.BSpline.design_matrix(x, t, k)
    system = scipy.sparse.vstack([left, colloc, right], format="csc")
    z = scipy.sparse.linalg.splu(system.T.tocsc()).solve(w)
    return z[len(conditions) : len(conditions) + n]


def _basis_transpose(t: np.ndarray, k: int, xq: np.ndarray, g: np.ndarray, nu: int) -> np.ndarray:
    """``Σ_q g_q B⁽ⁿᵘ⁾(xq_q)``: the coefficients' cotangent of the ``nu``-th derivative of
    the spline with knots ``t`` and degree ``k``, evaluated at ``xq`` (extrapolating)."""
    size = t.shape[0] - k - 1
    if nu > k:
        return np.zeros(size)
    inner = t[nu : t.shape[0] - nu]
    if xq.shape[0]:
        order = np.argsort(xq)  # (the design matrix is built faster on sorted points)
        basis = scipy.interpolate.BSpline.design_matrix(xq[order], inner, k - nu, extrapolate=True)
        w = basis.T @ g[order]
    else:
        w = np.zeros(inner.shape[0] - (k - nu) - 1)
    return derivative_transpose(t, k, nu, w)


def derivative_transpose(t: np.ndarray, k: int, nu: int, w: np.ndarray) -> np.ndarray:
    """The transpose of ``c ↦ c⁽ⁿᵘ⁾``, the map from the coefficients of a spline (knots
    ``t``, degree ``k``) to its ``nu``-th derivative's (knots ``t[nu:-nu]``, degree
    ``k - nu``), applied to ``w`` along its first axis."""
    # c⁽ʲ⁾ᵢ = p (c⁽ʲ⁻¹⁾ᵢ₊₁ - c⁽ʲ⁻¹⁾ᵢ) / (sᵢ₊ₚ₊₁ - sᵢ₊₁), p = k - j + 1, s = t[j-1 : -(j-1)];
    # applied transposed from the last derivative back to the coefficients
    for j in range(nu, 0, -1):
        p = k - j + 1
        s = t[j - 1 : t.shape[0] - j + 1]
        span = s[p + 1 : p + 1 + w.shape[0]] - s[1 : 1 + w.shape[0]]
        span = span.reshape((-1,) + (1,) * (w.ndim - 1))
        scaled = np.divide(p * w, span, out=np.zeros_like(w), where=span != 0)
        previous = np.zeros((w.shape[0] + 1,) + w.shape[1:])
        previous[1:] += scaled
        previous[:-1] -= scaled
        w = previous
    return w


def _end_rows(t, k, size, at, orders, first):
    """The boundary conditions' rows at one end: the ``order``-th derivatives of the k + 1
    basis functions that do not vanish there (the first or the last ones)."""
    rows = scipy.sparse.lil_matrix((len(orders), size))
    span = slice(0, k + 1) if first else slice(size - k - 1, size)
    unit = scipy.interpolate.BSpline(t, np.eye(size)[:, span], k)
    for r, order in enumerate(orders):
        rows[r, span] = unit(at, order)
    return rows.tocsr()
