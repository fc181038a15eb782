"""The t distribution where its degrees of freedom ``ν`` are large or infinite: ``t(df=inf)``
is the standard normal, as SciPy defines it, in values and in derivatives.

Where ``ν`` grows, the textbook formulas subtract quantities that tend to each other:

- the log normalizer ``log(√ν B(ν/2, ½)) → ½ log 2π``: SciPy's ``betaln(ν/2, ½)`` is 2e-10
  off at ``ν = 1e6`` (against mpmath); for ``ν >= LARGE_DF`` it is ``½ log 2π + C(ν)`` with
  ``C`` from Stirling's series, differenced term by term (``_stirling_excess``);
- ``∂F/∂ν = ½(½ ∂I_x(ν/2, ½)/∂a + b(x) x y/ν)`` for ``z < 0`` (``F = ½ I_x``,
  ``x = ν/(ν + z²)``, ``y = 1 - x``, ``b`` the beta density): two terms of size ``1/ν``
  whose sum is of size ``1/ν²`` (6e-10 relative off at ``ν = 1e3``, 0.2 at ``ν = 1e8``).
  For ``ν >= LARGE_DF`` it is ``∫ f ∂(log f)/∂ν`` by Gauss quadrature instead
  (``df_derivative``), with ``∂(log f)/∂ν`` a sum of terms each of size ``1/ν²``
  (``_log_density_df``), so nothing cancels.

Host functions are NumPy; ``log_normalizer`` is JAX and ``log_kernel`` either (their
derivatives are the density's in ``z`` and ``ν``); both take the normal's form at ``ν = inf``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import scipy.special as sc
from jax.scipy.special import gammaln

from .._shape_derivatives import BERNOULLI

LARGE_DF = 100.0
"""From this ``ν`` on, the log normalizer is Stirling's and ``∂F/∂ν`` a quadrature: the
direct forms lose 1e-12 relative at ``ν = 100`` (measured), growing as ``ν²``."""

_HALF_LOG_TWO_PI = 0.5 * np.log(2 * np.pi)
_LEGENDRE = np.polynomial.legendre.leggauss(24)
_LAGUERRE = np.polynomial.laguerre.laggauss(64)
# the integrand f ∂(log f)/∂ν is positive for |t| below its zero (t² → 1 + √2 as ν → ∞;
# 1.554 at ν = 100) and negative above: |z| up to here integrates from 0, beyond to ∞
_HEAD = 1.55


def _stirling_excess(v, xp):
    """``C(ν) = log Γ(s) - log Γ(s + ½) + ½ log s`` (``s = ν/2``) for ``ν >= LARGE_DF``,
    ``C(inf) = 0``, in NumPy or JAX (``xp``): Stirling's series of the two ``log Γ``,
    differenced term by term (``½ - s log(1 + 1/ν)`` as its series in ``1/ν``,
    ``s^{1-2k} - (s + ½)^{1-2k}`` by ``expm1``)."""
    r = 1 / v
    series = 0 * r  # ½ - log1p(r)/(2r) = r Σₖ₌₂ (-r)^{k-2}/(2k): 8 terms at r <= 1/100
    for k in range(9, 1, -1):
        series = series * r + (-1) ** k / (2 * k)
    total = r * series
    log_ratio = xp.log1p(r)  # log((s + ½)/s)
    s = v / 2
    for k, bernoulli in enumerate(BERNOULLI, start=1):
        scale = bernoulli / (2 * k * (2 * k - 1))
        total = total - scale * s ** (1 - 2 * k) * xp.expm1((1 - 2 * k) * log_ratio)
    return total


def host_log_normalizer(v: np.ndarray) -> np.ndarray:
    """``log(√ν B(ν/2, ½))``, NaN for ``ν <= 0``."""
    large = v >= LARGE_DF
    with np.errstate(all="ignore"):
        direct = sc.betaln(v / 2, 0.5) + np.log(v) / 2
        stirling = _HALF_LOG_TWO_PI + _stirling_excess(np.where(large, v, LARGE_DF), np)
        return np.where(large, stirling, direct)


def log_normalizer(v):
    """``log(√ν B(ν/2, ½))`` in JAX, finite derivatives at ``ν = inf`` (0 there)."""
    large = v >= LARGE_DF
    small = jnp.where(large, 1.0, v)  # each branch at points where it is finite
    direct = gammaln(small / 2) + gammaln(0.5) - gammaln(small / 2 + 0.5) + jnp.log(small) / 2
    stirling = _HALF_LOG_TWO_PI + _stirling_excess(jnp.where(large, v, LARGE_DF), jnp)
    return jnp.where(large, stirling, direct)


def log_kernel(ops, v, z):
    """``-(ν + 1)/2 log(1 + z²/ν)``, and ``-z²/2`` at ``ν = inf``, in JAX or NumPy (``ops``)."""
    infinite = ops.isinf(v)
    finite = ops.where(infinite, 1.0, v)
    return ops.where(infinite, -z * z / 2, -(finite + 1) / 2 * ops.log1p(z * z / finite))


def _excess_log(v):
    """``-log(1 - v) - v = Σₖ₌₂ vᵏ/k`` for ``0 <= v < 1``, without cancellation."""
    small = v < 0.5
    w = np.where(small, v, 0.0)
    series, power = np.zeros_like(w), w.copy()
    for k in range(2, 56):  # 0.5⁵⁵ < 1e-16
        power = power * w
        series += power / k
    return np.where(small, series, -np.log1p(-v) - v)


def _digamma_excess(v):
    """``½(ψ((ν+1)/2) - ψ(ν/2)) - 1/(2ν)`` for ``ν >= LARGE_DF``: by the duplication formula,
    ``ψ(s + ½) - ψ(s) = 1/(2s) + Σₖ B₂ₖ (1 - 4⁻ᵏ)/(k s²ᵏ)``, ``s = ν/2``."""
    s = v / 2
    return sum(b * (1 - 4.0**-k) / (2 * k) / s ** (2 * k) for k, b in enumerate(BERNOULLI, start=1))


def _log_density_df(v, t):
    """``∂ log f(t; ν)/∂ν = A(ν) - ½ L + u/(2ν(1 + u))``, ``u = t²/ν``,
    ``L = log(1 + u) - u/(1 + u)``: each term of size ``1/ν²`` at fixed ``t``."""
    u = t * t / v
    return _digamma_excess(v) - _excess_log(u / (1 + u)) / 2 + u / (2 * v * (1 + u))


def _log_density(v, t):
    return -(v + 1) / 2 * np.log1p(t * t / v) - _HALF_LOG_TWO_PI - _stirling_excess(v, np)


def df_derivative(v: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``∂F(-s; ν)/∂ν`` for ``LARGE_DF <= ν < inf`` and ``s > 0`` (finite), by quadrature:
    ``-∫₀ˢ f g`` (``F(0) = ½`` for every ``ν``) where ``s <= _HEAD``, else ``∫ₛ^∞ f g``
    (``g = ∂ log f/∂ν``), each with an integrand of one sign. The tail in
    ``τ = (ν + 1)/2 log((ν + t²)/(ν + s²))``, where ``f(t) = f(s) e^{-τ}`` exactly
    (Gauss-Laguerre); the head by Gauss-Legendre."""
    v, s = np.broadcast_arrays(v, s)
    head = s <= _HEAD
    out = np.empty(v.shape)
    vh, sh = v[head, None], s[head, None]
    nodes, weights = _LEGENDRE
    t = sh * (1 + nodes) / 2
    integrand = np.exp(_log_density(vh, t)) * _log_density_df(vh, t)
    out[head] = -sh[:, 0] / 2 * (integrand @ weights)
    vt, st = v[~head, None], s[~head, None]
    nodes, weights = _LAGUERRE
    w = 2 * nodes / (vt + 1)  # log((ν + t²)/(ν + s²))
    t = np.sqrt(st * st + (vt + st * st) * np.expm1(w))
    # dt = (ν + s²) e^w / ((ν + 1) t) dτ
    integrand = _log_density_df(vt, t) * np.exp(w) / t
    front = np.exp(_log_density(vt[:, 0], st[:, 0])) * (vt[:, 0] + st[:, 0] ** 2) / (vt[:, 0] + 1)
    out[~head] = front * (integrand @ weights)
    return out
