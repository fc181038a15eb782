"""The integrals behind ``kv``'s derivatives in its order, on the host (NumPy only).

For ``x > 0`` and every real ``v`` (DLMF 10.32.9 and its derivatives in ``v``)::

    T_m(v, x) = ∫_0^∞ t^m c_m(v t) e^{-x cosh t} dt,   c_m = cosh (m even), sinh (m odd),

so ``T_0 = K_v(x)`` and ``T_m = ∂^m K_v(x) / ∂v^m``. The family is closed under both
derivatives: ``∂T_m/∂v = T_{m+1}`` and ``∂T_m/∂x = -(T_m(v-1, x) + T_m(v+1, x)) / 2``
(``cosh t cosh vt = (cosh (v+1)t + cosh (v-1)t) / 2``, the same for ``sinh``).

The integrand is an even, entire function of ``t``, so the trapezoid rule over [0, ∞)
(half weight at 0) converges geometrically in the number of nodes. It is evaluated in logs,
``G(t) = m log t + log c_m(|v| t) - x (cosh t - 1)``, relative to its maximum, so neither
``cosh(v t)`` nor ``e^{-x cosh t}`` overflows or underflows on the way: the grid covers the
interval where ``G`` is within 50 of its maximum (the rest weighs less than ``e^{-50}``),
found by bisection, with 256 nodes.
"""

from __future__ import annotations

import numpy as np

_NODES = 256
_STEP = 0.1
_DROP = 50.0  # the integrand is cut where it falls below e^-50 of its peak
_BISECTIONS = 48  # in log t: a relative precision of 1e-11 or better
_TINY = 1e-300


def kv_order_derivative(m: int, scaled: bool, v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``T_m(v, x)`` (times ``e^x`` if ``scaled``) elementwise, in float64.

    ``x = 0`` gives ``±inf`` (0 for odd ``m`` and ``v = 0``), ``x = inf`` gives 0, and
    ``x < 0`` or a NaN or infinite argument gives NaN, as ``scipy.special.kv`` does.
    """
    v, x = np.broadcast_arrays(np.asarray(v, np.float64), np.asarray(x, np.float64))
    a = np.abs(v)
    sign = np.where(v < 0, -1.0, 1.0) ** m  # T_m(-v) = (-1)^m T_m(v)
    odd_zero = (m % 2 == 1) & (a == 0)  # sinh(0 t) = 0
    out = np.full(v.shape, np.nan)
    out[np.isfinite(v) & (x == 0)] = np.inf
    out[np.isfinite(v) & (x == np.inf)] = 0.0
    out[odd_zero & (x >= 0)] = 0.0
    inside = np.isfinite(v) & np.isfinite(x) & (x > 0) & ~odd_zero
    log_scaled = _log_integral(m, a[inside], x[inside])
    with np.errstate(over="ignore"):  # a true value beyond float64 is inf, as in kv
        out[inside] = np.exp(log_scaled if scaled else log_scaled - x[inside])
    return sign * out


def _log_integral(m: int, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``log ∫_0^∞ t^m c_m(a t) e^{-x (cosh t - 1)} dt`` for ``a >= 0``, ``x > 0`` (1-D)."""
    if a.size == 0:
        return a
    # G rises while G' > 0: beyond max(1, asinh((a + m + 1) / x)), G' <= 0
    # (a coth(a t) <= a + 1/t, and m/t <= m for t >= 1); beyond
    # t1 = max(1, asinh((a + m + 61) / x)), G' <= -60, so G(t1 + 1) is 60 below the peak
    rise_ends = np.maximum(1.0, np.arcsinh((a + m + 1.0) / x))
    far = np.maximum(1.0, np.arcsinh((a + m + 61.0) / x)) + 1.0
    near = _TINY * rise_ends  # where G is as at 0 (m = 0), or far below the peak (m > 0)
    peak = _bisect(lambda t: _slope(m, a, x, t) > 0, near, rise_ends)
    top = np.maximum(_log_integrand(m, a, x, peak), _log_integrand(m, a, x, near))
    level = top - _DROP
    upper = _bisect(lambda t: _log_integrand(m, a, x, t) >= level, peak, far)
    lower = _bisect(lambda t: _log_integrand(m, a, x, t) < level, near, peak)
    # from 0 the rule is spectrally accurate (the integrand is even); a window far from 0
    # starts where the integrand is negligible
    start = np.where(lower <= 0.25 * upper, 0.0, lower)
    # steps of at most a 255th of the window (a narrow peak) and at most _STEP (the
    # plateau and double-exponential fall of e^{-x cosh t} when x is small)
    count = np.maximum(_NODES, np.ceil((upper - start) / _STEP) + 1).astype(np.int64)
    h = (upper - start) / (count - 1)
    k = np.arange(count.max())
    t = start[:, None] + h[:, None] * k
    terms = np.exp(_log_integrand(m, a[:, None], x[:, None], t) - top[:, None])
    weights = np.where(k < count[:, None] - 1, 1.0, np.where(k == count[:, None] - 1, 0.5, 0.0))
    weights[:, 0] = 0.5
    total = np.einsum("ij,ij->i", terms, weights)
    return top + np.log(h * total)


def _log_integrand(m: int, a: np.ndarray, x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``G(t)``; ``-inf`` where the integrand is 0 (``t = 0`` with ``m > 0``)."""
    at = a * t
    with np.errstate(divide="ignore", over="ignore"):
        if m % 2 == 0:  # log cosh, without overflow: a t + log1p(e^{-2 a t}) - log 2
            log_c = at + np.log1p(np.exp(-2.0 * at)) - np.log(2.0)
        else:  # log sinh: exact for small a t, where the large-argument form cancels
            log_c = np.where(
                at < 20.0,
                np.log(np.sinh(np.minimum(at, 20.0))),
                at - np.log(2.0) + np.log1p(-np.exp(-2.0 * at)),
            )
        power = m * np.log(t) if m else 0.0
        return power + log_c - x * 2.0 * np.sinh(t / 2) ** 2  # cosh t - 1, without cancelling


def _slope(m: int, a: np.ndarray, x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``G'(t)`` for ``t > 0``."""
    at = a * t
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.tanh(at) if m % 2 == 0 else 1.0 / np.tanh(at)
        return m / t + a * c - x * np.sinh(t)


def _bisect(inside, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The point between ``lo > 0`` (where ``inside`` holds) and ``hi`` (where it fails) at
    which ``inside`` turns, by bisection in ``log t``: the scales run from ``1e-300`` up."""
    for _ in range(_BISECTIONS):
        mid = np.sqrt(lo) * np.sqrt(hi)  # lo * hi could underflow
        keep = inside(mid)
        lo, hi = np.where(keep, mid, lo), np.where(keep, hi, mid)
    return np.sqrt(lo) * np.sqrt(hi)
