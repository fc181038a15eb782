"""Moving the sites of a 1-D interpolant: the linear interpolant ``l`` of the sites' tangent,
and the rules of an evaluation whose tangent in the sites (``moved``) is JAX code.

On an interval ``[x_i, x_{i+1}]`` (SciPy's: ``clip(searchsorted(x, xq, 'right') - 1, 0,
n - 2)``, also when extrapolating) a piecewise polynomial ``P`` is a polynomial in ``t =
(xq - x_i) / h``, ``h = x_{i+1} - x_i``. Moving the sites by ``dx`` moves ``t`` by ``-l /
h`` and ``h`` by ``h l'``, with ``l = dx_i (1 - t) + dx_{i+1} t`` (linear outside too) and
``l' = (dx_{i+1} - dx_i) / h``; for a cubic Hermite piece with values and slopes held:
``dP⁽ⁿᵘ⁾ = -(P⁽ⁿᵘ⁺¹⁾ l + nu P⁽ⁿᵘ⁾ l') + P₀⁽ⁿᵘ⁾ l'``, ``P₀`` the piece with zero values.

An evaluation ``of(x, *data, xq)`` linear in its data gives its tangent in ``x`` as
``of.moved(x, data, xq, dx)``: JAX code of bridged calls, linear in ``dx`` and in ``data``
(or ``of.site_refusal()`` says why it has none: then ``x`` is held fixed and gets no rule).
Its cotangent in ``x`` and the derivative in ``x`` of its transpose ``Aᵀ g`` follow from JAX
differentiating ``moved``, so every order works wherever ``moved``'s calls have rules.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def interval_terms(x: jax.Array, dx: jax.Array, xq: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(l(xq), l'(xq))``: the piecewise-linear interpolant of ``dx`` on the sites ``x``
    and its slope, on the interval SciPy evaluates each query in; leading axes broadcast."""
    return jnp.vectorize(_interval_terms, signature="(n),(n),(m)->(m),(m)")(x, dx, xq)


def _interval_terms(x, dx, xq):
    i = jnp.clip(jnp.searchsorted(x, xq, side="right") - 1, 0, x.shape[0] - 2)
    stretch = (dx[i + 1] - dx[i]) / (x[i + 1] - x[i])
    return dx[i] + stretch * (xq - x[i]), stretch


def within(x: jax.Array, xq: jax.Array, extrapolate: bool) -> jax.Array:
    """The queries whose value depends on the data (all when extrapolating, else those in
    ``[x[0], x[-1]]``: outside, the value is NaN and its derivatives count as 0)."""
    if extrapolate:
        return jnp.ones((), bool)
    return (xq >= x[..., :1]) & (xq <= x[..., -1:])


def periodic_queries(x: jax.Array, xq: jax.Array) -> jax.Array:
    """The queries brought into ``[x[0], x[-1])`` as SciPy's periodic extrapolation does;
    they move with the first and last site."""
    start = x[..., :1]
    return start + jnp.mod(xq - start, x[..., -1:] - start)


def site_cotangent(of: Any, x: jax.Array, data: tuple, xq: jax.Array, g: jax.Array):
    """``x̄``: the transpose of ``dx ↦ of.moved(x, data, xq, dx)`` applied to ``g``."""
    if of.site_refusal() is not None:
        return None
    out, back = jax.vjp(lambda dx: of.moved(x, data, xq, dx), jnp.zeros_like(x))
    (x_bar,) = back(jnp.broadcast_to(g, out.shape).astype(out.dtype))
    return x_bar


def transposed_site_tangent(of: Any, x, g, xq, dx, outputs: int) -> tuple:
    """The tangent in ``x`` of ``Aᵀ g`` (``A`` the evaluation ``of`` in its ``outputs``
    data arguments): ``(∂ₓA dx)ᵀ g``, the transpose in the data of ``of.moved``."""
    batch = jnp.broadcast_shapes(x.shape[:-1], g.shape[:-1], xq.shape[:-1], dx.shape[:-1])
    zero = jnp.zeros(batch + x.shape[-1:], jnp.result_type(x, g))
    out, back = jax.vjp(lambda *data: of.moved(x, data, xq, dx), *(zero,) * outputs)
    return back(jnp.broadcast_to(g, out.shape).astype(out.dtype))
