"""The slopes of SciPy's C² cubic spline at its sites, in JAX: the system that
``scipy.interpolate.CubicSpline`` solves (tridiagonal, with its end rows; cyclic for
"periodic"; SciPy's own cases for 2 and 3 points), so that JAX differentiates them in the
sites. The spline is the cubic Hermite interpolant with these slopes; the values stay
SciPy's, these serve the derivative in ``x`` alone."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .._shared._portable_linalg import solve


def spline_slopes(x: jax.Array, y: jax.Array, bc_type: str) -> jax.Array:
    """``s'(x)`` for the cubic spline through ``(x, y)`` with the boundary condition
    ``bc_type`` ("not-a-knot", "natural", "clamped" or "periodic"), along the last axis;
    leading axes broadcast."""
    one = functools.partial(_periodic if bc_type == "periodic" else _banded, bc_type=bc_type)
    return jnp.vectorize(one, signature="(n),(n)->(n)")(x, y)


def _banded(x, y, bc_type):
    n = x.shape[0]
    h = jnp.diff(x)
    m = jnp.diff(y) / h
    if n == 2 and bc_type == "not-a-knot":  # SciPy: the line through both points
        return jnp.stack([m[0], m[0]])
    if n == 3 and bc_type == "not-a-knot":  # SciPy: the parabola through the three points
        a = jnp.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]], h.dtype)
        a = a.at[1].set(jnp.stack([h[1], 2 * (h[0] + h[1]), h[0]]))
        b = jnp.stack([2 * m[0], 3 * (h[0] * m[1] + h[1] * m[0]), 2 * m[1]])
        return solve(a, b)
    # rows 1..n-2: h_i s_{i-1} + 2 (h_{i-1} + h_i) s_i + h_{i-1} s_{i+1}
    #                = 3 (h_i m_{i-1} + h_{i-1} m_i)
    zero = jnp.zeros(1, h.dtype)
    lower = jnp.concatenate([zero, h[1:], zero])
    diagonal = jnp.concatenate([zero, 2 * (h[:-1] + h[1:]), zero])
    upper = jnp.concatenate([zero, h[:-1], zero])
    b = jnp.concatenate([zero, 3 * (h[1:] * m[:-1] + h[:-1] * m[1:]), zero])
    if bc_type == "not-a-knot":  # s''' continuous at x_1 and x_{n-2}
        span, span_end = h[0] + h[1], h[-1] + h[-2]
        diagonal = diagonal.at[0].set(h[1]).at[-1].set(h[-2])
        upper, lower = upper.at[0].set(span), lower.at[-1].set(span_end)
        b = b.at[0].set(((h[0] + 2 * span) * h[1] * m[0] + h[0] ** 2 * m[1]) / span)
        b = b.at[-1].set((h[-1] ** 2 * m[-2] + (2 * span_end + h[-1]) * h[-2] * m[-1]) / span_end)
    elif bc_type == "natural":  # s'' = 0 at both ends
        diagonal = diagonal.at[0].set(2 * h[0]).at[-1].set(2 * h[-1])
        upper, lower = upper.at[0].set(h[0]), lower.at[-1].set(h[-1])
        b = b.at[0].set(3 * (y[1] - y[0])).at[-1].set(3 * (y[-1] - y[-2]))
    else:  # "clamped": s' = 0 at both ends
        diagonal = diagonal.at[0].set(1).at[-1].set(1)
    return jax.lax.linalg.tridiagonal_solve(lower, diagonal, upper, b[:, None])[:, 0]


def _periodic(x, y, bc_type):
    n = x.shape[0]
    h = jnp.diff(x)
    m = jnp.diff(y) / h
    if n == 2:  # SciPy: the (constant) line
        return jnp.stack([m[0], m[0]])
    if n == 3:  # SciPy's closed form
        s = jnp.sum(m / h) / jnp.sum(1 / h)
        return jnp.stack([s, s, s])
    # n - 1 unknowns s_0..s_{n-2} (s_{n-1} = s_0), the rows above with cyclic neighbours;
    # dense: the cyclic corners break the band
    before_h, before_m = jnp.roll(h, 1), jnp.roll(m, 1)
    k = n - 1
    i = jnp.arange(k)
    a = jnp.diag(2 * (before_h + h))
    a = a.at[i, (i - 1) % k].add(h).at[i, (i + 1) % k].add(before_h)
    s = solve(a, 3 * (h * before_m + before_h * m))
    return jnp.concatenate([s, s[:1]])
