"""The derivatives of the regularized incomplete gamma and beta functions in their shape
parameters, on the host: plain NumPy functions, vectorized, with no JAX.

- ``gammainc_da(a, x)``: ``∂P(a, x)/∂a``; ``gammaincc_da(a, x) = ∂Q(a, x)/∂a = -∂P/∂a``.
- ``betainc_dab(a, b, x)``: ``(∂I_x(a, b)/∂a, ∂I_x(a, b)/∂b)``; ``betaincc_dab`` gives those
  of ``1 - I_x(a, b)``, their negatives.

Method. Each function is the value SciPy computes times its logarithmic derivative, which is
computed from the expansion that converges fast where the function is not close to 1, so the
complement's derivative comes out of the complement's own expansion (no ``1 - P`` anywhere):

- gamma (Moore 1982, AS 187): for ``x < a + 1`` the series
  ``P = x^a e^{-x}/Γ(a+1) Σ cₙ``, ``cₙ = Πₖ₌₁ⁿ x/(a+k)``, gives
  ``∂ ln P/∂a = ln x - ψ(a+1) + Σ cₙ' / Σ cₙ`` with ``cₙ'/cₙ = -Σₖ₌₁ⁿ 1/(a+k)``; otherwise
  Legendre's continued fraction ``Q = x^a e^{-x}/Γ(a) h`` (modified Lentz), differentiated
  alongside its value in dual numbers: ``∂ ln Q/∂a = ln x - ψ(a) + h'/h``.
- beta (Boik & Robison-Cox 1998): for ``x < (a+1)/(a+b+2)`` the continued fraction
  ``I = x^a (1-x)^b /(a B(a, b)) h`` (modified Lentz), differentiated in dual numbers in
  ``a`` and ``b``: ``∂ ln I/∂a = ln x - ψ(a+1) + ψ(a+b) + h_a/h``,
  ``∂ ln I/∂b = ln(1-x) - ψ(b) + ψ(a+b) + h_b/h``; otherwise the same for
  ``1 - I = I_{1-x}(b, a)``. (``-1/a - ψ(a)`` is written ``-ψ(a+1)``: no cancellation at tiny
  ``a``.)

The value that multiplies the logarithmic derivative is the expansion's own (``P`` from the
series, ``Q`` from the fraction, with the front ``x^a e^{-x}/Γ(a)`` about the mode for
``a >= 10``), not SciPy's ``gammainc``, which is 3e-7 off at ``a = 1e6``, ``P = 1e-10``; for
the beta it is SciPy's ``betainc`` except below ``_BETA_TAIL`` (1e-250), where SciPy's is off
(9% at ``(300, 30)``, ``I = 1e-280``; 0 for 2.3e-291 at ``(1e5, 10)``) and the fraction's own,
few terms there, is exact.

Every element iterates until its own value and derivatives have converged (relative change
below 1e-16), so an element's result never depends on the others in the batch. An element that
has not converged after ``MAX_TERMS`` terms (shapes beyond about 1e8) is NaN.

Domain: ``a, b > 0``; ``x >= 0`` (gamma), ``0 <= x <= 1`` (beta); NaN outside or for NaN
input. At ``x = 0`` and at the upper end (``x = inf``, ``x = 1``) the derivatives are 0. Where
the function underflows (``P < 1e-308``) the derivative is 0 too.

Accuracy, measured against mpmath (``mp.diff`` of ``gammainc(a, 0, x, regularized=True)`` and
``betainc(a, b, 0, x, regularized=True)``, or of the complement, at 30 digits) over shapes
1e-3 ... 1e4 and ``x`` from the far lower tail to the far upper tail
(``tests/test_special_incomplete.py``): maximum relative error 2.6e-13 for ``∂P/∂a`` (96
points; the worst at a = 400, where SciPy's own ``P`` carries about that much) and 3.8e-13 for
``∂I/∂a``, ``∂I/∂b`` (194 points; the worst at a = b = 1e4); below 1e-13 for shapes under 100.
The #54 search, 40 digits, ``P`` or ``Q`` (``I`` or ``1 - I``) from 1e-300 to 1/2: ``∂P/∂a``
3.6e-13 at most for ``a`` from 1e-3 to 1e5 (89 points; 4e-12 when it took SciPy's
``Q = 1e-300`` at ``a = 1e4``), 1e-12 at 1e6 and 1.5e-11 at 1e7 (the median, 3e4 terms);
``∂I/∂a``, ``∂I/∂b`` 1.3e-12 at most over 192 points, shapes 1e-3 to 1e6, and 2e-12 in the
far tails (``I`` from 1e-240 to 1e-305, shapes to 1e6).
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc

MAX_TERMS = 100_000
_HALF_LOG_TWO_PI = 0.5 * np.log(2 * np.pi)
_EPS = 1e-16
_TINY = 1e-300


def gammainc_da(a, x) -> np.ndarray:
    """``∂P(a, x)/∂a`` of the regularized lower incomplete gamma function
    ``P = scipy.special.gammainc(a, x)``, in float64, broadcast over ``a`` and ``x``."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        valid = (a > 0) & (x >= 0) & np.isfinite(a)
        out[valid & ((x == 0) | (x == np.inf))] = 0.0
        inner = valid & (x > 0) & np.isfinite(x)
        series = inner & (x < a + 1)
        fraction = inner & ~series
        # P and Q from their own expansions, not SciPy's values: at a = 1e6 SciPy's P is 3e-7
        # off at P = 1e-10 (1.3% at a = 1e7), and the derivative is P times its logarithm's
        aa, xx = a[series], x[series]
        total, ratio = _series(aa, xx)
        value = np.exp(_gamma_log_front(aa, xx) - np.log(aa)) * total
        out[series] = value * (np.log(xx) - sc.digamma(aa + 1) + ratio)
        aa, xx = a[fraction], x[fraction]
        h, ratio = _fraction(aa, xx)
        value = np.exp(_gamma_log_front(aa, xx)) * h
        out[fraction] = -value * (np.log(xx) - sc.digamma(aa) + ratio)
    return out


def _gamma_log_front(a, x):
    """``log(x^a e^{-x}/Γ(a))``: for ``a >= 10`` as ``a L(x/a - 1) + ½ log(a/2π) - μ(a)``
    (``L(u) = log(1 + u) - u``, ``μ`` Stirling's remainder), where the direct form's terms of
    size ``a`` cancel (1e-10 relative lost at a = 1e6); directly below."""
    large = a >= _ASYMPTOTIC
    big = np.where(large, a, _ASYMPTOTIC)
    stirling = big * _log_ratio_excess(x, big) + 0.5 * np.log(big / (2 * np.pi))
    stirling -= stirling_remainder(big)
    small = np.where(large, 1.0, a)
    return np.where(large, stirling, sc.xlogy(small, x) - x - sc.gammaln(small))


def _log_ratio_excess(x, m):
    """``L(x/m - 1) = log(x/m) - (x/m - 1) <= 0`` for ``x, m > 0``, relatively accurate:
    ``log1p_minus`` of ``(x - m)/m`` near 1 (``x - m`` is exact there), the logarithm of the
    ratio beyond (of each factor where the ratio would underflow or overflow)."""
    u = (x - m) / m
    ratio = x / m
    normal = (ratio > 1e-300) & (ratio < 1e300)
    log_ratio = np.where(normal, np.log(np.where(normal, ratio, 1.0)), np.log(x) - np.log(m))
    near = np.abs(u) <= 0.2
    return np.where(near, log1p_minus(np.where(near, u, 0.0)), log_ratio - u)


def gammaincc_da(a, x) -> np.ndarray:
    """``∂Q(a, x)/∂a`` of ``Q = scipy.special.gammaincc(a, x) = 1 - P``: ``-gammainc_da``,
    computed from ``Q``'s own continued fraction where ``P`` is close to 1."""
    return -gammainc_da(a, x)


def betainc_dab(a, b, x) -> tuple[np.ndarray, np.ndarray]:
    """``(∂I/∂a, ∂I/∂b)`` of the regularized incomplete beta function
    ``I = scipy.special.betainc(a, b, x)``, in float64, broadcast over the arguments."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
    da = np.full(a.shape, np.nan)
    db = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        valid = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b) & (x >= 0) & (x <= 1)
        ends = valid & ((x == 0) | (x == 1))
        da[ends] = db[ends] = 0.0
        inner = valid & ~ends
        direct = inner & (x < (a + 1) / (a + b + 2))
        swapped = inner & ~direct
        da[direct], db[direct] = _beta_lower(a[direct], b[direct], x[direct])
        # 1 - I_x(a, b) = I_{1-x}(b, a): its derivatives, negated, with the roles swapped
        db_c, da_c = _beta_lower(b[swapped], a[swapped], 1 - x[swapped])
        da[swapped], db[swapped] = -da_c, -db_c
    return da, db


def betaincc_dab(a, b, x) -> tuple[np.ndarray, np.ndarray]:
    """``(∂/∂a, ∂/∂b)`` of ``1 - I_x(a, b)`` (``scipy.special.betaincc``): the negatives of
    ``betainc_dab``'s, computed from the complement's own continued fraction where ``I`` is
    close to 1."""
    da, db = betainc_dab(a, b, x)
    return -da, -db


_BETA_TAIL = 1e-250
"""Below this SciPy's ``betainc`` is not trusted (measured exact to 1e-13 down to 1e-270 on
the probe's shapes, 9% off at 1e-280); above, it is more accurate than the continued fraction
summed here (1.7e-11 off at (1e6, 0.5, 1 - 2e-5), after 1e5 terms)."""


def _beta_lower(a, b, x):
    """``(∂I/∂a, ∂I/∂b)`` from the continued fraction, for ``x < (a+1)/(a+b+2)``."""
    h, h_a, h_b = _beta_fraction(a, b, x)
    # SciPy's I, except where it is below _BETA_TAIL: there its own continued fraction's (few
    # terms in a far tail), as SciPy's is off: at (300, 30, 0.0855) I = 1e-280 by 9%, at
    # (1000, 10, 0.48) I = 1e-300 by 0.8%, and at (1e5, 10, 0.99287) 0 for 2.3e-291
    value = sc.betainc(a, b, x)
    tail = ~(value >= _BETA_TAIL)
    value[tail] = np.exp(_beta_log_front(a[tail], b[tail], x[tail])) * h[tail]
    da = value * (np.log(x) + _digamma_difference(a + 1, b - 1) + h_a / h)
    db = value * (np.log1p(-x) + _digamma_difference(b, a) + h_b / h)
    return da, db


def _beta_log_front(a, b, x):
    """``log(x^a (1-x)^b/(a B(a, b)))``: from ``a + b >= 100`` on about the mean
    ``p = a/(a+b)``, ``q = b/(a+b)``, as ``a L(x/p - 1) + b L(y/q - 1) + ½ log(ab/(2π(a+b))) -
    μ(a) - μ(b) + μ(a+b) - log a`` (``y = 1 - x``, each ``L <= 0``: the direct form's terms
    of size ``a`` and ``b`` cancel, and SciPy's ``betaln(1e-3, 1e4)`` is 1e-11 off); directly,
    with SciPy's ``betaln``, below."""
    large = a + b >= 100
    s, t = np.where(large, a, 50.0), np.where(large, b, 50.0)
    # y and q, not p - x: where x is near 1 (t small), 1 - p has lost the digits of q
    mode = s * _log_ratio_excess(x, s / (s + t)) + t * _log_ratio_excess(1 - x, t / (s + t))
    mode += 0.5 * (np.log(s) + np.log(t) - np.log(s + t) - np.log(2 * np.pi))
    mode += stirling_remainder(s + t) - stirling_remainder(s) - stirling_remainder(t) - np.log(s)
    direct = sc.xlogy(a, x) + sc.xlog1py(b, -x) - np.log(a) - sc.betaln(a, b)
    return np.where(large, mode, direct)


# B₂, B₄, ..., B₁₆: the asymptotic series ψ(x) ~ ln x - 1/(2x) - Σ B₂ₖ/(2k x²ᵏ), whose next
# term at x >= 10 is 3e-18 (B₁₈/(18 x¹⁸))
BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_ASYMPTOTIC = 10.0


def log1p_minus(u):
    """``L(u) = log(1 + u) - u`` for ``u > -1``, relatively accurate: for ``|u| <= 0.2``
    by the series in ``w = u/(2 + u)``, ``log(1 + u) = 2 Σ w^{2k+1}/(2k + 1)`` and
    ``u = 2w/(1 - w)``, so ``L = 2 Σₖ₌₁ w^{2k+1}/(2k + 1) - 2w²/(1 - w)`` (``|w| <= 1/9``);
    beyond, directly (at most 11 ulp lost)."""
    small = np.abs(u) <= 0.2
    w = np.where(small, u, 0.0) / (2 + np.where(small, u, 0.0))
    w2 = w * w
    series = 0.0 * w
    for k in range(8, 0, -1):  # (1/81)^8 < 1e-15, times w³
        series = series * w2 + 1 / (2 * k + 1)
    near = 2 * w * w2 * series - 2 * w2 / (1 - w)
    with np.errstate(invalid="ignore", divide="ignore"):
        far = np.log1p(u) - u
    return np.where(small, near, far)


def stirling_remainder(a):
    """``μ(a) = log Γ(a) - (a - ½) log a + a - ½ log 2π``."""
    large = a >= _ASYMPTOTIC
    big = np.where(large, a, _ASYMPTOTIC)
    series = 0.0 * big
    for k in range(len(BERNOULLI), 0, -1):
        series = series / (big * big) + BERNOULLI[k - 1] / (2 * k * (2 * k - 1))
    small = np.where(large, 1.0, a)
    direct = sc.gammaln(small) - (small - 0.5) * np.log(small) + small - _HALF_LOG_TWO_PI
    return np.where(large, series / big, direct)


def _digamma_difference(s, d):
    """``ψ(s + d) - ψ(s)`` (``s, s + d > 0``), with full relative accuracy where ``d`` is
    small beside ``s`` too (the plain difference cancels: ψ(1e4 + 1e-3) - ψ(1e4) lost 8
    digits). Both arguments are shifted up to 10 by ``ψ(x) = ψ(x + 1) - 1/x`` (the terms
    ``d/((s+j)(s+d+j))`` all have the sign of the difference: no cancellation), then the
    asymptotic series is differenced term by term, each difference by ``log1p`` and
    ``expm1``. A few passes over the arrays (a Taylor series in ``d`` took 40 polygamma
    calls, 80% of a t quantile's shape gradient)."""
    s, d = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(d, np.float64))
    shift = np.maximum(np.ceil(_ASYMPTOTIC - np.minimum(s, s + d)), 0)
    total = np.zeros(s.shape)
    for j in range(int(shift.max(initial=0))):
        total += np.where(j < shift, d / ((s + j) * (s + d + j)), 0.0)
    x = s + shift
    r = d / x
    log_ratio = np.log1p(r)  # ln((x + d)/x)
    total += log_ratio + d / (2 * x * (x + d))
    power = np.ones(s.shape)
    for k, bernoulli in enumerate(BERNOULLI, start=1):
        power = power / (x * x)
        total -= bernoulli / (2 * k) * power * np.expm1(-2 * k * log_ratio)
    return total


def _series(a, x):
    """``Σ cₙ`` and ``Σ cₙ' / Σ cₙ`` for the series of ``P``: the sum, and the ``a``-derivative
    of its log, less the prefactor's."""
    total, total_d = np.ones_like(x), np.zeros_like(x)
    term, ratio = np.ones_like(x), np.zeros_like(x)  # cₙ and cₙ'/cₙ
    active = np.arange(x.size)
    for n in range(1, MAX_TERMS):
        if active.size == 0:
            break
        an = a[active] + n
        term[active] *= x[active] / an
        ratio[active] -= 1 / an
        step, step_d = term[active], term[active] * ratio[active]
        total[active] += step
        total_d[active] += step_d
        done = (step <= _EPS * total[active]) & (np.abs(step_d) <= _EPS * np.abs(total_d[active]))
        active = active[~done]
    result = total_d / total
    result[active] = np.nan  # not converged
    return total, result


def _fraction(a, x):
    """``h`` and ``h'/h`` for Legendre's continued fraction of ``Q`` (modified Lentz, with the
    ``a``-derivatives of every quantity carried alongside)."""
    b = x + 1 - a
    c, c_d = np.full_like(x, 1 / _TINY), np.zeros_like(x)
    d, d_d = 1 / b, 1 / b**2  # b' = -1
    h, h_d = d.copy(), d_d.copy()
    active = np.arange(x.size)
    for i in range(1, MAX_TERMS):
        if active.size == 0:
            break
        aa = a[active]
        an, an_d = -i * (i - aa), float(i)
        b = x[active] + 2 * i + 1 - aa
        c0, c0_d, d0, d0_d = c[active], c_d[active], d[active], d_d[active]
        den = an * d0 + b
        den_d = an_d * d0 + an * d0_d - 1
        cn = b + an / c0
        cn_d = -1 + an_d / c0 - an * c0_d / c0**2
        dn, dn_d = 1 / den, -den_d / den**2
        delta, delta_d = dn * cn, dn_d * cn + dn * cn_d
        h0, h0_d = h[active], h_d[active]
        h[active] = h0 * delta
        h_d[active] = h0_d * delta + h0 * delta_d
        c[active], c_d[active], d[active], d_d[active] = cn, cn_d, dn, dn_d
        change_d = np.abs(h_d[active] - h0_d)
        done = (np.abs(delta - 1) <= _EPS) & (change_d <= _EPS * np.abs(h_d[active]))
        active = active[~done]
    result = h_d / h
    result[active] = np.nan
    return h, result


def _beta_fraction(a, b, x):
    """``(h, h_a, h_b)``: the continued fraction of ``I_x(a, b)`` (Numerical Recipes'
    ``betacf``, modified Lentz) with its derivatives in ``a`` and ``b`` carried alongside."""
    # d = 1 - (a+b) x/(a+1); c = 1
    d = 1 - (a + b) * x / (a + 1)
    d_a = -x * (1 - b) / (a + 1) ** 2
    d_b = -x / (a + 1)
    d = _away_from_zero(d)
    d, d_a, d_b = 1 / d, -d_a / d**2, -d_b / d**2
    c, c_a, c_b = np.ones_like(x), np.zeros_like(x), np.zeros_like(x)
    h, h_a, h_b = d.copy(), d_a.copy(), d_b.copy()
    state = [c, c_a, c_b, d, d_a, d_b]
    active = np.arange(x.size)
    for m in range(1, MAX_TERMS):
        if active.size == 0:
            break
        aa, bb, xx = a[active], b[active], x[active]
        cur = [s[active] for s in state]
        h0, h0_a, h0_b = h[active], h_a[active], h_b[active]
        # the even step: m (b - m) x / ((a - 1 + 2m)(a + 2m))
        p, q = aa - 1 + 2 * m, aa + 2 * m
        coef = m * (bb - m) * xx / (p * q)
        coef_a = -coef * (1 / p + 1 / q)
        coef_b = m * xx / (p * q)
        cur, fa, fa_a, fa_b = _lentz_step(cur, coef, coef_a, coef_b)
        # the odd step: -(a + m)(a + b + m) x / ((a + 2m)(a + 1 + 2m))
        r, s, t = aa + m, aa + bb + m, aa + 1 + 2 * m
        coef = -r * s * xx / (q * t)
        coef_a = coef * (1 / r + 1 / s - 1 / q - 1 / t)
        coef_b = coef / s
        cur, fb, fb_a, fb_b = _lentz_step(cur, coef, coef_a, coef_b)
        # the two factors of this round: their product and its derivatives
        f, f_a, f_b = fa * fb, fa_a * fb + fa * fb_a, fa_b * fb + fa * fb_b
        hn, hn_a, hn_b = h0 * f, h0_a * f + h0 * f_a, h0_b * f + h0 * f_b
        h[active], h_a[active], h_b[active] = hn, hn_a, hn_b
        for s_full, s_new in zip(state, cur):
            s_full[active] = s_new
        done = (
            (np.abs(hn - h0) <= _EPS * np.abs(hn))
            & (np.abs(hn_a - h0_a) <= _EPS * np.abs(hn_a))
            & (np.abs(hn_b - h0_b) <= _EPS * np.abs(hn_b))
        )
        active = active[~done]
    h[active] = np.nan
    return h, h_a, h_b


def _lentz_step(cur, coef, coef_a, coef_b):
    """One step of the modified Lentz method, ``d ← 1/(1 + coef d)``, ``c ← 1 + coef/c``,
    in dual numbers; returns the new state and the factor ``d c`` with its derivatives."""
    c, c_a, c_b, d, d_a, d_b = cur
    den = _away_from_zero(1 + coef * d)
    den_a = coef_a * d + coef * d_a
    den_b = coef_b * d + coef * d_b
    d, d_a, d_b = 1 / den, -den_a / den**2, -den_b / den**2
    cn = _away_from_zero(1 + coef / c)
    c_a = coef_a / c - coef * c_a / c**2
    c_b = coef_b / c - coef * c_b / c**2
    c = cn
    factor = d * c
    return [c, c_a, c_b, d, d_a, d_b], factor, d_a * c + d * c_a, d_b * c + d * c_b


def _away_from_zero(v):
    """Lentz's guard: a denominator that is exactly 0 becomes tiny."""
    return np.where(np.abs(v) < _TINY, _TINY, v)
