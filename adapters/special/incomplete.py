"""``gammainc``, ``gammaincc``, ``betainc``: the regularized incomplete gamma and beta
functions, differentiable in every argument.

They are the gamma and beta distributions' standardized ``cdf`` and ``sf`` (the adapters of
``jaxbridge.adapters.stats``, with ``scipy.special``'s values and argument order): in ``x``,
every order (``∂P/∂x`` is the density, in JAX); in the shapes, first order, exactly, from
``_shape_derivatives`` (``∂P/∂a`` by Moore's series and continued fraction, ``∂I/∂a``,
``∂I/∂b`` by Boik and Robison-Cox's continued fraction; at most 3.8e-13 relative against
mpmath, shapes 1e-3 to 1e4). JAX's own ``betainc`` has no derivative in ``a``, ``b``.
"""

from __future__ import annotations

from ..stats._function import OneShapeFunction, TwoShapeFunction

gammainc = OneShapeFunction("gammainc")
gammaincc = OneShapeFunction("gammaincc")
betainc = TwoShapeFunction("betainc")

__all__ = ["betainc", "gammainc", "gammaincc"]
