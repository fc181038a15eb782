"""``gammaincinv``, ``betaincinv``: the inverses of the regularized incomplete gamma and beta
functions (the gamma and beta quantiles), differentiable in the probability to every order
and in the shape parameters to first order, exactly, by implicit differentiation.

Both derivatives come from one relation: ``F(θ, x) = p`` gives ``dx = (dp - F_θ·dθ)/f(x)``,
with ``1/f`` the slope ``dx/dp`` and ``F_θ = ∂F/∂θ`` the incomplete function's exact
derivatives in its shapes, the bridged ``cdf_shape_gradient`` that ``stats``' ``ppf`` and
``isf`` use too. The slopes are powers of ``x`` and ``1 - x``, taken from their logarithms,
which the forward saves with full relative accuracy where ``x`` itself cannot carry it:
``log x`` where ``x`` underflows (from the series ``P(a, x) ~ x^a / Γ(a + 1)``,
``I_x(a, b) ~ x^a / (a B(a, b))``), and ``log(1 - x)`` near ``x = 1`` from the complementary
quantile ``betaincinv(b, a, 1 - y)`` (``1 - x`` from the rounded ``x`` had lost every digit
at ``y = 1 - 1e-15``). In the rules these logarithms are functions of the probability and the
shapes (``_log_end``) whose derivatives are again in terms of them, so every order works in
the probability, and the mixed second derivatives in a shape and the probability too; a
second derivative in the shapes is NaN, as ``stats``' (the shape gradient's own rule).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
from jax.custom_derivatives import SymbolicZero
from jax.scipy.special import gammaln

import jaxbridge as jb

from .._shared._distributions._function import cdf_shape_gradient
from .._shared._host_values import host_factor, host_valued
from .._shared._rules import times, total
from ._common import exact_floats


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
    float64, ``dx/dp = π p / 2``); in ``a``, ``∂x/∂a = -(∂P/∂a) dx/dp`` with the exact
    ``∂P/∂a`` (first order; the mixed ``∂²x/∂a∂p`` exact, ``∂²x/∂a²`` NaN). An integer ``a``
    is held fixed. ``log x`` and the slope ``dx/dp`` (in float64, then rounded: in float32 the
    terms of its logarithm cancel) are saved by the forward.
    """

    signature = "(),()->()"
    vectorized = True
    domains = {"a": _shape, "p": _probability}

    def residual_specs(self, a, p):
        return (jax.ShapeDtypeStruct((), jb.result_dtype(a, p)),) * 3  # log x, log dx/dp, dx/dp

    def output_specs(self, a, p):
        return jax.ShapeDtypeStruct(jnp.broadcast_shapes(a.shape, p.shape), jb.result_dtype(a, p))

    def forward(self, a, p):
        dtype = jb.result_dtype(a, p)
        x = scipy.special.gammaincinv(*exact_floats(a, p)).astype(dtype)
        a64, p64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(p, np.float64))
        log_gamma = scipy.special.gammaln(a64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # where x underflows, P(a, x) = x^a / Γ(a + 1) (1 + O(x)) gives log x
            series = (np.log(p64) + scipy.special.gammaln(a64 + 1)) / a64
            log_x = np.where(x < np.finfo(dtype).tiny, series, np.log(x.astype(np.float64)))
            # the slope at the unrounded quantile, in float64 (in float32 its terms cancel)
            full = scipy.special.gammaincinv(a64, p64)
            log_full = np.where(full < np.finfo(np.float64).tiny, series, np.log(full))
            log_slope = log_gamma + _host_power(1 - a64, log_full) + full
        return x, *(v.astype(dtype) for v in (log_x, log_slope, np.exp(log_slope)))

    def _rates(self, res):
        """``dx/dp`` and ``[∂x/∂a]`` (``[]`` for an integer ``a``, held fixed)."""
        a, p, x, log_x, log_slope, slope = res
        free = jnp.issubdtype(a.dtype, jnp.floating)
        a = a.astype(x.dtype)  # an integer a would reach the rules' products as float0
        # log x's derivatives come from _log_end's rule, through p and a (stop_gradient: a
        # constant of the rules); the slope's value is the host's, log Γ(a) gives its ψ(a)
        log_x = jax.lax.stop_gradient(log_x)
        constants = (slope, log_slope, a, gammaln(a), x)
        shapes = (a,) if free else ()
        unit = a == 1
        log_x = _log_end(_GAMMA, 0, (log_x,), constants, _unless(unit, p), _unless(unit, shapes))
        slope, _ = _slope(_GAMMA, (log_x,), constants)
        gradient = _gamma_cdf_gradient((log_x,), *constants[2:]) if free else ()
        return slope, [-g * slope for g in gradient]

    def pullback(self, res, g):
        slope, (da,) = _padded(self._rates(res), 1)
        return None if da is None else times(g, da), times(g, slope)

    def pushforward(self, res, tangents):
        slope, shapes = _padded(self._rates(res), 1)
        return _total_product(tangents, (*shapes, slope))


class Betaincinv(jb.Adapter):
    """``x`` with ``betainc(a, b, x) = y``: the quantile of the beta distribution, as
    ``scipy.special.betaincinv(a, b, y)``.

    ``a, b > 0``, ``0 <= y <= 1``; NaN outside, as SciPy gives. Values are SciPy's (Boost's
    algorithm).

    Derivatives: in ``y``, ``dx/dy = B(a, b) x^{1-a} (1-x)^{1-b}`` (the reciprocal of the
    beta density at ``x``), every order, from ``log x`` and ``log(1 - x)`` saved with full
    relative accuracy: ``1 - x`` near ``x = 1`` is the complementary quantile
    ``betaincinv(b, a, 1 - y)``, not 1 minus the rounded ``x``; in ``a`` and ``b``,
    ``∂x/∂θ = -(∂I/∂θ) dx/dy`` with the exact ``∂I/∂θ`` (of ``1 - I_{1-x}(b, a)`` where
    ``x > 1/2``, from the accurate ``1 - x``), first order; the mixed second derivatives
    in a shape and ``y`` exact, those in two shapes NaN. Integer shapes are held fixed.
    The slope ``dx/dy`` and its logarithm are the host's, in float64 with SciPy's ``betaln``
    (JAX's is off by up to 1e-7 relative), then rounded.
    """

    signature = "(),(),()->()"
    vectorized = True
    domains = {"a": _shape, "b": _shape, "y": _probability}

    def residual_specs(self, a, b, y):
        # log x, log(1 - x), log dx/dy, dx/dy
        return (jax.ShapeDtypeStruct((), jb.result_dtype(a, b, y)),) * 4

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
        # mirrored distribution, I_{1-x}(b, a) = 1 - y, where 1 - y is exact (y >= 1/2); for
        # y < 1/2 (a skewed beta, a >> b) 1 - y would lose y's digits (1e-4 of them at
        # y = 1e-12): there a Newton step on I_{1-x}(a, b) = betaincc(b, a, 1 - x) = y
        upper = x64 > 0.5
        mirrored = upper & (y64 >= 0.5)
        complement = np.array(1 - x64)
        complement[mirrored] = scipy.special.betaincinv(
            b64[mirrored], a64[mirrored], 1 - y64[mirrored]
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            refined = upper & ~mirrored
            complement[refined] = _newton_complement(
                complement[refined], a64[refined], b64[refined], y64[refined]
            )
            log_x = _log_or_series(x64, y64, a64, log_beta, tiny)
            log_complement = _log_or_series(complement, 1 - y64, b64, log_beta, tiny)
            # the slope at the unrounded quantile, in float64 (in float32 its terms cancel);
            # the complement above 1/2 is already the unrounded one
            full = scipy.special.betaincinv(a64, b64, y64)
            log_full = _log_or_series(full, y64, a64, log_beta, np.finfo(np.float64).tiny)
            log_full_rest = np.where(upper, log_complement, np.log1p(-full))
            log_slope = (
                log_beta + _host_power(1 - a64, log_full) + _host_power(1 - b64, log_full_rest)
            )
            slope = np.exp(log_slope)
        return x, *(v.astype(dtype) for v in (log_x, log_complement, log_slope, slope))

    def _rates(self, res):
        """``dx/dy`` and ``[∂x/∂a, ∂x/∂b]`` (``None`` for an integer shape, held fixed)."""
        a, b, y, x, log_x, log_complement, log_slope, slope = res
        free = [jnp.issubdtype(s.dtype, jnp.floating) for s in (a, b)]
        a, b = a.astype(x.dtype), b.astype(x.dtype)  # integers would reach the rules as float0
        # the logs' derivatives come from _log_end's rule, through y and the shapes; the
        # slope's value is the host's, log B's derivatives JAX's
        log_beta = gammaln(a) + gammaln(b) - gammaln(a + b)
        log_x, log_complement = jax.lax.stop_gradient((log_x, log_complement))
        saved, constants = (log_x, log_complement), (slope, log_slope, a, b, log_beta, x)
        # the shapes enter as free or not; a held one is a constant (its tangent is None)
        shapes = tuple(s if f else jax.lax.stop_gradient(s) for s, f in zip((a, b), free))
        ends = [_unless(c == 1, (y, *shapes)) for c in (a, b)]
        logs = tuple(_log_end(_BETA, i, saved, constants, e[0], e[1:]) for i, e in enumerate(ends))
        slope, _ = _slope(_BETA, logs, constants)
        if not any(free):
            return slope, [None, None]
        gradient = _beta_cdf_gradient(logs, *constants[2:])
        return slope, [-g * slope if f else None for g, f in zip(gradient, free)]

    def pullback(self, res, g):
        slope, shapes = self._rates(res)
        return (*(None if d is None else times(g, d) for d in shapes), times(g, slope))

    def pushforward(self, res, tangents):
        slope, shapes = self._rates(res)
        return _total_product(tangents, (*shapes, slope))


def _padded(rates, count):
    slope, shapes = rates
    return slope, (shapes or [None] * count)


def _total_product(tangents, partials):
    """``Σ tᵢ ∂ᵢ`` over the tangents and partials that are not ``None``."""
    return total(
        None if t is None or d is None else times(t, d) for t, d in zip(tangents, partials)
    )


def _newton_complement(c, a, b, y):
    """``1 - x`` from its rounded value ``c``, by a Newton step on ``betaincc(b, a, c) = y``
    (``I_{1-c}(a, b)``, computed from ``c``): the rounding error ``eps/c`` becomes its
    square."""
    density = np.exp(
        scipy.special.xlogy(b - 1, c)
        + scipy.special.xlog1py(a - 1, -c)
        - scipy.special.betaln(a, b)
    )
    step = (scipy.special.betaincc(b, a, c) - y) / density
    return np.where(np.isfinite(step) & (c > 0), c + step, c)


def _log_or_series(x, y, a, log_beta, tiny):
    """``log x`` for the beta quantile, from ``I_x(a, b) = x^a / (a B(a, b)) (1 + O(x))``
    where ``x`` underflows (``x`` is ``1 - x`` and ``y`` is ``1 - y`` with ``a`` and ``b``
    swapped: ``B`` is symmetric)."""
    series = (np.log(y) + np.log(a) + log_beta) / a
    return np.where(x < tiny, series, np.log(x))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _log_end(quantile, end: int, saved: tuple, constants: tuple, p, shapes: tuple) -> jax.Array:
    """``saved[end]``, computed on the host: ``log x`` (``end = 0``) or ``log(1 - x)``
    (``end = 1``), as a function of the probability ``p`` and the free ``shapes``. From
    ``F(θ, x) = p``, ``dx = (dp - F_θ·dθ) dx/dp``, so its derivative is
    ``± exp(log(dx/dp) - saved[end]) (dp - F_θ·dθ)``, ``log(dx/dp)`` as ``_slope`` gives it,
    with ``(log_slope, cdf_gradient) = quantile`` and ``logs`` all of ``saved`` as such
    functions again: derivatives of every order, in terms of the logarithms alone. The
    exponent is the slope's own, the host's (as the first derivative's value is), plus one
    logarithm, so that its rounding is the slope's (a sum such as ``(1 - a) r + slope`` then
    keeps its relative accuracy where it cancels: a logarithm computed in JAX, 1e-13 off
    where its terms cancel, made ``gammaincinv(100, ·)``'s second derivative 4e-12 off).
    ``constants`` (the host's slope and its logarithm first) have no derivative here (the
    shapes among them are differentiated through ``shapes``;
    ``x`` in ``_gamma_log_slope`` is the bridged output, differentiated through its own
    rule); ``F_θ`` is computed only where a shape's tangent is not a symbolic zero."""
    return saved[end]


def _log_end_jvp(quantile, end, primals, tangents):
    saved, constants, p, shapes = primals
    _, _, dp, dshapes = tangents
    _, cdf_gradient = quantile
    logs = tuple(_log_end(quantile, i, saved, constants, p, shapes) for i in range(len(saved)))
    _, log_slope = _slope(quantile, logs, constants)
    rate = jnp.exp(log_slope - logs[end])
    moved = [(g, d) for g, d in zip(cdf_gradient(logs, *constants[2:]), dshapes) if _nonzero(d)]
    dp = jnp.zeros_like(rate) if not _nonzero(dp) else dp
    change = total([dp, *(-g * d for g, d in moved)])
    # the primal output is the function again, so that it too is differentiated by this rule
    return logs[end], (rate if end == 0 else -rate) * change


_log_end.defjvp(_log_end_jvp, symbolic_zeros=True)


def _nonzero(tangent) -> bool:
    return not isinstance(tangent, SymbolicZero)


def _slope(quantile, logs, constants):
    """``dx/dp`` and its logarithm: the host's values (``constants[:2]``, at the unrounded
    quantile in float64), the derivatives of ``log_slope(logs, *constants[2:])``'s, every
    order."""
    log_slope, _ = quantile
    host, log_host, *rest = constants
    traced = log_slope(logs, *rest)
    return host_factor(host, traced), host_valued(log_host, traced)


def _gamma_log_slope(logs, a, log_gamma, x):
    """``log(dx/dp) = log Γ(a) + (1 - a) log x + x``."""
    (log_x,) = logs
    return log_gamma + _power(1 - a, log_x) + x


def _gamma_cdf_gradient(logs, a, log_gamma, x):
    """``(∂P/∂a,)`` at the quantile ``x``."""
    return cdf_shape_gradient("gamma", a, x)


def _beta_log_slope(logs, a, b, log_beta, x):
    """``log(dx/dy) = log B(a, b) + (1 - a) log x + (1 - b) log(1 - x)``."""
    log_x, log_complement = logs
    return log_beta + _power(1 - a, log_x) + _power(1 - b, log_complement)


def _beta_cdf_gradient(logs, a, b, log_beta, x):
    """``(∂I/∂a, ∂I/∂b)`` at the quantile ``x`` (the bridged output, as the host computed it,
    differentiated through its own rule): of ``I_x(a, b)`` where ``x <= 1/2``, else of
    ``1 - I_{1-x}(b, a)`` with the accurate ``1 - x`` (the rounded ``x`` near 1 would leave
    ``1 - x`` few digits or none). The side is the host's ``x``'s: ``exp(log x)`` on a TPU
    is a few float32 ulps off, and at ``x = 1/2`` took the other side there."""
    complement = jnp.exp(logs[1])
    upper = x > 0.5
    half = jnp.full_like(x, 0.5)  # a point inside for the side not taken
    lower_a, lower_b = cdf_shape_gradient("beta", a, b, jnp.where(upper, half, x))
    upper_b, upper_a = cdf_shape_gradient("beta", b, a, jnp.where(upper, complement, half))
    return jnp.where(upper, -upper_a, lower_a), jnp.where(upper, -upper_b, lower_b)


_GAMMA = (_gamma_log_slope, _gamma_cdf_gradient)
_BETA = (_beta_log_slope, _beta_cdf_gradient)


def _unless(fixed: jax.Array, p):
    """``p`` (an array or a tuple of them), with no derivative where ``fixed``: a logarithm
    whose power is 0 there (``x^0``) is cut from its inputs, so that its derivative, infinite
    at the ends (``log 0``), is never multiplied by a zero cotangent (which gives NaN in
    reverse mode)."""
    return jax.tree.map(lambda v: jnp.where(fixed, jax.lax.stop_gradient(v), v), p)


def _host_power(c: np.ndarray, log_x: np.ndarray) -> np.ndarray:
    """``_power``'s value on the host: ``c log x``, 0 where ``c = 0``."""
    return np.where(c == 0, 0.0, c * log_x)


def _power(c: jax.Array, log_x: jax.Array) -> jax.Array:
    """``c log x``, and exactly 0 where ``c = 0`` (``x^0`` is 1 even at ``x = 0``, where
    ``log x`` is ``-inf``), with no derivative in ``log x`` there and the derivative
    ``log x`` in ``c`` (0 where it is infinite). One product, as in the plain ``c log x``:
    its rounding, and that of its derivatives, is the one the slopes' cancellations need."""
    return c * jnp.where((c == 0) & ~jnp.isfinite(log_x), 0.0, log_x)


gammaincinv = Gammaincinv()
"""``scipy.special.gammaincinv(a, p)``, a ready ``Gammaincinv``: every order in ``p``, exact first
order in the shape ``a``."""
betaincinv = Betaincinv()
"""``scipy.special.betaincinv(a, b, y)``, a ready ``Betaincinv``: every order in ``y``, exact first
order in the shapes ``a``, ``b``."""

__all__ = ["Betaincinv", "Gammaincinv", "betaincinv", "gammaincinv"]
