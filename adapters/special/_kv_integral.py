"""The integrals behind ``kv``'s and ``kve``'s derivatives, on the host (NumPy only).

For ``x > 0`` and every real ``v`` (DLMF 10.32.9, differentiated under the integral)::

    ∂^m/∂v^m (-∂/∂x)^k K_v(x) = ∫_0^∞ t^m c_m(v t) cosh(t)^k e^{-x cosh t} dt,
    ∂^m/∂v^m (-∂/∂x)^k kve(v, x) = ∫_0^∞ t^m c_m(v t) (cosh t - 1)^k e^{-x (cosh t - 1)} dt,

with ``c_m = cosh`` for even ``m`` and ``sinh`` for odd ``m``. Each derivative is again one
of these integrals, with ``m + 1`` or ``k + 1``: every term is positive (for ``v > 0``), so
no derivative is a difference of nearly equal terms, as the recurrences
``-(K_{v-1} + K_{v+1}) / 2`` are in ``v`` near 0 and ``kve`` is at large ``x``.

The integrand is an even, entire function of ``t``, so the trapezoid rule over [0, ∞)
(half weight at 0) converges geometrically. It is evaluated in logs,
``G(t) = m log t + log c_m(|v| t) + k log f(t) - x (cosh t - 1)`` with ``f = cosh`` or
``cosh - 1``, relative to its maximum, so nothing overflows or underflows on the way; the
nodes cover where ``G`` is within 50 of its maximum (the rest weighs less than ``e^{-50}``),
found by bisection: 256 of them, or more so that steps stay below 0.1 (the long plateau of
``e^{-x cosh t}`` at small ``x``).
"""

from __future__ import annotations

import numpy as np

_NODES = 256
_STEP = 0.1
_DROP = 50.0  # the integrand is cut where it falls below e^-50 of its peak
_BISECTIONS = 48  # in log t: a relative precision of 1e-11 or better
_TINY = 1e-300
_TERMS = 1 << 17  # the most integrand values held at once (1 MiB each array)


def kv_derivative(m: int, k: int, scaled: bool, v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``∂^m/∂v^m (-∂/∂x)^k`` of ``K_v(x)`` (of ``kve(v, x)`` if ``scaled``), elementwise,
    in float64, by the integral above.

    ``x = 0`` gives ``±inf`` (0 for odd ``m`` at ``v = 0``), ``x = inf`` gives 0, and
    ``x < 0`` or a NaN or infinite argument gives NaN, as ``scipy.special.kv`` does. A true
    value beyond float64's range gives ``±inf`` or 0.
    """
    v, x = np.broadcast_arrays(np.asarray(v, np.float64), np.asarray(x, np.float64))
    a = np.abs(v)
    sign = np.where(v < 0, -1.0, 1.0) ** m  # odd in v for odd m, even for even m
    odd_zero = (m % 2 == 1) & (a == 0)  # sinh(0 t) = 0
    out = np.full(v.shape, np.nan)
    out[np.isfinite(v) & (x == 0)] = np.inf
    out[np.isfinite(v) & (x == np.inf)] = 0.0
    out[odd_zero & (x >= 0)] = 0.0
    inside = np.isfinite(v) & np.isfinite(x) & (x > 0) & ~odd_zero
    log_value = _log_integral(m, k, scaled, a[inside], x[inside])
    with np.errstate(over="ignore"):
        out[inside] = np.exp(log_value if scaled else log_value - x[inside])
    return sign * out


def _log_integral(m: int, k: int, scaled: bool, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``log ∫_0^∞ e^{G(t)} dt`` for ``a >= 0``, ``x > 0`` (1-D arrays)."""
    if a.size == 0:
        return a

    def log_integrand(t):
        return _log_integrand(m, k, scaled, a, x, t)

    # G' <= (m + 2k + 1)/t + a + k - x sinh t (a coth(a t) <= a + 1/t, coth(t/2) <= 1 + 2/t),
    # so for t >= 1, G' <= 0 beyond asinh((a + m + 3k + 1) / x) and G' <= -60 beyond
    # t1 = asinh((a + m + 3k + 61) / x): G(t1 + 1) is more than 60 below the peak
    rise_ends = np.maximum(1.0, np.arcsinh((a + m + 3 * k + 1.0) / x))
    far = np.maximum(1.0, np.arcsinh((a + m + 3 * k + 61.0) / x)) + 1.0
    near = _TINY * rise_ends  # where G is as at 0, or far below its peak
    peak = _bisect(lambda t: _slope(m, k, scaled, a, x, t) > 0, near, rise_ends)
    top = np.maximum(log_integrand(peak), log_integrand(near))
    level = top - _DROP
    upper = _bisect(lambda t: log_integrand(t) >= level, peak, far)
    lower = _bisect(lambda t: log_integrand(t) < level, near, peak)
    # from 0 the rule is spectrally accurate (the integrand is even); a window far from 0
    # starts where the integrand is negligible
    start = np.where(lower <= 0.25 * upper, 0.0, lower)
    count = np.maximum(_NODES, np.ceil((upper - start) / _STEP) + 1)
    count = (_NODES * np.ceil(count / _NODES)).astype(np.int64)  # a few sizes, not one per element
    sums = np.empty_like(a)
    # each element on its own nodes, whatever the rest of the batch: elements with the same
    # count together, in chunks of at most _TERMS terms (one element at x = 1e-300 needs
    # ~7,000 nodes; on a shared grid its neighbours paid for them and summed padding,
    # where inf - inf made NaN)
    for size in np.unique(count):
        rows = np.flatnonzero(count == size)
        for chunk in np.array_split(rows, -(-rows.size * int(size) // _TERMS)):
            sums[chunk] = _trapezoid(
                m, k, scaled, a[chunk], x[chunk], start[chunk], upper[chunk], top[chunk], int(size)
            )
    return top + np.log(sums)


def _trapezoid(m, k, scaled, a, x, start, upper, top, count: int) -> np.ndarray:
    """``h Σ w_j e^{G(t_j) - top}`` on ``count`` nodes from ``start`` to ``upper``, per row."""
    h = (upper - start) / (count - 1)
    t = start[:, None] + h[:, None] * np.arange(count)
    terms = np.exp(_log_integrand(m, k, scaled, a[:, None], x[:, None], t) - top[:, None])
    terms[:, [0, -1]] *= 0.5
    return h * terms.sum(axis=-1)


def _log_integrand(m, k, scaled, a, x, t):
    """``G(t)``; ``-inf`` where the integrand is 0 (at ``t = 0`` when ``m`` or, scaled,
    ``k`` is positive)."""
    at = a * t
    with np.errstate(divide="ignore", over="ignore"):
        half = 2.0 * np.sinh(t / 2) ** 2  # cosh t - 1, without cancelling
        if m % 2 == 0:  # log cosh, without overflow: a t + log1p(e^{-2 a t}) - log 2
            log_c = at + np.log1p(np.exp(-2.0 * at)) - np.log(2.0)
        else:  # log sinh: exact for small a t, where the large-argument form cancels
            log_c = np.where(
                at < 20.0,
                np.log(np.sinh(np.minimum(at, 20.0))),
                at - np.log(2.0) + np.log1p(-np.exp(-2.0 * at)),
            )
        power = m * np.log(t) if m else 0.0
        if not k:
            factor = 0.0
        elif scaled:
            factor = k * np.log(half)
        else:
            factor = k * (t + np.log1p(np.exp(-2.0 * t)) - np.log(2.0))  # k log cosh t
        return power + log_c + factor - x * half


def _slope(m, k, scaled, a, x, t):
    """``G'(t)`` for ``t > 0``."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = np.tanh(a * t) if m % 2 == 0 else 1.0 / np.tanh(a * t)
        f = 1.0 / np.tanh(t / 2) if scaled else np.tanh(t)
        return m / t + a * c + k * f - x * np.sinh(t)


def _bisect(inside, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The point between ``lo > 0`` (where ``inside`` holds) and ``hi`` (where it fails) at
    which ``inside`` turns, by bisection in ``log t``: the scales run from ``1e-300`` up."""
    for _ in range(_BISECTIONS):
        mid = np.sqrt(lo) * np.sqrt(hi)  # lo * hi could underflow
        keep = inside(mid)
        lo, hi = np.where(keep, mid, lo), np.where(keep, hi, mid)
    return np.sqrt(lo) * np.sqrt(hi)
