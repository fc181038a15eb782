"""``gammaincinv``, ``betaincinv``: the inverses of the regularized incomplete gamma and beta
functions (the gamma and beta quantiles), differentiable in the probability to every order
by implicit differentiation from their output, not in the shape parameters."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
from jax.scipy.special import xlog1py, xlogy

import jaxbridge as jb

from ._common import float_dtype, host_dtype
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
    density at ``x``), computed in logs from the output ``x`` and differentiable in turn, so
    every order works; in ``a``, a ``TypeError`` (no exact method). ``log Γ(a)`` is saved
    by the forward (SciPy's ``gammaln``) as a constant of the rules: ``a`` is held fixed.
    """

    signature = "(),()->()"
    vectorized = True
    domains = {"a": _shape, "p": _probability}
    residuals_from = ("a",)

    def residual_specs(self, a, p):
        return jax.ShapeDtypeStruct((), float_dtype(a, p))  # log Γ(a)

    def __call__(self, a, p):
        return super().__call__(held_fixed("gammaincinv", "a", _NO_SHAPE_DERIVATIVE, a), p)

    def output_specs(self, a, p):
        return jax.ShapeDtypeStruct(jnp.broadcast_shapes(a.shape, p.shape), float_dtype(a, p))

    def forward(self, a, p):
        dtype = host_dtype(a, p)
        x = scipy.special.gammaincinv(a, p).astype(dtype)
        return x, scipy.special.gammaln(a).astype(dtype)

    def _slope(self, res):
        a, _, x, log_gamma = res
        a = a.astype(x.dtype)  # an integer a would reach xlogy's derivative as float0
        return jnp.exp(log_gamma + _power(xlogy, 1 - a, x, 1.0) + x)

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
    beta density at ``x``), in logs from the output ``x``, every order; in ``a`` or ``b``, a
    ``TypeError`` (no exact method). ``log B(a, b)`` is saved by the forward (SciPy's
    ``betaln``; JAX's is off by up to 1e-7 relative) as a constant of the rules.
    """

    signature = "(),(),()->()"
    vectorized = True
    domains = {"a": _shape, "b": _shape, "y": _probability}
    residuals_from = ("a", "b")

    def residual_specs(self, a, b, y):
        return jax.ShapeDtypeStruct((), float_dtype(a, b, y))  # log B(a, b)

    def __call__(self, a, b, y):
        a = held_fixed("betaincinv", "a", _NO_SHAPE_DERIVATIVE, a)
        b = held_fixed("betaincinv", "b", _NO_SHAPE_DERIVATIVE, b)
        return super().__call__(a, b, y)

    def output_specs(self, a, b, y):
        shape = jnp.broadcast_shapes(a.shape, b.shape, y.shape)
        return jax.ShapeDtypeStruct(shape, float_dtype(a, b, y))

    def forward(self, a, b, y):
        dtype = host_dtype(a, b, y)
        x = scipy.special.betaincinv(a, b, y).astype(dtype)
        return x, scipy.special.betaln(a, b).astype(dtype)

    def _slope(self, res):
        a, b, _, x, log_beta = res
        a, b = a.astype(x.dtype), b.astype(x.dtype)  # integers would reach xlogy as float0
        return jnp.exp(log_beta + _power(xlogy, 1 - a, x, 1.0) + _power(xlog1py, 1 - b, -x, 0.0))

    def pullback(self, res, g):
        return None, None, g * self._slope(res)  # a, b: guarded by held_fixed

    def pushforward(self, res, tangents):
        *_, dy = tangents
        return None if dy is None else dy * self._slope(res)


def _power(xlog, c: jax.Array, x: jax.Array, neutral: float) -> jax.Array:
    """``xlog(c, x)`` (``c log x`` or ``c log(1 + x)``), and exactly 0 where ``c = 0``, with
    derivatives 0 there too: ``x^0`` is 1 even at ``x = 0``, where ``xlog``'s derivative
    in ``x`` would be 0/0. ``neutral`` is any ``x`` where ``xlog`` is smooth."""
    zero = c == 0
    return jnp.where(zero, 0.0, xlog(c, jnp.where(zero, neutral, x)))


gammaincinv = Gammaincinv()
betaincinv = Betaincinv()

__all__ = ["Betaincinv", "Gammaincinv", "betaincinv", "gammaincinv"]
