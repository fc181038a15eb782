"""SciPy's continuous distance metrics written in JAX, for the rules: the distances between
rows of ``xa`` (..., m, n) and rows of ``xb`` (..., k, n), (..., m, k), weighted by ``w``
where given (``V`` for ``seuclidean``, ``VI`` for ``mahalanobis``), with the subgradient 0
where a metric has a kink (zero distance; a zero difference in one coordinate).

The values come from SciPy; these give the derivatives (and the derivatives of those)."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from .._shared._portable_linalg import inv


def _safe_root(s: jax.Array, power: float) -> jax.Array:
    """``s ** (1 / power)`` for ``s >= 0``, with derivative 0 (not inf or NaN) at 0."""
    positive = s > 0
    return jnp.where(positive, jnp.where(positive, s, 1) ** (1 / power), 0)


def _differences(xa: jax.Array, xb: jax.Array) -> jax.Array:
    return xa[..., :, None, :] - xb[..., None, :, :]


def _abs(x: jax.Array) -> jax.Array:
    return jnp.where(x != 0, jnp.abs(x), 0)  # (derivative 0 at 0, as jnp.abs's)


def _power(a: jax.Array, p: float) -> jax.Array:
    """``a ** p`` for ``a >= 0``, with derivative 0 at 0 in both modes: for ``p < 1`` the
    one-sided derivatives there are infinite, and the symmetric one, which central
    differences give, is 0 (``_abs``'s kink taken alike)."""
    nonzero = a != 0
    return jnp.where(nonzero, jnp.where(nonzero, a, 1) ** p, 0)


def _weighted_sum(terms: jax.Array, w: jax.Array | None) -> jax.Array:
    """``Σ_j w_j terms_j`` over the last axis of (..., m, k, n) terms; ``w`` (..., n)."""
    return jnp.sum(terms if w is None else terms * w[..., None, None, :], -1)


def _dots(xa: jax.Array, xb: jax.Array, w: jax.Array | None) -> jax.Array:
    """``Σ_j w_j xa_ij xb_lj``, (..., m, k)."""
    return (xa if w is None else xa * w[..., None, :]) @ jnp.swapaxes(xb, -1, -2)


def euclidean(xa, xb, p, w):
    return _safe_root(_weighted_sum(_differences(xa, xb) ** 2, w), 2)


def sqeuclidean(xa, xb, p, w):
    return _weighted_sum(_differences(xa, xb) ** 2, w)


def cityblock(xa, xb, p, w):
    return _weighted_sum(_abs(_differences(xa, xb)), w)


def chebyshev(xa, xb, p, w):
    differences = _abs(_differences(xa, xb))
    if w is not None:  # (SciPy's weights only choose the coordinates: those above 0)
        differences = jnp.where(w[..., None, None, :] > 0, differences, 0)
    return jnp.max(differences, -1)


def minkowski(xa, xb, p, w):
    if p == math.inf:  # SciPy's value is Chebyshev's (|d|^inf had NaN derivatives)
        return chebyshev(xa, xb, p, w)
    return _safe_root(_weighted_sum(_power(_abs(_differences(xa, xb)), p), w), p)


def _held_size(x: jax.Array, axis: int | None = -1) -> jax.Array:
    """The largest magnitude of ``x`` along ``axis`` (or, for ``None``, elementwise),
    held constant for differentiation; 1 where it is 0 or not finite."""
    size = jnp.abs(x) if axis is None else jnp.max(jnp.abs(x), axis, keepdims=True)
    size = jax.lax.stop_gradient(size)
    return jnp.where((size > 0) & jnp.isfinite(size), size, 1)


# The metrics below do not change when their arguments are scaled (cosine and correlation:
# each row; braycurtis: a pair of rows together; canberra: each coordinate of a pair), so
# they are computed on arguments divided by their size, held constant: f(x / c) is f for
# every c > 0, so the value and every derivative are f's, and no square or product
# over- or underflows (rows of size 1e160 or 1e-160 gave derivatives off by a factor of 3,
# inf or NaN).


def cosine(xa, xb, p, w):
    xa, xb = xa / _held_size(xa), xb / _held_size(xb)
    na, nb = (
        jnp.linalg.norm(x, axis=-1) if w is None else jnp.sqrt(jnp.sum(w[..., None, :] * x**2, -1))
        for x in (xa, xb)
    )
    return 1 - _dots(xa, xb, w) / (na[..., :, None] * nb[..., None, :])


def correlation(xa, xb, p, w):
    xa, xb = xa / _held_size(xa), xb / _held_size(xb)  # (centring next: cosine scales again)
    if w is None:
        return cosine(xa - xa.mean(-1, keepdims=True), xb - xb.mean(-1, keepdims=True), p, w)
    w = w / jnp.sum(w, -1, keepdims=True)  # (SciPy's weighted means)
    means = [jnp.sum(x * w[..., None, :], -1, keepdims=True) for x in (xa, xb)]
    return cosine(xa - means[0], xb - means[1], p, w)


def braycurtis(xa, xb, p, w):
    size = jnp.maximum(_held_size(xa)[..., :, None, :], _held_size(xb)[..., None, :, :])
    a, b = xa[..., :, None, :] / size, xb[..., None, :, :] / size
    return _weighted_sum(_abs(a - b), w) / _weighted_sum(_abs(a + b), w)


def canberra(xa, xb, p, w):
    a, b = xa[..., :, None, :], xb[..., None, :, :]
    size = jnp.maximum(_held_size(a, None), _held_size(b, None))
    a, b = a / size, b / size
    numerator, denominator = _abs(a - b), _abs(a) + _abs(b)
    # SciPy's 0/0 terms are 0
    terms = jnp.where(denominator > 0, numerator / jnp.where(denominator > 0, denominator, 1), 0)
    return _weighted_sum(terms, w)


def seuclidean(xa, xb, p, V):  # noqa: N803 (SciPy's names)
    return _safe_root(jnp.sum(_differences(xa, xb) ** 2 / V[..., None, None, :], -1), 2)


def mahalanobis(xa, xb, p, VI):  # noqa: N803
    differences = _differences(xa, xb)
    return _safe_root(jnp.einsum("...mki,...ij,...mkj->...mk", differences, VI, differences), 2)


def variances(points: jax.Array) -> jax.Array:
    """SciPy's default ``V`` for ``seuclidean``: each coordinate's variance over the rows of
    (..., N, n) ``points`` (``ddof = 1``)."""
    return jnp.var(points, axis=-2, ddof=1)


def inverse_covariance(points: jax.Array) -> jax.Array:
    """SciPy's default ``VI`` for ``mahalanobis``: the inverse of the rows' covariance
    (``ddof = 1``), transposed."""
    centred = points - points.mean(-2, keepdims=True)
    covariance = jnp.swapaxes(centred, -1, -2) @ centred / (points.shape[-2] - 1)
    return jnp.swapaxes(inv(covariance), -1, -2)


SQUARED = ("euclidean", "sqeuclidean")
"""The metrics of the squared differences alone, ``f(Σ (xa - xb)²)``, whose cotangents
``pairwise_cotangents`` gives from the distances without the (m, k, n) differences."""


def squared_cotangents(metric: str, distances: jax.Array, g: jax.Array) -> jax.Array:
    """``2 g f'(s)`` for the distances ``f(s)`` of ``SQUARED``'s ``metric`` (``s`` the sum of
    squared differences) and their cotangent ``g``: ``2 g``, or ``g / d`` for euclidean (0
    at ``d = 0``, the subgradient taken there)."""
    if metric == "sqeuclidean":
        return 2 * g
    positive = distances > 0
    return jnp.where(positive, g / jnp.where(positive, distances, 1), 0)


def pairwise_cotangents(xa: jax.Array, xb: jax.Array, c: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The cotangents of ``xa`` (..., m, n) and ``xb`` (..., k, n) for ``Σ_il c_il |xa_i -
    xb_l|² / 2`` with ``c`` (..., m, k) held: ``xa_i Σ_l c_il - Σ_l c_il xb_l`` and the
    same for ``xb``: sums and a matrix product, no (m, k, n) array."""
    ct = jnp.swapaxes(c, -1, -2)
    return xa * jnp.sum(c, -1)[..., None] - c @ xb, xb * jnp.sum(ct, -1)[..., None] - ct @ xa


METRICS: dict[str, Callable[[jax.Array, jax.Array, float, jax.Array | None], jax.Array]] = {
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
        seuclidean,
        mahalanobis,
    )
}
"""Each metric ``(xa, xb, p, parameter)``: ``parameter`` the weights ``w`` (..., n) or
``None``; ``seuclidean``'s ``V`` (..., n) and ``mahalanobis``'s ``VI`` (..., n, n), never
``None``."""
