"""``jv``, ``yv``, ``iv``, ``ive``: Bessel functions of real order ``v`` and real ``x``,
differentiable in ``x`` to every order (the recurrences DLMF 10.6.1 and 10.29.1), not in
``v``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import scipy.special

import jaxbridge as jb

from .._shared._fixed import HoldsFixed
from ._common import exact_floats


class _OrderHeldFixed(HoldsFixed):
    """A SciPy ufunc ``f(v, x)`` of a real order ``v``, elementwise, whose ``x``-derivative
    is a combination of the same function at orders ``v - 1`` and ``v + 1`` (``slope``).

    The order has no derivative: differentiating in ``v`` raises a ``TypeError`` naming the
    function and ``v`` when the program is traced; differentiating in ``x`` alone works, to
    every order, because ``slope`` calls the adapter itself.
    """

    signature = "(),()->()"
    vectorized = True
    # The checks hold the order fixed (integer orders 0 to 7; any real order is valid) and
    # keep x > 0, where every one of these functions is real and smooth.
    domains = {"v": "integer", "x": "positive"}

    held = {"v": "its derivative in the order has no closed form, and SciPy computes none"}

    function = scipy.special.jv  # the SciPy ufunc; each subclass sets its own

    def name(self) -> str:
        return self.function.__name__  # SciPy's: "jv" for Jv

    def output_specs(self, v, x):
        return jax.ShapeDtypeStruct(jnp.broadcast_shapes(v.shape, x.shape), jb.result_dtype(v, x))

    def forward(self, v, x):
        return self.function(*exact_floats(v, x)).astype(jb.result_dtype(v, x))

    def slope(self, v: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
        """``d f(v, x) / dx``, from bridged calls (``y`` is ``f(v, x)``)."""
        raise NotImplementedError

    def pullback(self, res, g):
        v, x, y = res
        return None, g * self.slope(v, x, y)  # v: guarded by held_fixed, never reached

    def pushforward(self, res, tangents):
        v, x, y = res
        _, dx = tangents
        return None if dx is None else dx * self.slope(v, x, y)


class Jv(_OrderHeldFixed):
    """The Bessel function of the first kind ``J_v(x)``, as ``scipy.special.jv(v, x)``.

    Real ``v`` and ``x``; for ``x < 0`` and non-integer ``v`` the value is complex, and the
    result is NaN there, as SciPy's real ``jv`` gives. Values are SciPy's (AMOS and Cephes),
    bit for bit: within 2e-14 relative of Boost's and mpmath's (a few ulps typically, more
    near zeros of ``J_v``).

    Derivatives: in ``x``, ``(J_{v-1}(x) - J_{v+1}(x)) / 2``, to every order; in ``v``, a
    ``TypeError``.
    """

    function = scipy.special.jv

    def slope(self, v, x, y):
        return (self(v - 1, x) - self(v + 1, x)) / 2


class Yv(_OrderHeldFixed):
    """The Bessel function of the second kind ``Y_v(x)``, as ``scipy.special.yv(v, x)``.

    Real ``v``, ``x > 0``; ``-inf`` at ``x = 0`` and NaN for ``x < 0`` (complex there), as
    SciPy gives. Values are SciPy's: within 2e-14 relative of mpmath at moderate orders,
    2.5e-11 for orders near 1000 (Boost's table). Derivatives: in ``x``,
    ``(Y_{v-1}(x) - Y_{v+1}(x)) / 2``, to every order; in ``v``, a ``TypeError``.
    """

    function = scipy.special.yv

    def slope(self, v, x, y):
        return (self(v - 1, x) - self(v + 1, x)) / 2


class Iv(_OrderHeldFixed):
    """The modified Bessel function of the first kind ``I_v(x)``, as ``scipy.special.iv``.

    Real ``v`` and ``x``; NaN for ``x < 0`` and non-integer ``v`` (complex there), as SciPy
    gives. ``I_v(x)`` grows like ``e^x / sqrt(2 pi x)`` and overflows to ``inf`` beyond
    ``x`` of about 713: use ``ive`` there. Values are SciPy's, within 2e-13 relative of
    Boost's. Derivatives: in ``x``,
    ``(I_{v-1}(x) + I_{v+1}(x)) / 2``, to every order; in ``v``, a ``TypeError``.
    """

    function = scipy.special.iv

    def slope(self, v, x, y):
        return (self(v - 1, x) + self(v + 1, x)) / 2


class Ive(_OrderHeldFixed):
    """The exponentially scaled ``ive(v, x) = I_v(x) e^{-|x|}``, as ``scipy.special.ive``.

    Finite for every finite ``x`` (about ``1 / sqrt(2 pi x)`` for large ``x``), where
    ``iv`` overflows; NaN for ``x < 0`` and non-integer ``v``. Derivatives: in ``x``,
    ``(ive(v-1, x) + ive(v+1, x)) / 2 - sign(x) ive(v, x)``, to every order (at ``x = 0``
    the ``sign`` term is 0, the mean of the one-sided slopes when ``v = 0``); in ``v``, a
    ``TypeError``.
    """

    function = scipy.special.ive

    def slope(self, v, x, y):
        return (self(v - 1, x) + self(v + 1, x)) / 2 - jnp.sign(x) * y


jv = Jv()
"""``scipy.special.jv(v, x)``, a ready ``Jv``: differentiable in ``x`` to every order; the order
``v`` is held fixed."""
yv = Yv()
"""``scipy.special.yv(v, x)``, a ready ``Yv``: differentiable in ``x`` to every order; the order
``v`` is held fixed."""
iv = Iv()
"""``scipy.special.iv(v, x)``, a ready ``Iv``: differentiable in ``x`` to every order; the order
``v`` is held fixed."""
ive = Ive()
"""``scipy.special.ive(v, x)``, a ready ``Ive``: differentiable in ``x`` to every order; the order
``v`` is held fixed."""

__all__ = ["Iv", "Ive", "Jv", "Yv", "iv", "ive", "jv", "yv"]
