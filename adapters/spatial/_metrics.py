"""SciPy's continuous distance metrics written in JAX, for the rules: the distances between
rows of ``xa`` (..., m, n) and rows of ``xb`` (..., k, n), (..., m, k), with the subgradient
0 where a metric has a kink (zero distance; a zero difference in one coordinate).

The values come from SciPy; these give the derivatives (and the derivatives of those)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp


def _safe_root(s: jax.Array, power: float) -> jax.Array:
    """``s ** (1 / power)`` for ``s >= 0``, with derivative 0 (not inf or NaN) at 0."""
    positive = s > 0
    return jnp.where(positive, jnp.where(positive, s, 1) ** (1 / power), 0)


def _differences(xa: jax.Array, xb: jax.Array) -> jax.Array:
    return xa[..., :, None, :] - xb[..., None, :, :]


def _abs(x: jax.Array) -> jax.Array:
    return jnp.where(x != 0, jnp.abs(x), 0)  # (derivative 0 at 0, as jnp.abs's)


def euclidean(xa, xb, p):
    return _safe_root(jnp.sum(_differences(xa, xb) ** 2, -1), 2)


def sqeuclidean(xa, xb, p):
    return jnp.sum(_differences(xa, xb) ** 2, -1)


def cityblock(xa, xb, p):
    return jnp.sum(_abs(_differences(xa, xb)), -1)


def chebyshev(xa, xb, p):
    return jnp.max(_abs(_differences(xa, xb)), -1)


def minkowski(xa, xb, p):
    return _safe_root(jnp.sum(_abs(_differences(xa, xb)) ** p, -1), p)


def cosine(xa, xb, p):
    na, nb = jnp.linalg.norm(xa, axis=-1), jnp.linalg.norm(xb, axis=-1)
    return 1 - (xa @ jnp.swapaxes(xb, -1, -2)) / (na[..., :, None] * nb[..., None, :])


def correlation(xa, xb, p):
    return cosine(xa - xa.mean(-1, keepdims=True), xb - xb.mean(-1, keepdims=True), p)


def braycurtis(xa, xb, p):
    sums = jnp.sum(_abs(xa[..., :, None, :] + xb[..., None, :, :]), -1)
    return cityblock(xa, xb, p) / sums


def canberra(xa, xb, p):
    numerator = _abs(_differences(xa, xb))
    denominator = _abs(xa)[..., :, None, :] + _abs(xb)[..., None, :, :]
    # SciPy's 0/0 terms are 0
    return jnp.sum(
        jnp.where(denominator > 0, numerator / jnp.where(denominator > 0, denominator, 1), 0), -1
    )


METRICS: dict[str, Callable[[jax.Array, jax.Array, float], jax.Array]] = {
    f.__name__: f
    for f in (
        euclidean,
        sqeuclidean,
        cityblock,
        chebyshev,
        minkowski,
        cosine,
        correlation,
        braycurtis,
        canberra,
    )
}
