"""``kv``, ``kve``: the modified Bessel function of the second kind, differentiable in its
order ``v`` and in ``x`` to every order, exactly; ``KvOrderDerivative``, the order
derivatives that make that possible."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import scipy.special

import jaxbridge as jb

from ._common import float_dtype, host_dtype
from ._kv_integral import kv_order_derivative


class _BesselK(jb.Adapter):
    """``∂^m/∂v^m K_v(x)`` (times ``e^x`` when scaled), elementwise in ``v`` and ``x``.

    The family is closed under both derivatives (DLMF 10.29.1 and the integral in
    ``_kv_integral``): ``∂/∂v`` is the next member, ``m + 1``, and ``∂/∂x`` is
    ``-(member(v - 1) + member(v + 1)) / 2``, plus the member itself when scaled. The rules
    call the members as bridged adapters, so derivatives of every order work in both modes.
    """

    signature = "(),()->()"
    vectorized = True
    domains = {"x": "positive"}  # every real v is smooth; x > 0

    def member(self) -> tuple[int, bool]:
        """``(m, scaled)``: which derivative in the order this is, and whether scaled."""
        raise NotImplementedError

    def output_specs(self, v, x):
        return jax.ShapeDtypeStruct(jnp.broadcast_shapes(v.shape, x.shape), float_dtype(v, x))

    def _slopes(self, v, x, y):
        m, scaled = self.member()
        same = _member(m, scaled)
        d_v = _member(m + 1, scaled)(v, x)
        d_x = -(same(v - 1, x) + same(v + 1, x)) / 2
        return d_v, d_x + y if scaled else d_x

    def pullback(self, res, g):
        d_v, d_x = self._slopes(*res)
        return g * d_v, g * d_x

    def pushforward(self, res, tangents):
        d_v, d_x = self._slopes(*res)
        dv, dx = tangents
        terms = [s * t for s, t in ((d_v, dv), (d_x, dx)) if t is not None]
        return sum(terms[1:], terms[0]) if terms else None


class Kv(_BesselK):
    """The modified Bessel function of the second kind ``K_v(x)``, as
    ``scipy.special.kv(v, x)``.

    Real ``v`` (``K_{-v} = K_v``) and ``x > 0``; ``inf`` at ``x = 0``, NaN for ``x < 0``
    (complex there), as SciPy gives. ``K_v(x)`` falls like ``e^{-x}`` and underflows to 0
    beyond ``x`` of about 705: use ``kve`` there. Values are SciPy's (AMOS), accurate to
    about 1e-15 relative.

    Derivatives, exact and of every order: in ``x``, ``-(K_{v-1}(x) + K_{v+1}(x)) / 2``; in
    ``v``, ``KvOrderDerivative(1)``, the integral ``∫_0^∞ t sinh(v t) e^{-x cosh t} dt``.
    """

    def member(self):
        return 0, False

    def forward(self, v, x):
        return scipy.special.kv(v, x).astype(host_dtype(v, x))


class Kve(_BesselK):
    """The exponentially scaled ``kve(v, x) = K_v(x) e^x``, as ``scipy.special.kve``.

    Finite for every finite ``x > 0`` (about ``sqrt(pi / (2 x))`` for large ``x``) where
    ``kv`` underflows; ``inf`` at 0, NaN for ``x < 0``. Derivatives, exact and of every
    order: in ``x``, ``kve(v, x) - (kve(v-1, x) + kve(v+1, x)) / 2``; in ``v``,
    ``KvOrderDerivative(1, scaled=True)``.
    """

    def member(self):
        return 0, True

    def forward(self, v, x):
        return scipy.special.kve(v, x).astype(host_dtype(v, x))


class KvOrderDerivative(_BesselK):
    """``∂^m K_v(x) / ∂v^m`` (times ``e^x`` if ``scaled``) for ``m >= 1``, as the integral

        ∫_0^∞ t^m c(v t) e^{-x cosh t} dt,   c = cosh for even m, sinh for odd m,

    by the trapezoid rule in logs (see ``_kv_integral``): no overflow on the way, a true
    value beyond float64 gives ``inf``, one below gives 0. Accurate to about 1e-15 relative
    for moderate ``v`` and ``x``, 1e-13 for ``|v|`` in the hundreds (measured against
    mpmath). Real ``v``, ``x > 0``; ``±inf`` at ``x = 0``, NaN for ``x < 0``.

    ``kv`` and ``kve`` use it for their derivatives in ``v``; its own derivatives are the
    next ``m`` (in ``v``) and the same ``m`` at ``v ± 1`` (in ``x``), so every order works.
    """

    m: int = 1
    scaled: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.m, int) and self.m >= 1):
            raise ValueError(
                f"KvOrderDerivative: parameter 'm' (the order of the derivative in v) must be "
                f"an integer of at least 1 (m = 0 is kv itself), got {self.m!r}."
            )

    def member(self):
        return self.m, self.scaled

    def forward(self, v, x):
        return kv_order_derivative(self.m, self.scaled, v, x).astype(host_dtype(v, x))


def _member(m: int, scaled: bool) -> jb.Adapter:
    if m == 0:
        return kve if scaled else kv
    return KvOrderDerivative(m, scaled)


kv = Kv()
kve = Kve()

__all__ = ["Kv", "Kve", "KvOrderDerivative", "kv", "kve"]
