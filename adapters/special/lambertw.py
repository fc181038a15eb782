"""``lambertw``: the principal branch of the Lambert W function on the real line,
differentiable to every order from its own output."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

import jaxbridge as jb

from ._common import float_dtype, host_dtype


def _above_branch_point(raw: np.ndarray) -> np.ndarray:
    """``x`` in [-1/4, 4]: clear of the branch point -1/e, where W' is infinite."""
    return 1.875 + 2.125 * raw


class LambertW(jb.Adapter):
    """``w`` with ``w e^w = x`` on the principal branch (``w >= -1``), for real ``x``:
    ``scipy.special.lambertw(x).real`` where that is real.

    ``x >= -1/e``; NaN below (where the principal branch is complex: SciPy returns a
    complex number there, this adapter never does), ``inf`` at ``inf``. Values are SciPy's
    (Halley's iteration), accurate to about 1e-16 relative.

    Derivatives: ``W'(x) = e^{-W} / (1 + W)`` (``= W / (x (1 + W))``, and 1 at ``x = 0``),
    from the output alone and differentiable in turn: every order, in both modes. Infinite
    at the branch point ``x = -1/e``.
    """

    signature = "()->()"
    vectorized = True
    domains = {"x": _above_branch_point}

    def output_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, float_dtype(x))

    def forward(self, x):
        with np.errstate(invalid="ignore"):
            w = scipy.special.lambertw(x)
        real = np.where((w.imag == 0) & (x >= -np.exp(-1.0)), w.real, np.nan)
        return real.astype(host_dtype(x))

    def pullback(self, res, g):
        _, w = res
        return (g * jnp.exp(-w) / (1 + w),)

    def pushforward(self, res, tangents):
        _, w = res
        (dx,) = tangents
        return dx * jnp.exp(-w) / (1 + w)


lambertw = LambertW()

__all__ = ["LambertW", "lambertw"]
