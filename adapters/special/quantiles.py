"""``gammaincinv``, ``betaincinv``: the inverses of the regularized incomplete gamma and beta
functions (the gamma and beta quantiles), differentiable in the probability to every order
by implicit differentiation, not in the shape parameters.

The slopes are powers of ``x`` and ``1 - x``, taken from their logarithms, which the forward
saves with full relative accuracy where ``x`` itself cannot carry it: ``log x`` where ``x``
underflows (from the series ``P(a, x) ~ x^a / Γ(a + 1)``, ``I_x(a, b) ~ x^a / (a B(a, b))``),
and ``log(1 - x)`` near ``x = 1`` from the complementary quantile ``betaincinv(b, a, 1 - y)``
(``1 - x`` from the rounded ``x`` had lost every digit at ``y = 1 - 1e-15``). In the rules
these logarithms are functions of the probability (``_log_end``) whose derivatives are
again in terms of them, so every order works.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

import jaxbridge as jb

from ._common import exact_floats
from ._fixed import held_fixed

_NO_SHAPE_DERIVATIVE = (
    "its derivative in the shape parameter needs that of the incomplete function in it, "
    "which has no closed form, and SciPy computes none"
)


def _probability(raw: np.ndarray) -> np.ndarray:
    """A probability in [0.05, 0.95]: away from the ends, where the quantile's slope blows up."""
    return 0.5 + 0.45 * raw


def _shape(raw: np.ndarray) -> np.ndarray:
    """A shape parameter in [1/2, 4]."""
    return 0.5 * 8.0 ** ((raw + 1) / 2)


class Gammaincinv(jb.Adapter):
    """``x`` with ``gammainc(a, x) = p``: the quantile of the gamma distribution of shape
    ``a`` (unit scale), as ``scipy.special.gammaincinv(a, p)``.

    ``a > 0``, ``0 <= p <= 1`` (``x = 0`` at ``p = 0``, ``inf`` at ``p = 1``); NaN outside,
    as SciPy gives. Values are SciPy's (Boost's algorithm), accurate to about 1e-14
    relative.

    Derivatives: in ``p``, ``dx/dp = Γ(a) x^{1-a} e^x`` (the reciprocal of the gamma
    density at ``x``), computed in logs and differentiable in turn, so every order works,
    also where ``x`` underflows (``a = 1/2``, ``p = 1e-300``: ``x = erfinv(p)^2`` is 0 in
    float64, ``dx/dp = π p / 2``); in ``a``, a ``TypeError`` (no exact method). ``log Γ(a)``
    (SciPy's ``gammaln``) and ``log x`` are saved by the forward as constants of the rules:
    ``a`` is held fixed.
    """

    signature = "(),()->()"
    vectorized = True
    domains = {"a": _shape, "p": _probability}

    def residual_specs(self, a, p):
        return (jax.ShapeDtypeStruct((), jb.result_dtype(a, p)),) * 2  # log Γ(a), log x

    def __call__(self, a, p):
        return super().__call__(held_fixed("gammaincinv", "a", _NO_SHAPE_DERIVATIVE, a), p)

    def output_specs(self, a, p):
        return jax.ShapeDtypeStruct(jnp.broadcast_shapes(a.shape, p.shape), jb.result_dtype(a, p))

    def forward(self, a, p):
        dtype = jb.result_dtype(a, p)
        x = scipy.special.gammaincinv(*exact_floats(a, p)).astype(dtype)
        a64, p64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(p, np.float64))
        log_gamma = scipy.special.gammaln(a64)
        with np.errstate(divide="ignore", invalid="ignore"):
            # where x underflows, P(a, x) = x^a / Γ(a + 1) (1 + O(x)) gives log x
            series = (np.log(p64) + scipy.special.gammaln(a64 + 1)) / a64
            log_x = np.where(x < np.finfo(dtype).tiny, series, np.log(x.astype(np.float64)))
        return x, log_gamma.astype(dtype), log_x.astype(dtype)

    def _slope(self, res):
        a, p, x, log_gamma, log_x = res
        a = a.astype(x.dtype)  # an integer a would reach the rules' products as float0
        # the saved logs are constants to the rules (stop_gradient says so): log Γ(a) as a is
        # held fixed, and log x's derivative comes from _log_end's rule, through p
        log_gamma, log_x = jax.lax.stop_gradient((log_gamma, log_x))
        constants = (a, log_gamma, x)
        log_x = _log_end(_gamma_log_slope, 0, (log_x,), constants, _unless(a == 1, p))
        return jnp.exp(_gamma_log_slope((log_x,), *constants))

    def pullback(self, res, g):
        return None, g * self._slope(res)  # a: guarded by held_fixed, never reached

    def pushforward(self, res, tangents):
        _, dp = tangents
        return None if dp is None else dp * self._slope(res)


class Betaincinv(jb.Adapter):
    """``x`` with ``betainc(a, b, x) = y``: the quantile of the beta distribution, as
    ``scipy.special.betaincinv(a, b, y)``.

    ``a, b > 0``, ``0 <= y <= 1``; NaN outside, as SciPy gives. Values are SciPy's (Boost's
    algorithm).

    Derivatives: in ``y``, ``dx/dy = B(a, b) x^{1-a} (1-x)^{1-b}`` (the reciprocal of the
    beta density at ``x``), every order, from ``log x`` and ``log(1 - x)`` saved with full
    relative accuracy: ``1 - x`` near ``x = 1`` is the complementary quantile
    ``betaincinv(b, a, 1 - y)``, not 1 minus the rounded ``x``; in ``a`` or ``b``, a
    ``TypeError`` (no exact method). ``log B(a, b)`` is SciPy's ``betaln`` (JAX's is off by
    up to 1e-7 relative).
    """

    signature = "(),(),()->()"
    vectorized = True
    domains = {"a": _shape, "b": _shape, "y": _probability}

    def residual_specs(self, a, b, y):
        return (jax.ShapeDtypeStruct((), jb.result_dtype(a, b, y)),) * 3  # log B, log x, log(1-x)

    def __call__(self, a, b, y):
        a = held_fixed("betaincinv", "a", _NO_SHAPE_DERIVATIVE, a)
        b = held_fixed("betaincinv", "b", _NO_SHAPE_DERIVATIVE, b)
        return super().__call__(a, b, y)

    def output_specs(self, a, b, y):
        shape = jnp.broadcast_shapes(a.shape, b.shape, y.shape)
        return jax.ShapeDtypeStruct(shape, jb.result_dtype(a, b, y))

    def forward(self, a, b, y):
        dtype = jb.result_dtype(a, b, y)
        x = scipy.special.betaincinv(*exact_floats(a, b, y)).astype(dtype)
        a64, b64, y64 = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, y)))
        log_beta = scipy.special.betaln(a64, b64)
        x64, tiny = x.astype(np.float64), np.finfo(dtype).tiny
        # 1 - x: from the rounded x where x <= 1/2 (no digit lost), else the quantile of the
        # mirrored distribution, I_{1-x}(b, a) = 1 - y (1 - y is exact for y >= 1/2)
        upper = x64 > 0.5
        complement = np.array(1 - x64)
        complement[upper] = scipy.special.betaincinv(b64[upper], a64[upper], 1 - y64[upper])
        with np.errstate(divide="ignore", invalid="ignore"):
            log_x = _log_or_series(x64, y64, a64, log_beta, tiny)
            log_complement = _log_or_series(complement, 1 - y64, b64, log_beta, tiny)
        return x, log_beta.astype(dtype), log_x.astype(dtype), log_complement.astype(dtype)

    def _slope(self, res):
        a, b, y, x, log_beta, log_x, log_complement = res
        a, b = a.astype(x.dtype), b.astype(x.dtype)  # integers would reach the rules as float0
        # constants to the rules, as in Gammaincinv._slope: the logs' derivatives come from
        # _log_end's rule, through y
        log_beta, log_x, log_complement = jax.lax.stop_gradient((log_beta, log_x, log_complement))
        saved, constants = (log_x, log_complement), (a, b, log_beta)
        log_x = _log_end(_beta_log_slope, 0, saved, constants, _unless(a == 1, y))
        log_complement = _log_end(_beta_log_slope, 1, saved, constants, _unless(b == 1, y))
        return jnp.exp(_beta_log_slope((log_x, log_complement), *constants))

    def pullback(self, res, g):
        return None, None, g * self._slope(res)  # a, b: guarded by held_fixed

    def pushforward(self, res, tangents):
        *_, dy = tangents
        return None if dy is None else dy * self._slope(res)


def _log_or_series(x, y, a, log_beta, tiny):
    """``log x`` for the beta quantile, from ``I_x(a, b) = x^a / (a B(a, b)) (1 + O(x))``
    where ``x`` underflows (``x`` is ``1 - x`` and ``y`` is ``1 - y`` with ``a`` and ``b``
    swapped: ``B`` is symmetric)."""
    series = (np.log(y) + np.log(a) + log_beta) / a
    return np.where(x < tiny, series, np.log(x))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _log_end(log_slope, end: int, saved: tuple, constants: tuple, p: jax.Array) -> jax.Array:
    """``saved[end]``, computed on the host: ``log x`` (``end = 0``) or ``log(1 - x)``
    (``end = 1``), as a function of the probability ``p``. Its derivative is
    ``± dx/dp / x`` (``∓ ... / (1 - x)``) = ``± exp(log_slope(logs, *constants) - saved[end])``,
    where ``logs`` are all of ``saved`` as such functions again: derivatives of every order,
    in terms of the logarithms alone. The exponent is the slope's own plus one logarithm, so
    that its rounding is the slope's (a sum such as ``(1 - a) r + slope`` then keeps its
    relative accuracy where it cancels). ``constants`` have no derivative here (the shapes
    are held fixed; ``x`` in ``_gamma_log_slope`` is the bridged output, differentiated
    through its own rule)."""
    return saved[end]


@_log_end.defjvp
def _log_end_jvp(log_slope, end, primals, tangents):
    saved, constants, p = primals
    dp = tangents[2]
    logs = tuple(_log_end(log_slope, i, saved, constants, p) for i in range(len(saved)))
    rate = jnp.exp(log_slope(logs, *constants) - logs[end])
    # the primal output is the function again, so that it too is differentiated by this rule
    return logs[end], (rate if end == 0 else -rate) * dp


def _gamma_log_slope(logs, a, log_gamma, x):
    """``log(dx/dp) = log Γ(a) + (1 - a) log x + x``."""
    (log_x,) = logs
    return log_gamma + _power(1 - a, log_x) + x


def _beta_log_slope(logs, a, b, log_beta):
    """``log(dx/dy) = log B(a, b) + (1 - a) log x + (1 - b) log(1 - x)``."""
    log_x, log_complement = logs
    return log_beta + _power(1 - a, log_x) + _power(1 - b, log_complement)


def _unless(fixed: jax.Array, p: jax.Array) -> jax.Array:
    """``p``, with no derivative where ``fixed``: a logarithm whose power is 0 there
    (``x^0``) is cut from ``p`` at its input, so that its derivative, infinite at the ends
    (``log 0``), is never multiplied by a zero cotangent (which gives NaN in reverse mode)."""
    return jnp.where(fixed, jax.lax.stop_gradient(p), p)


def _power(c: jax.Array, log_x: jax.Array) -> jax.Array:
    """``c log x``, and exactly 0 where ``c = 0`` (``x^0`` is 1 even at ``x = 0``, where
    ``log x`` is ``-inf``), with derivatives 0 there too."""
    return jnp.where(c == 0, 0.0, c * log_x)


gammaincinv = Gammaincinv()
betaincinv = Betaincinv()

__all__ = ["Betaincinv", "Gammaincinv", "betaincinv", "gammaincinv"]
