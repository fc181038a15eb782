"""The cubic Hermite pieces written in JAX, for the rules of the C² splines in the queries and
the data: no host call, where each one (a 100-knot spline at 10,000 queries) cost as much as
the value's whole evaluation.

On SciPy's interval of each query (``clip(searchsorted(x, xq, "right") - 1, 0, n - 2)``,
extrapolating with the end pieces) the piece with values ``y`` and slopes ``d`` at its ends
is SciPy's ``CubicHermiteSpline`` polynomial in ``tau = xq - x_i``, with its coefficients
(SciPy's formulas). Its ``nu``-th derivative and the transpose of that in ``(y, d)`` are a
gather, a few products and a scatter-add; JAX differentiates them in ``x``, ``y`` and ``xq``
to every order (the interval is piecewise constant). Queries whose value is NaN (non-finite
ones; outside ``[x[0], x[-1]]`` without extrapolation) get derivative 0, as SciPy's value
there is no function of the data.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def hermite_at(x, y, d, xq, nu: int, extrapolate: bool) -> jax.Array:
    """The ``nu``-th derivative at ``xq`` of the cubic Hermite interpolant with values ``y``
    and slopes ``d`` at the sites ``x`` (0 where its value is NaN); leading axes broadcast."""

    def one(x, y, d, xq):
        i, tau, keep = _pieces(x, xq, extrapolate)
        h = x[1:] - x[:-1]
        slope = (y[1:] - y[:-1]) / h
        # SciPy's PPoly coefficients of CubicHermiteSpline, highest power first
        c = (
            (d[:-1] + d[1:] - 2 * slope) / (h * h),
            (3 * slope - 2 * d[:-1] - d[1:]) / h,
            d[:-1],
            y[:-1],
        )
        terms = [c[3 - p][i] * math.perm(p, nu) * tau ** (p - nu) for p in range(nu, 4)]
        value = sum(terms[1:], terms[0]) if terms else jnp.zeros_like(tau)
        return jnp.where(keep, value, 0)

    return jnp.vectorize(one, signature="(n),(n),(n),(m)->(m)")(x, y, d, xq)


def hermite_transpose(x, g, xq, nu: int, extrapolate: bool) -> tuple[jax.Array, jax.Array]:
    """``(ȳ, d̄)``: the transpose of ``(y, d) ↦ hermite_at(x, y, d, xq, nu, extrapolate)``
    applied to ``g``: each query's ``g`` times the ``nu``-th derivatives of its piece's four
    basis functions, added onto the piece's two ends."""

    def one(x, g, xq):
        n = x.shape[0]
        i, tau, keep = _pieces(x, xq, extrapolate)
        h = (x[1:] - x[:-1])[i]
        g = jnp.where(keep, g, 0)
        h2 = h * h
        # the basis functions' coefficients of tau**0..3; None is 0
        basis = {
            "y0": (1.0, None, -3 / h2, 2 / (h2 * h)),
            "y1": (None, None, 3 / h2, -2 / (h2 * h)),
            "d0": (None, 1.0, -2 / h, 1 / h2),
            "d1": (None, None, -1 / h, 1 / h2),
        }

        def weight(name):
            terms = [
                c * math.perm(p, nu) * tau ** (p - nu)
                for p, c in enumerate(basis[name])
                if p >= nu and c is not None
            ]
            return g * sum(terms[1:], terms[0]) if terms else jnp.zeros_like(g)

        def scatter(left, right):
            out = jnp.zeros(n, g.dtype).at[i].add(weight(left))
            return out.at[i + 1].add(weight(right))

        return scatter("y0", "y1"), scatter("d0", "d1")

    return jnp.vectorize(one, signature="(n),(m),(m)->(n),(n)")(x, g, xq)


def _pieces(x, xq, extrapolate: bool):
    """Per query: SciPy's interval ``i``, ``tau = xq - x_i`` (0 where ``keep`` is False, so
    that no NaN reaches a derivative) and ``keep``, whether its value is a number."""
    n = x.shape[0]
    i = jnp.clip(jnp.searchsorted(x, xq, side="right") - 1, 0, n - 2)
    keep = jnp.isfinite(xq)
    if not extrapolate:
        keep &= (xq >= x[0]) & (xq <= x[-1])
    tau = jnp.where(keep, xq - x[i], 0)
    return i, tau, keep
