"""``Quad``: ``∫_a^b f(x, θ) dx`` by QUADPACK (``scipy.integrate.quad``), differentiable in
``θ``, ``a`` and ``b`` by the Leibniz rule; infinite limits allowed."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate

import jaxbridge as jb

from .._shared._failure import IntegrationFailure, MayFail, require_finite
from .._shared._user_function import UserFunction
from ._checks import check_positive, failure, kept_on
from ._quad_gradient import QuadGradient

_INTEGRAND_SIGNATURE = re.compile(r"^\(\),\(\w+\)->\(\)$")


_QUAD_VEC_LIMIT = 10_000  # (quad_vec's own default)
"""The fewest subintervals the derivative's ``quad_vec`` may use."""


class Quad(MayFail):
    """Integrate on the host with SciPy: ``value = Quad(integrand)(theta, a, b)``.

    ``theta`` is (p,); ``a`` and ``b`` are scalars, either of them may be ``-inf`` or
    ``inf``; the value is a scalar, ``∫_a^b f(x, θ) dx`` (negative if ``b < a``). Leading
    axes are batch axes (one host call per ``vmap``, looping over the batch there).

    ``integrand`` is an ``Adapter`` with signature ``"(),(p)->()"`` whose host ``forward(x,
    theta)`` (``x`` a 0-d float64 array) QUADPACK calls point by point, and whose host
    ``backward`` gives ``∂f/∂θ`` for the gradient.

    Derivatives, by the Leibniz rule: ``∂/∂θ = ∫_a^b ∂f/∂θ dx`` (integrated by
    ``scipy.integrate.quad_vec`` with the same tolerances, on the vector's norm, and at
    least 10,000 subintervals, one backward call per point),
    ``∂/∂a = -f(a, θ)``, ``∂/∂b = f(b, θ)``, and 0 for an infinite limit. Forward mode
    (``jvp``, ``jacfwd``) uses the same integral (one bridged call, as the gradient), so the
    two modes are exact transposes.

    Second derivatives (``jax.hessian``, ``jax.jvp`` of ``jax.grad``, ``jax.jacrev`` of
    ``jax.jacrev``, ``jax.jacfwd`` of ``jax.jacfwd``, ``jax.jacrev`` of ``jax.jacfwd``) in
    ``θ``, ``a`` and ``b``, by the Leibniz rule again: the derivative of ``∫ ∂f/∂θ dx`` is
    ``∫ ∂²f/∂θ² v dx`` (``quad_vec``, the same tolerances) plus ``∂f/∂θ`` at the limits,
    and that of ``-f(a)`` and ``f(b)`` the integrand's own derivatives there
    (its ``backward``, ``∂f/∂x`` its first cotangent: None reads as 0).
    ``∂²f/∂θ² v`` comes from the integrand's host method ``backward_jvp(self, res, g,
    tangents)`` if it defines one (the derivative of ``backward(res, g)``'s cotangents along
    ``tangents``, one per input, None for zero), else from central differences of
    ``backward`` at two steps extrapolated (4 calls a point, about 1e-12 relative). The
    first derivatives do the same host work as before; a third derivative is refused (a
    ``TypeError`` naming ``Quad``).

    Parameters:
        epsabs, epsrel: QUADPACK's absolute and relative error targets (SciPy's defaults,
            1.49e-8); the derivative's integral is held to the same ones.
        limit: the most subintervals QUADPACK may use (SciPy's default 50); the
            derivative's ``quad_vec`` may use at least 10,000.
        on_failure: see ``MayFail``. Fails where QUADPACK does not reach the error target
            (SciPy's message: subdivision limit, round-off, divergence, ...), on an error
            estimate above ``max(epsabs, epsrel |value|)``, a non-finite value, and NaN
            arguments, in the forward or the derivative's integral.

    Everything runs in float64 on the host; float32 inputs give float32 results.
    """

    integrand: jb.Adapter
    epsabs: float = 1.49e-8
    epsrel: float = 1.49e-8
    limit: int = 50

    signature = "(p),(),()->()"

    def __post_init__(self) -> None:
        if not isinstance(self.integrand, jb.Adapter):
            raise TypeError(
                "Quad: parameter 'integrand' must be a jaxbridge.Adapter with signature "
                f"'(),(p)->()' (forward(x, theta)); got {type(self.integrand).__name__}."
            )
        if not _INTEGRAND_SIGNATURE.match(self.integrand.signature.replace(" ", "")):
            raise ValueError(
                f"Quad: parameter 'integrand' ({type(self.integrand).__name__}) must have "
                f"signature '(),(p)->()' (point, parameters -> value); got "
                f"{self.integrand.signature!r}."
            )
        check_positive("Quad", "epsabs", self.epsabs, allow_zero=True)
        check_positive("Quad", "epsrel", self.epsrel, allow_zero=True)
        if not (isinstance(self.limit, int) and self.limit >= 1):
            raise ValueError(
                f"Quad: parameter 'limit' must be a positive integer; got {self.limit!r}."
            )

    def output_specs(self, theta, a, b):
        return jax.ShapeDtypeStruct((), jb.result_dtype(theta, a, b))

    def forward(self, theta, a, b):
        dtype = jb.result_dtype(theta, a, b)
        theta64, a64, b64 = (np.asarray(v, np.float64) for v in (theta, a, b))
        host = UserFunction(self.integrand, "Quad's integrand", ())
        try:
            require_finite("argument 'theta'", theta64, failure)
            for name, limit in (("a", a64), ("b", b64)):  # (an infinite limit is meaningful)
                if np.isnan(limit):
                    raise failure(f"the integration limit is NaN in argument '{name}'")

            def f(x: float) -> float:
                return float(host.value(np.asarray(x, np.float64), theta64))

            got = scipy.integrate.quad(
                f,
                float(a64),
                float(b64),
                epsabs=self.epsabs,
                epsrel=self.epsrel,
                limit=self.limit,
                full_output=1,
            )
            value, error = got[0], got[1]
            if len(got) > 3:  # QUADPACK's ier > 0: the message comes fourth
                raise failure(f"QUADPACK did not reach the error target: {got[3]}")
            if not np.isfinite(value):
                raise failure(f"the integral is not finite ({value})")
            if error > max(self.epsabs, self.epsrel * abs(value)):
                raise failure(
                    f"QUADPACK's error estimate {error:.3g} is above the target max(epsabs, "
                    f"epsrel |value|) = {max(self.epsabs, self.epsrel * abs(value)):.3g}"
                )
        except IntegrationFailure as error:
            value = self.nan_on_failure(error, ())
        return np.asarray(value, dtype)

    def backward(self, res, g):
        theta, a, b, value = res
        g = float(g)
        try:
            dtheta, da, db = self._derivatives(theta, a, b, value)
        except IntegrationFailure as error:
            dtheta, da, db = self.nan_on_failure(error, theta.shape, (), ())
        return tuple(
            np.asarray(g * d, jb.result_dtype(x)) for d, x in zip((dtheta, da, db), (theta, a, b))
        )

    def pullback(self, res, g):
        # the host derivatives as a bridged call of their own (the same host work), whose
        # rules give the second derivatives (``_quad_gradient``)
        cts = kept_on(self, "_QuadGradient", lambda: QuadGradient(self))(*res, g)
        return tuple(c if jnp.issubdtype(x.dtype, jnp.floating) else None for c, x in zip(cts, res))

    def pushforward(self, res, tangents):
        # ``(∫ ∂f/∂θ dx, -f(a), f(b))`` along the tangents: ``QuadGradient`` for ``g = 1``
        # (the host work of a gradient), whose rules are the second order
        if all(t is None for t in tangents):
            return None
        value = res[3]
        unit = kept_on(self, "_QuadGradient", lambda: QuadGradient(self))(
            *res, jnp.ones_like(value)
        )
        total = jnp.zeros_like(value)
        for d, t in zip(unit, tangents):
            if t is not None:
                total = total + (jnp.sum(d * t, -1) if d.ndim > value.ndim else d * t)
        return total

    def _derivatives(self, theta, a, b, value):
        """``(∫ ∂f/∂θ dx, -f(a), f(b))``, with 0 for an infinite limit; NaN throughout if
        the forward failed (its value is NaN)."""
        theta64, a64, b64 = (np.asarray(v, np.float64) for v in (theta, a, b))
        if not np.isfinite(value):
            return np.full(theta.shape, np.nan), np.nan, np.nan
        host = UserFunction(self.integrand, "Quad's integrand", ())
        da = -float(host.value(a64, theta64)) if np.isfinite(a64) else 0.0
        db = float(host.value(b64, theta64)) if np.isfinite(b64) else 0.0
        dtheta = np.zeros(theta.shape)
        if theta64.size and a64 != b64:

            def df(x: float) -> np.ndarray:
                return host.vjp((np.asarray(x, np.float64), theta64), np.asarray(1.0))[1]

            dtheta, _, info = scipy.integrate.quad_vec(
                df,
                float(a64),
                float(b64),
                epsabs=self.epsabs,
                epsrel=self.epsrel,  # of the whole vector's norm: a component may be 0
                # quad_vec bisects without QUADPACK's extrapolation: an integrable endpoint
                # singularity QUADPACK settles in 50 subintervals takes it hundreds
                limit=max(self.limit, _QUAD_VEC_LIMIT),
                full_output=True,
            )
            if not info.success or not np.isfinite(dtheta).all():
                raise failure(
                    f"the integral of ∂f/∂θ (quad_vec) did not reach the error target "
                    f"(status {info.status}): {info.message}"
                )
        return dtheta, da, db
