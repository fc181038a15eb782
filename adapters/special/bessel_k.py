"""``kv``, ``kve``: the modified Bessel function of the second kind, differentiable in its
order ``v`` and in ``x`` to every order, exactly; ``KvDerivative``, the derivatives that
make that possible."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import scipy.special

import jaxbridge as jb

from .._shared._rules import times, total
from ._common import exact_floats
from ._kv_integral import kv_derivative


class _BesselK(jb.Adapter):
    """``∂^m/∂v^m (-∂/∂x)^k`` of ``K_v(x)`` (of ``kve`` when scaled), elementwise.

    The family is closed under both derivatives: ``∂/∂v`` is the member ``(m + 1, k)`` and
    ``∂/∂x`` is minus the member ``(m, k + 1)`` (see ``_kv_integral``). The rules call the
    members as bridged adapters, so derivatives of every order work in both modes.
    """

    signature = "(),()->()"
    vectorized = True
    domains = {"x": "positive"}  # smooth for every real v and x > 0

    def member(self) -> tuple[int, int, bool]:
        """``(m, k, scaled)``: which derivative of ``kv`` (``kve`` if scaled) this is."""
        raise NotImplementedError

    def output_specs(self, v, x):
        return jax.ShapeDtypeStruct(jnp.broadcast_shapes(v.shape, x.shape), jb.result_dtype(v, x))

    def _slopes(self, v, x):
        m, k, scaled = self.member()
        return KvDerivative(m + 1, k, scaled)(v, x), -KvDerivative(m, k + 1, scaled)(v, x)

    def pullback(self, res, g):
        v, x, _ = res
        d_v, d_x = self._slopes(v, x)
        return times(g, d_v), times(g, d_x)

    def pushforward(self, res, tangents):
        v, x, _ = res
        d_v, d_x = self._slopes(v, x)
        return total(None if t is None else times(t, s) for s, t in zip((d_v, d_x), tangents))


class Kv(_BesselK):
    """The modified Bessel function of the second kind ``K_v(x)``, as
    ``scipy.special.kv(v, x)``.

    Real ``v`` (``K_{-v} = K_v``) and ``x > 0``; ``inf`` at ``x = 0``, NaN for ``x < 0``
    (complex there), as SciPy gives. ``K_v(x)`` falls like ``e^{-x}`` and underflows to 0
    beyond ``x`` of about 705: use ``kve`` there. Values are SciPy's (AMOS), within 1e-13
    relative of Boost's and mpmath's (a few ulps typically).

    Derivatives, exact and of every order in both arguments: ``KvDerivative(m, k)``, the
    integral ``∫_0^∞ t^m c(v t) cosh(t)^k e^{-x cosh t} dt`` (``c = cosh`` for even ``m``,
    ``sinh`` for odd): ``∂/∂v`` is ``KvDerivative(1, 0)``, ``∂/∂x`` is
    ``-KvDerivative(0, 1)`` (equal to ``-(K_{v-1} + K_{v+1}) / 2``).
    """

    def member(self):
        return 0, 0, False

    def forward(self, v, x):
        return scipy.special.kv(*exact_floats(v, x)).astype(jb.result_dtype(v, x))


class Kve(_BesselK):
    """The exponentially scaled ``kve(v, x) = K_v(x) e^x``, as ``scipy.special.kve``.

    Finite for every finite ``x > 0`` (about ``sqrt(pi / (2 x))`` for large ``x``) where
    ``kv`` underflows; ``inf`` at 0, NaN for ``x < 0``. Derivatives, exact and of every
    order: ``KvDerivative(m, k, scaled=True)``, whose integrand carries ``(cosh t - 1)^k
    e^{-x (cosh t - 1)}``: no overflow, and no cancellation at large ``x``.
    """

    def member(self):
        return 0, 0, True

    def forward(self, v, x):
        return scipy.special.kve(*exact_floats(v, x)).astype(jb.result_dtype(v, x))


class KvDerivative(_BesselK):
    """``∂^m/∂v^m (-∂/∂x)^k K_v(x)`` (of ``kve(v, x)`` if ``scaled``), ``m + k >= 1``:

        ∫_0^∞ t^m c(v t) cosh(t)^k e^{-x cosh t} dt                      (unscaled)
        ∫_0^∞ t^m c(v t) (cosh t - 1)^k e^{-x (cosh t - 1)} dt           (scaled)

    with ``c = cosh`` for even ``m``, ``sinh`` for odd ``m``, by the trapezoid rule in logs
    (see ``_kv_integral``): a true value beyond float64 gives ``inf``, one below gives 0.
    Accurate to about 1e-15 relative for moderate ``v`` and ``x``, 1e-13 for ``|v|`` in the
    hundreds (measured against mpmath). Real ``v``, ``x > 0``; ``±inf`` at ``x = 0``, NaN for
    ``x < 0``.

    ``kv`` and ``kve`` use it for their derivatives; its own are ``(m + 1, k)`` in ``v``
    and ``-(m, k + 1)`` in ``x``, so every order works.
    """

    m: int = 1
    k: int = 0
    scaled: bool = False

    def __post_init__(self) -> None:
        orders = (self.m, self.k)
        if not all(isinstance(n, int) and n >= 0 for n in orders) or sum(orders) < 1:
            raise ValueError(
                f"KvDerivative: parameters 'm' and 'k' (the orders of the derivatives in v and "
                f"-x) must be integers of at least 0, not both 0 (that is kv itself); got "
                f"m={self.m!r}, k={self.k!r}."
            )

    def member(self):
        return self.m, self.k, self.scaled

    def forward(self, v, x):
        return kv_derivative(self.m, self.k, self.scaled, v, x).astype(jb.result_dtype(v, x))


kv = Kv()
"""``scipy.special.kv(v, x)``, a ready ``Kv``: differentiable in the order ``v`` and in ``x``,
exactly, to every order."""
kve = Kve()
"""``scipy.special.kve(v, x)``, a ready ``Kve``: differentiable in the order ``v`` and in ``x``,
exactly, to every order."""

__all__ = ["Kv", "KvDerivative", "Kve", "kv", "kve"]
