"""The six families, each described once: the shape names, the standardized log-density in
JAX (for the derivatives in ``x``, every order), its normalizing constant on the host (SciPy's
value), and the derivatives of the standardized cdf in the shapes on the host (from
``_shape_derivatives``). The adapters in ``_function.py`` read nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special as sc
from jax.scipy.special import gammaln, xlog1py, xlogy

from .._shape_derivatives import betainc_dab, gammainc_da
from . import _student_t
from ._fisher_f import shape_derivatives as f_shape_derivatives
from ._student_t import LARGE_DF, df_derivative


@dataclass(frozen=True)
class ArrayOps:
    """The array functions the log-kernels use, JAX's or NumPy's: each kernel is written once,
    evaluated by the host for its value (float64, as the other host values) and traced in JAX
    for its derivatives."""

    log: Callable
    log1p: Callable
    xlogy: Callable
    xlog1py: Callable
    where: Callable
    isinf: Callable


JAX_OPS = ArrayOps(jnp.log, jnp.log1p, xlogy, xlog1py, jnp.where, jnp.isinf)
HOST_OPS = ArrayOps(np.log, np.log1p, sc.xlogy, sc.xlog1py, np.where, np.isinf)


@dataclass(frozen=True)
class Family:
    """One family of distributions, standardized (``loc = 0``, ``scale = 1``).

    ``kernel(ops, shapes, z)``: the log-density less its normalizing constant, ``-inf``
    outside the support, with ``ops`` JAX's or NumPy's (``log_kernel``, ``host_log_kernel``);
    ``log_normalizer(shapes)``: that constant in JAX (its derivatives are used) and
    ``host_log_normalizer`` the same on the host (SciPy's ``betaln`` is exact where JAX's loses
    up to 1e-12 relative); ``cdf_shape_gradient(shapes, z)``: ``∂F/∂θ`` for each shape, NumPy
    in and out.
    """

    name: str
    shapes: tuple[str, ...]
    kernel: Callable[..., Any]
    log_normalizer: Callable[..., jax.Array]
    host_log_normalizer: Callable[..., np.ndarray]
    cdf_shape_gradient: Callable[..., tuple[np.ndarray, ...]]
    support: tuple[float, float]

    def log_kernel(self, *shapes_z: jax.Array) -> jax.Array:
        return self.kernel(JAX_OPS, *shapes_z)

    def host_log_density(self, *shapes_z: np.ndarray) -> np.ndarray:
        """The standardized log-density at ``z`` (the last argument), NumPy, float64."""
        with np.errstate(all="ignore"):
            kernel = self.kernel(HOST_OPS, *shapes_z)
            return kernel - self.host_log_normalizer(*shapes_z[:-1])


def _inside(ops, z, low, high, kernel):
    """``kernel(z)`` on ``low < z < high`` and ``-inf`` elsewhere, with derivatives that stay
    finite outside (the kernel is evaluated at a point inside there)."""
    inside = (z > low) & (z < high)
    safe = ops.where(inside, z, (0.5 if high == 1 else 1.0))
    return ops.where(inside, kernel(safe), -np.inf)


# --- gamma, chi2, invgamma: the incomplete gamma function


def _gamma_gradient(a, z):
    return (gammainc_da(a, np.maximum(z, 0)),)


def _chi2_gradient(k, z):
    return (0.5 * gammainc_da(k / 2, np.maximum(z, 0) / 2),)


def _invgamma_gradient(a, z):
    with np.errstate(divide="ignore"):
        return (-gammainc_da(a, 1 / np.maximum(z, 0)),)


# --- beta, t, f: the incomplete beta function


def _beta_gradient(a, b, z):
    return betainc_dab(a, b, np.clip(z, 0, 1))


def _beta_parts(a, b, x, y):
    """``∂I_x(a, b)/∂a``, ``∂I_x(a, b)/∂b`` and the beta density at ``x``, from ``x`` and
    ``y = 1 - x`` each computed without rounding off the other (the smaller one goes to
    the continued fraction)."""
    a, b, x, y = np.broadcast_arrays(a, b, x, y)
    lower = x <= 0.5
    upper = ~lower
    i_a, i_b = np.empty(x.shape), np.empty(x.shape)
    i_a[lower], i_b[lower] = betainc_dab(a[lower], b[lower], x[lower])
    db_u, da_u = betainc_dab(b[upper], a[upper], y[upper])  # I_x(a, b) = 1 - I_y(b, a)
    i_a[upper], i_b[upper] = -da_u, -db_u
    with np.errstate(divide="ignore", invalid="ignore"):
        density = np.exp(sc.xlogy(a - 1, x) + sc.xlogy(b - 1, y) - sc.betaln(a, b))
    return i_a, i_b, density


def _t_gradient(df, z):
    """``F(z) = ½ I_x(ν/2, ½)`` for ``z < 0``, ``1 - ½ I_x(ν/2, ½)`` for ``z > 0``, with
    ``x = ν/(ν + z²)``; ``∂x/∂ν = x y/ν``, ``y = z²/(ν + z²) = 1 - x``. For
    ``ν >= LARGE_DF``, where the two terms cancel, by quadrature (``_student_t``); 0 at
    ``ν = inf`` (the normal's limit)."""
    with np.errstate(all="ignore"):
        df, z = np.broadcast_arrays(df, z)
        s = -np.abs(z)  # ∂F/∂ν at -|z|; at |z| it is the negative (F(z) = 1 - F(-z))
        x, y = df / (df + s * s), s * s / (df + s * s)
        x = np.where(np.isinf(s), 0.0, x)
        y = np.where(np.isinf(s), 1.0, y)
        i_a, _, density = _beta_parts(df / 2, np.full_like(df, 0.5), x, y)
        tail = np.array(0.5 * (0.5 * i_a + density * x * y / df))  # ∂/∂ν of ½ I_x(ν/2, ½)
        large = (df >= LARGE_DF) & np.isfinite(df) & (s < 0) & np.isfinite(s)
        tail[large] = df_derivative(df[large], -s[large])
        grad = np.where(z < 0, tail, -tail)
        edge = np.where(np.isnan(df) | (df <= 0), np.nan, 0.0)
        grad = np.where((z == 0) | np.isinf(z) | np.isinf(df), edge, grad)
    return (grad,)


def _median_series(terms: int) -> np.ndarray:
    """The t quantile about the median, ``z = Σₖ cₖ(r) w^{2k+1}`` in ``w = (F(z) - ½)/f(0)``
    and ``r = 1/ν``: row ``k`` holds ``cₖ``'s coefficients, lowest power of ``r`` first. From
    ``dz/dw = f(0)/f(z) = (1 + r z²)^{(ν+1)/2}``, that is ``(1 + r z²) z'' = (1 + r) z z'²``,
    whose ``w^{n-2}`` terms give ``aₙ`` (of ``wⁿ``) from the lower ones."""
    poly = np.polynomial.polynomial
    a = {1: np.ones(1)}
    for n in range(3, 2 * terms + 2, 2):
        total = np.zeros(1)
        for i in a:  # a_i w^i · a_j w^j · a_k w^k with i + j + k = n
            for j in a:
                k = n - i - j
                if k in a:  # (1 + r) j k a_i a_j a_k - r k(k - 1) a_i a_j a_k
                    product = poly.polymul(a[i], poly.polymul(a[j], a[k]))
                    total = poly.polyadd(total, k * poly.polymul([j, j - k + 1], product))
        a[n] = total / (n * (n - 1))
    table = np.zeros((terms + 1, terms + 1))
    for k, n in enumerate(sorted(a)):
        table[k, : a[n].size] = a[n]
    return table


_MEDIAN_SERIES = _median_series(6)
"""To ``w¹³``: within 2e-5 of the quantile (one step then converges, below) for ``|F - ½| <= ¼``
at ``ν >= 1``, for 99.8% of the benchmark's points (ν from ½ to 50), 94% at ``ν = 0.05``."""


def _t_step(v, offset, s, log_f0):
    """``s`` corrected by one third-order step towards ``F(z) - ½ = offset`` (the inverse
    function's Taylor series to ``δ³``), and the Newton step ``h``. ``F(s) - ½ =
    sign(s) ½ I_y(½, ν/2)``, ``y = s²/(ν + s²)`` (``1 - I_x(ν/2, ½)`` from ``x = 1 - y`` where
    ``y > ½``), accurate relative to ``offset`` (no cancellation against ½)."""
    square = s * s
    total = v + square
    x, y = v / total, square / total  # neither rounded off the other
    half_mass = np.empty_like(s)
    low = y <= 0.5
    half_mass[low] = sc.betainc(0.5, v[low] / 2, y[low])
    high = ~low  # NaN included, as np.where sent it to this branch
    half_mass[high] = 1 - sc.betainc(v[high] / 2, 0.5, x[high])
    # f(s) = f(0) (1 + s²/ν)^{-(ν+1)/2}, by log1p: a power of 1 + s²/ν rounded loses ν ulp
    density = np.exp(log_f0 - (v + 1) / 2 * np.log1p(square / v))
    h = (offset - np.copysign(half_mass, s) / 2) / density
    slope = -(v + 1) * s / total  # f'/f
    curvature = -(v + 1) * (v - square) / (total * total)  # (f'/f)'
    return s + h * (1 + h * (-slope / 2 + h * (2 * slope * slope - curvature) / 6)), h


def t_quantile(kind: str, df: np.ndarray, q: np.ndarray) -> np.ndarray:
    """SciPy's ``t.ppf(q, df)`` (``kind`` ``"ppf"``) or ``t.isf(q, df)`` (``"isf"``),
    accurate relative to the quantile near the median, where SciPy's is accurate in absolute
    terms only (at ν = 4, ``t.ppf(0.5 + 1e-6)`` is 3.8e-5 relative off, ``t.ppf(0.5 + 1e-9)``
    100%, against mpmath).

    Where ``|F - ½| <= ¼`` (and ``0 < ν < inf``): ``_MEDIAN_SERIES``, then one ``_t_step``,
    kept where that step moved it by at most 2e-5 relative (the step's error is then below
    1e-20: the result is as accurate as the incomplete beta function, 6e-15 relative at worst
    measured against mpmath over ν from 0.05 to 1e8, 1e-13 at ν = 0.01); elsewhere there,
    SciPy's quantile and one step.
    SciPy's is not computed at the points the series serves (its ``stdtrit`` is the cost: a
    step is one incomplete beta function). Farther out SciPy's values, bit for bit:
    ``stdtrit`` (without ``t.ppf``'s argument reduction), ``∓inf`` at ``q`` 0 and 1, NaN
    elsewhere, and ``+0`` at the median (SciPy's ``* scale + loc`` turns ``isf``'s ``-0``
    into it). At ν = inf SciPy's is the normal's, ``ndtri``, relatively accurate already."""
    df, q = np.broadcast_arrays(np.asarray(df, np.float64), np.asarray(q, np.float64))
    shape, df, q = q.shape, df.ravel(), q.ravel()
    z = np.empty(q.shape)
    with np.errstate(all="ignore"):
        offset = q - 0.5 if kind == "ppf" else 0.5 - q  # F(z) - ½, exact
        near = np.flatnonzero((np.abs(offset) <= 0.25) & (df > 0) & (df < np.inf))
        v, o = df[near], offset[near]
        log_f0 = np.log(sc.poch(0.5 * v, 0.5)) - 0.5 * (np.log(v) + np.log(np.pi))
        w, r = o / np.exp(log_f0), 1 / v
        square, series = w * w, 0.0
        for k in range(len(_MEDIAN_SERIES) - 1, -1, -1):  # cₖ has degree k in r (no BLAS)
            coefficient = _MEDIAN_SERIES[k, k]
            for c in reversed(_MEDIAN_SERIES[k, :k]):
                coefficient = coefficient * r + c
            series = series * square + coefficient
        s = w * series
        refined, h = _t_step(v, o, s, log_f0)
        converged = (np.abs(h) <= 2e-5 * np.abs(s)) & np.isfinite(refined)
        z[near] = refined + 0.0
        scipy_points = np.ones(q.shape, bool)
        scipy_points[near[converged]] = False
        z[scipy_points] = _scipy_t_quantile(kind, df[scipy_points], q[scipy_points])
        retry = near[~converged]
        refined, _ = _t_step(v[~converged], o[~converged], z[retry], log_f0[~converged])
        z[retry[np.isfinite(refined)]] = refined[np.isfinite(refined)]
    return z.reshape(shape)


def _scipy_t_quantile(kind: str, df: np.ndarray, q: np.ndarray) -> np.ndarray:
    """SciPy's ``t.ppf`` or ``t.isf`` values, 1-d (see ``t_quantile``)."""
    z = np.asarray(sc.stdtrit(df, q))
    z = (-z if kind == "isf" else z) + 0.0
    valid = df > 0
    z = np.where(valid & (0 < q) & (q < 1), z, np.nan)
    below, above = (q == 0, q == 1) if kind == "ppf" else (q == 1, q == 0)
    z[valid & below] = -np.inf
    z[valid & above] = np.inf
    return z


F_LARGE_DF = 100.0
"""From here on (in ``dfn`` or ``dfd``) the f's shape derivatives are a quadrature
(``_fisher_f``): the direct form's two terms cancel as the degrees of freedom grow (against
mpmath: 2e-13 relative at 100, 1e-11 at 300, 6e-10 at 1e3, 1e-5 at 1e5); the quadrature is
4e-15 at worst there and 6 times slower."""


def _f_gradient(dfn, dfd, z):
    """``F(z) = I_x(d₁/2, d₂/2)``, ``x = d₁z/(d₁z + d₂)``: ``∂x/∂d₁ = x y/d₁``,
    ``∂x/∂d₂ = -x y/d₂``, ``y = d₂/(d₁z + d₂) = 1 - x``; by quadrature from ``F_LARGE_DF``
    on (``_fisher_f``)."""
    with np.errstate(all="ignore"):
        dfn, dfd, z = np.broadcast_arrays(dfn, dfd, np.maximum(z, 0))
        x, y = dfn * z / (dfn * z + dfd), dfd / (dfn * z + dfd)
        x = np.where(np.isinf(z), 1.0, x)
        y = np.where(np.isinf(z), 0.0, y)
        i_a, i_b, density = _beta_parts(dfn / 2, dfd / 2, x, y)
        d_dfn = np.array(0.5 * i_a + density * x * y / dfn)
        d_dfd = np.array(0.5 * i_b - density * x * y / dfd)
        ends = (z == 0) | np.isinf(z)
        invalid = np.isnan(dfn) | np.isnan(dfd) | (dfn <= 0) | (dfd <= 0)
        invalid |= np.isinf(dfn) | np.isinf(dfd)  # SciPy's f is NaN there
        large = (np.maximum(dfn, dfd) >= F_LARGE_DF) & ~invalid & ~ends & ~np.isnan(z)
        d_dfn[large], d_dfd[large] = f_shape_derivatives(dfn[large], dfd[large], z[large])
        edge = np.where(invalid, np.nan, 0.0)
        d_dfn, d_dfd = np.where(ends, edge, d_dfn), np.where(ends, edge, d_dfd)
        return np.where(invalid, np.nan, d_dfn), np.where(invalid, np.nan, d_dfd)


def _f_log_kernel(ops, m, n, z):
    return m / 2 * ops.log(m / n) + ops.xlogy(m / 2 - 1, z) - (m + n) / 2 * ops.log1p(m * z / n)


def _log_beta(a, b):
    return gammaln(a) + gammaln(b) - gammaln(a + b)


FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family(
            "gamma",
            ("a",),
            lambda o, a, z: _inside(o, z, 0, np.inf, lambda z: o.xlogy(a - 1, z) - z),
            gammaln,
            sc.gammaln,
            _gamma_gradient,
            (0, np.inf),
        ),
        Family(
            "chi2",
            ("df",),
            lambda o, k, z: _inside(o, z, 0, np.inf, lambda z: o.xlogy(k / 2 - 1, z) - z / 2),
            lambda k: gammaln(k / 2) + k / 2 * jnp.log(2.0),
            lambda k: sc.gammaln(k / 2) + k / 2 * np.log(2.0),
            _chi2_gradient,
            (0, np.inf),
        ),
        Family(
            "invgamma",
            ("a",),
            lambda o, a, z: _inside(o, z, 0, np.inf, lambda z: -(a + 1) * o.log(z) - 1 / z),
            gammaln,
            sc.gammaln,
            _invgamma_gradient,
            (0, np.inf),
        ),
        Family(
            "beta",
            ("a", "b"),
            lambda o, a, b, z: _inside(
                o, z, 0, 1, lambda z: o.xlogy(a - 1, z) + o.xlog1py(b - 1, -z)
            ),
            _log_beta,
            sc.betaln,
            _beta_gradient,
            (0, 1),
        ),
        Family(
            "t",
            ("df",),
            _student_t.log_kernel,
            _student_t.log_normalizer,
            _student_t.host_log_normalizer,
            _t_gradient,
            (-np.inf, np.inf),
        ),
        Family(
            "f",
            ("dfn", "dfd"),
            lambda o, m, n, z: _inside(o, z, 0, np.inf, lambda z: _f_log_kernel(o, m, n, z)),
            lambda m, n: _log_beta(m / 2, n / 2),
            lambda m, n: sc.betaln(m / 2, n / 2),
            _f_gradient,
            (0, np.inf),
        ),
    )
}
