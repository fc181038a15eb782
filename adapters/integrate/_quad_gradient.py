"""``QuadGradient``: ``Quad``'s backward, ``g (∫ ∂f/∂θ dx, -f(a), f(b))``, as a bridged call of
its own, so that it can be differentiated again; and ``QuadCurvature``, the integral of the
integrand's second derivatives along a direction, that its rules need.

The forward of ``QuadGradient`` is ``Quad.backward`` itself (one ``quad_vec`` and the two
endpoint values, in one host call): a gradient costs what it did. Its rules (linear in
``g``; here for ``g = 1``), with ``f_θ``,
``f_x`` the integrand's first derivatives (its ``backward``, called through the bridge, at
each finite limit) and ``∫ f_θθ w`` from ``QuadCurvature``:

- along ``(θ̇, ȧ, ḃ)``: ``∫ f_θθ θ̇ + f_θ(b) ḃ - f_θ(a) ȧ``, ``-(f_θ(a)·θ̇ + f_x(a) ȧ)``,
  ``f_θ(b)·θ̇ + f_x(b) ḃ``;
- the pullback of ``(w, α, β)``: ``∫ f_θθ w - α f_θ(a) + β f_θ(b)`` for ``θ``,
  ``-f_θ(a)·w - α f_x(a)`` for ``a``, ``f_θ(b)·w + β f_x(b)`` for ``b``;

an infinite limit contributing nothing. ``Quad``'s forward mode is this call with ``g = 1``,
so that ``jacfwd`` of ``jacfwd`` and ``jacrev`` of ``jacfwd`` are these rules too.
``QuadCurvature`` refuses to be differentiated, naming ``Quad``: it differentiates to second
order.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate

import jaxbridge as jb

from .._shared._failure import IntegrationFailure
from .._shared._user_function import UserFunction
from ._checks import failure, kept_on, named_backward
from ._second_derivatives import backward_jvp

_QUAD_VEC_LIMIT = 10_000  # (as quad.py's: quad_vec bisects without extrapolation)


class QuadGradient(jb.Adapter):
    """``(θ̄, ā, b̄) = QuadGradient(quad)(theta, a, b, value, g)``: ``Quad.backward`` for the
    cotangent ``g``, ``g (∫ ∂f/∂θ dx, -f(a), f(b))``; ``value`` the integral (NaN where the
    forward failed, which gives NaN derivatives; its tangent is not read, the rules taking
    every derivative through ``theta``, ``a`` and ``b``)."""

    quad: Any  # (a Quad)

    signature = "(p),(),(),(),()->(p),(),()"

    def output_specs(self, theta, a, b, value, g):
        return tuple(jax.ShapeDtypeStruct(x.shape, jb.result_dtype(x)) for x in (theta, a, b))

    def forward(self, theta, a, b, value, g):
        with named_backward("Quad"):
            return self.quad.backward((theta, a, b, value), g)

    def _unit(self, res):
        """``(∫ ∂f/∂θ dx, -f(a), f(b))``: this call with ``g = 1``."""
        theta, a, b, value, g = res[:5]
        return self(theta, a, b, value, jnp.ones_like(g))

    def _curvature(self, theta, a, b, w):
        """``∫ ∂²f/∂θ² w dx`` (``QuadCurvature``)."""
        return kept_on(self, "_QuadCurvature", lambda: QuadCurvature(self.quad))(theta, a, b, w)

    def _endpoints(self, theta, a, b):
        """``(f_x, f_θ)`` at ``a`` and at ``b``, zero at an infinite limit; differentiating
        them (a third derivative of ``Quad``) is refused by name, where the integrand's own
        rules would otherwise be the first to say so."""
        return _refused_when_differentiated(self._integrand_at_limits)(theta, a, b)

    def _integrand_at_limits(self, theta, a, b):
        integrand = self.quad.integrand
        out = []
        for limit in (a, b):
            finite = jnp.isfinite(limit)
            # (f need not exist at ±inf)
            safe = jnp.where(finite, limit, 0).astype(jb.result_dtype(limit, theta))
            # one batch for both: a cotangent of an argument the batch broadcasts would be
            # summed over it, where each element's own derivative is wanted
            batch = jnp.broadcast_shapes(safe.shape, theta.shape[:-1])
            safe = jnp.broadcast_to(safe, batch)
            at = jnp.broadcast_to(theta, (*batch, theta.shape[-1]))
            _, pull = jax.vjp(integrand, safe, at)
            fx, ftheta = pull(jnp.ones(batch, safe.dtype))
            out.append((jnp.where(finite, fx, 0), jnp.where(finite[..., None], ftheta, 0)))
        return out

    def pushforward(self, res, tangents):
        theta, a, b, value, g = res[:5]
        dtheta, da, db = (
            jnp.zeros(x.shape, jb.result_dtype(x)) if t is None else t
            for t, x in zip(tangents[:3], (theta, a, b))
        )
        (fxa, fta), (fxb, ftb) = self._endpoints(theta, a, b)
        out_theta = self._curvature(theta, a, b, dtheta)
        out_theta = out_theta + ftb * db[..., None] - fta * da[..., None]
        out_a = -(jnp.sum(fta * dtheta, -1) + fxa * da)
        out_b = jnp.sum(ftb * dtheta, -1) + fxb * db
        outs = (g[..., None] * out_theta, g * out_a, g * out_b)
        dg = tangents[4]
        if dg is not None:  # (the call is linear in g)
            unit = self._unit(res)
            outs = (
                outs[0] + dg[..., None] * unit[0],
                outs[1] + dg * unit[1],
                outs[2] + dg * unit[2],
            )
        return _failed(value, outs)

    def pullback(self, res, cts):
        theta, a, b, value, g = res[:5]
        w, alpha, beta = (
            jnp.zeros(x.shape, jb.result_dtype(x)) if c is None else c
            for c, x in zip(cts, (theta, a, b))
        )
        (fxa, fta), (fxb, ftb) = self._endpoints(theta, a, b)
        out_theta = self._curvature(theta, a, b, w)
        out_theta = out_theta - alpha[..., None] * fta + beta[..., None] * ftb
        out_a = -jnp.sum(fta * w, -1) - alpha * fxa
        out_b = jnp.sum(ftb * w, -1) + beta * fxb
        outs = _failed(value, (g[..., None] * out_theta, g * out_a, g * out_b))
        unit = self._unit(res)
        dg = jnp.sum(unit[0] * w, -1) + unit[1] * alpha + unit[2] * beta
        return (*outs, None, dg)


def _refused_when_differentiated(f):
    wrapped = jax.custom_jvp(f)

    @wrapped.defjvp
    def refuse(primals, tangents):
        raise TypeError(THIRD_ORDER)

    return wrapped


def _failed(value, outs):
    """``outs``, NaN where the forward failed (its ``value`` NaN, under ``on_failure="nan"``),
    as the first derivatives are there."""
    nan = jnp.where(jnp.isfinite(value), 0, jnp.nan)
    return tuple(o + (nan[..., None] if o.ndim > nan.ndim else nan).astype(o.dtype) for o in outs)


class QuadCurvature(jb.Adapter):
    """``∫_a^b ∂²f/∂θ² w dx = QuadCurvature(quad)(theta, a, b, w)``, by ``quad_vec`` with the
    ``Quad``'s tolerances; the integrand's second derivatives from its ``backward_jvp`` or
    differences of its ``backward`` (``_second_derivatives``). Not differentiable: its rules
    refuse a third derivative by name."""

    quad: Any  # (a Quad)

    signature = "(p),(),(),(p)->(p)"

    def forward(self, theta, a, b, w):
        quad = self.quad
        theta64, a64, b64, w64 = (np.asarray(v, np.float64) for v in (theta, a, b, w))
        dtype = jb.result_dtype(theta, a, b, w)
        if not theta64.size or a64 == b64 or not np.any(w64):
            return np.zeros(theta.shape, dtype)
        if not (np.isfinite(theta64).all() and np.isfinite(w64).all()):
            return np.full(theta.shape, np.nan, dtype)
        host = UserFunction(quad.integrand, "Quad's integrand", ())
        one = np.asarray(1.0)

        def d2f(x: float) -> np.ndarray:
            return backward_jvp(host, (np.asarray(x, np.float64), theta64), one, (None, w64))[1]

        try:
            value, _, info = scipy.integrate.quad_vec(
                d2f,
                float(a64),
                float(b64),
                epsabs=quad.epsabs,
                epsrel=quad.epsrel,
                limit=max(quad.limit, _QUAD_VEC_LIMIT),
                full_output=True,
            )
            if not info.success or not np.isfinite(value).all():
                raise failure(
                    f"the integral of ∂²f/∂θ² w (quad_vec) did not reach the error target "
                    f"(status {info.status}): {info.message}"
                )
        except IntegrationFailure as error:
            value = quad.nan_on_failure(error, theta.shape)
        return np.asarray(value, dtype)

    def pushforward(self, res, tangents):
        raise TypeError(THIRD_ORDER)

    def pullback(self, res, g):
        raise TypeError(THIRD_ORDER)


THIRD_ORDER = (
    "Quad differentiates to second order at most; a third derivative would differentiate "
    "the integrand's second derivatives again, which Quad does not take. Second derivatives "
    "of every composition are supported: jax.hessian, jacfwd/jacrev of grad, jacfwd of "
    "jacfwd, jacrev of jacrev and Hessian-vector products (jax.jvp of jax.grad)."
)
