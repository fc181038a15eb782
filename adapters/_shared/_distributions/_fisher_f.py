"""The f distribution's shape derivatives where its degrees of freedom are large.

``F(z) = I_x(s, h)`` (``s = d₁/2``, ``h = d₂/2``, ``x = d₁z/(d₁z + d₂)``), and its textbook
derivatives ``½ ∂I_x/∂a + b(x) x y/d₁`` (and in ``d₂``) are two terms of size ``1/d`` whose
sum is of size ``1/d²``: 6e-10 relative off at 1e3, 1e-5 at 1e5 (against mpmath). Here they are
``∂F/∂θ = ∫₀ᶻ f ∂(log f)/∂θ`` instead, in ``v = log t``, where each piece has one sign:

- the density: ``f(t) t = g₀ exp(s L(q) + h L(p))``, ``L(u) = log(1 + u) - u <= 0``,
  ``q = r(t - 1)/(r + t)``, ``p = -q/r``, ``r = h/s``, with its mode ``v = 0`` and
  ``g₀ = exp(-μ(s) - μ(h) + μ(s + h))/√(2π(1/s + 1/h))`` (``μ`` Stirling's remainder of
  ``log Γ``);
- the scores: ``2 ∂(log f)/∂d₁ = L(q) + c(s, h)`` and ``2 ∂(log f)/∂d₂ = L(p) + c(h, s)``,
  ``c(a, b) = ψ(a + b) - ψ(a) - log(1 + b/a)`` (``> 0``), from Stirling's series
  differenced term by term.

The integral runs over the side of the mode that ``z`` is on (``∫₀ f g = 0``: above the mode
it is minus the integral from ``z`` to ``∞``), by Gauss-Legendre on panels between the points
where the log-density has fallen by ``_LEVELS`` from its top (found by Newton's method, as the
log-density is concave in ``v``); the density's two sides are the same function with ``s``
and ``h`` swapped and ``v`` negated, so one routine serves both.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc

from .._shape_derivatives import BERNOULLI
from .._shape_derivatives import log1p_minus as _log1p_minus
from .._shape_derivatives import stirling_remainder as _stirling_remainder

_HALF_LOG_TWO_PI = 0.5 * np.log(2 * np.pi)
_LEVELS = np.array([0.0, 1.0, 2.0, 3.5, 5.5, 8.0, 11.0, 15.0, 20.0, 26.0, 33.0, 41.0, 50.0])
"""How far the log-density has fallen (from its top on the interval) at the panels' ends:
below ``e^-50`` the rest adds less than 1e-20 relative."""
_BREAKS = -(2.0 ** np.arange(6))
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(12)
_ASYMPTOTIC = 10.0  # from here on, Stirling's series in ``1/a`` (8 terms: below 1e-20)


def _digamma_excess(a):
    """``ψ(a) - log a``."""
    large = a >= _ASYMPTOTIC
    big = np.where(large, a, _ASYMPTOTIC)
    series = 0.0 * big
    for k in range(len(BERNOULLI), 0, -1):
        series = series / (big * big) + BERNOULLI[k - 1] / (2 * k)
    small = np.where(large, 1.0, a)
    return np.where(large, -0.5 / big - series / (big * big), sc.digamma(small) - np.log(small))


def _score_constant(a, b):
    """``c(a, b) = ψ(a + b) - ψ(a) - log(1 + b/a) > 0``: for ``a >= _ASYMPTOTIC`` Stirling's
    series differenced term by term, ``b/(2a(a + b)) - Σ B₂ₖ/(2k) a^{-2k} expm1(-2k log(1 +
    b/a))`` (each term of one sign), else ``(ψ(a + b) - log(a + b)) - (ψ(a) - log a)``
    (then ``ψ(a) - log a`` is the larger by far where ``a + b`` is large)."""
    large = a >= _ASYMPTOTIC
    big = np.where(large, a, _ASYMPTOTIC)
    log_ratio = np.log1p(b / big)
    total = b / (2 * big * (big + b))
    power = np.ones_like(total)
    for k, bernoulli in enumerate(BERNOULLI, start=1):
        power = power / (big * big)
        total = total - bernoulli / (2 * k) * power * np.expm1(-2 * k * log_ratio)
    return np.where(large, total, _digamma_excess(a + b) - _digamma_excess(a))


def _log_density(s, h, log_r, v):
    """``s L(q) + h L(p)`` (the log-density less its mode's, in ``v``), its slope in ``v``,
    ``h p``, and ``L(q)``, ``L(p)``."""
    e = np.exp(v)
    m = np.expm1(v)
    p = -m / (np.exp(log_r) + e)
    q = -np.exp(log_r) * p
    # log(1 + q) = v + log(1 + p): q -> -1 as v -> -inf, where 1 + q rounds off
    log_q1 = v + np.log1p(np.exp(log_r)) - np.logaddexp(log_r, v)
    lq = np.where(q < -0.5, log_q1 - q, _log1p_minus(np.maximum(q, -0.5)))
    lp = _log1p_minus(p)
    return s * lq + h * lp, h * p, lq, lp


def _level_points(s, h, log_r, top):
    """For each level ``c`` of ``_LEVELS``, the ``v <= top`` where the log-density is ``c``
    below its value at ``top`` (``top <= 0``, the mode), by Newton's method: the function is
    concave and increasing there, so from any start the second iterate on is below the root
    and rises to it monotonically."""
    count = len(_LEVELS)
    points = np.empty((*top.shape, count))
    points[..., 0] = top
    ell_top, slope_top, _, _ = _log_density(s, h, log_r, top)
    curvature = s * h / (s + h)  # -ℓ'' at the mode
    for j in range(1, count):
        target = ell_top - _LEVELS[j]
        # a start: the quadratic with the slope at the top and the mode's curvature
        v = top - (np.sqrt(slope_top**2 + 2 * curvature * _LEVELS[j]) - slope_top) / curvature
        for _ in range(100):
            ell, slope, _, _ = _log_density(s, h, log_r, v)
            step = (ell - target) / slope
            v = v - step
            if np.all(np.abs(step) <= 1e-12 * (1 + np.abs(v))):
                break
        points[..., j] = v
    return points


def _lower_integrals(s, h, top):
    """``∫_{-∞}^{top} g₀ e^{ℓ(v)} ½(L(q) + c(s, h)) dv`` and the same with ``½(L(p) +
    c(h, s))``, for ``top <= 0``."""
    log_r = np.log(h) - np.log(s)
    ends = _level_points(s, h, log_r, top)
    # and panels no wider than the log-density's curvature near the mode where that matters,
    # a shape below 1 (the log-density then falls by less than 1 per unit of v)
    ends = np.sort(np.concatenate([ends, np.minimum(top[:, None], _BREAKS)], axis=1))[:, ::-1]
    # panels between consecutive ends, Gauss-Legendre nodes in each
    right, left = ends[:, :-1], ends[:, 1:]
    half = (right - left) / 2
    v = (left + right)[..., None] / 2 + half[..., None] * _NODES
    ss, hh, lr = s[:, None, None], h[:, None, None], log_r[:, None, None]
    ell, _, lq, lp = _log_density(ss, hh, lr, v)
    density = np.exp(ell)
    weights = half[..., None] * _WEIGHTS
    mass_q = np.sum(density * (lq + _score_constant(ss, hh)) * weights, axis=(-2, -1))
    mass_p = np.sum(density * (lp + _score_constant(hh, ss)) * weights, axis=(-2, -1))
    log_g0 = (
        -_HALF_LOG_TWO_PI
        + 0.5 * (np.log(s) + np.log(h) - np.log(s + h))
        - _stirling_remainder(s)
        - _stirling_remainder(h)
        + _stirling_remainder(s + h)
    )
    g0 = np.exp(log_g0)
    return 0.5 * g0 * mass_q, 0.5 * g0 * mass_p


def shape_derivatives(dfn: np.ndarray, dfd: np.ndarray, z: np.ndarray):
    """``(∂F/∂d₁, ∂F/∂d₂)`` of the f cdf at ``0 < z < inf`` (finite positive shapes), by
    quadrature (see the module docstring)."""
    dfn, dfd, z = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in (dfn, dfd, z)))
    shape = z.shape
    s, h, v = dfn.ravel() / 2, dfd.ravel() / 2, np.log(z.ravel())
    d1, d2 = np.empty(v.shape), np.empty(v.shape)
    lower = v <= 0
    d1[lower], d2[lower] = _lower_integrals(s[lower], h[lower], v[lower])
    upper = ~lower  # the mirror image: s and h swapped, v negated, minus the upper integral
    b, a = _lower_integrals(h[upper], s[upper], -v[upper])
    d1[upper], d2[upper] = -a, -b
    return d1.reshape(shape), d2.reshape(shape)
