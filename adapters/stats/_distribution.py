"""``Distribution``: a family's ``cdf``, ``sf``, ``logcdf``, ``logsf``, ``ppf`` and ``isf``
with SciPy's argument order and ``loc``/``scale`` keywords, made of the standardized
adapters: ``loc`` and ``scale`` are applied in JAX, so their derivatives are the chain rule's,
every order."""

from __future__ import annotations

import jax.numpy as jnp

from .._shared._distributions._families import FAMILIES
from .._shared._distributions._function import KINDS, OneShapeFunction, TwoShapeFunction


class Distribution:
    """A distribution as ``scipy.stats`` names it (``t``, ``gamma``, ...), its methods
    differentiable in every argument: ``t.ppf(q, df, loc=0.0, scale=1.0)``.

    ``cdf``, ``sf``, ``logcdf``, ``logsf`` take ``(x, *shapes, loc=0.0, scale=1.0)``; ``ppf``
    and ``isf`` take ``(q, *shapes, loc=0.0, scale=1.0)``. Arguments broadcast; values are
    SciPy's; NaN for invalid shapes, ``scale <= 0`` or ``q`` outside [0, 1], as SciPy gives.
    """

    def __init__(self, name: str):
        self.name = name
        self.shapes = FAMILIES[name].shapes
        cls = OneShapeFunction if len(self.shapes) == 1 else TwoShapeFunction
        self.adapters = {kind: cls(f"{name}.{kind}") for kind in KINDS}

    def __repr__(self):
        return f"jaxbridge.adapters.stats.{self.name}"

    def _check(self, shapes):
        if len(shapes) != len(self.shapes):
            raise TypeError(
                f"{self.name} takes the shape parameters {self.shapes} after the first "
                f"argument; got {len(shapes)} values."
            )

    def _at(self, kind, x, shapes, loc, scale):
        self._check(shapes)
        loc, scale = jnp.asarray(loc), jnp.asarray(scale)
        value = self.adapters[kind](*shapes, (jnp.asarray(x) - loc) / scale)
        return jnp.where(scale > 0, value, jnp.nan)

    def _quantile(self, kind, q, shapes, loc, scale):
        self._check(shapes)
        loc, scale = jnp.asarray(loc), jnp.asarray(scale)
        value = self.adapters[kind](*shapes, q) * scale + loc
        return jnp.where(scale > 0, value, jnp.nan)

    def cdf(self, x, *shapes, loc=0.0, scale=1.0):
        """``P(X <= x)``."""
        return self._at("cdf", x, shapes, loc, scale)

    def sf(self, x, *shapes, loc=0.0, scale=1.0):
        """``P(X > x)``, computed directly (not ``1 - cdf``)."""
        return self._at("sf", x, shapes, loc, scale)

    def logcdf(self, x, *shapes, loc=0.0, scale=1.0):
        """``log P(X <= x)``, SciPy's (finite far into the lower tail)."""
        return self._at("logcdf", x, shapes, loc, scale)

    def logsf(self, x, *shapes, loc=0.0, scale=1.0):
        """``log P(X > x)``, SciPy's."""
        return self._at("logsf", x, shapes, loc, scale)

    def ppf(self, q, *shapes, loc=0.0, scale=1.0):
        """The quantile: ``x`` with ``cdf(x) = q``."""
        return self._quantile("ppf", q, shapes, loc, scale)

    def isf(self, q, *shapes, loc=0.0, scale=1.0):
        """The upper quantile: ``x`` with ``sf(x) = q``."""
        return self._quantile("isf", q, shapes, loc, scale)
