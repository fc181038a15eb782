"""``lambertw``: the principal branch of the Lambert W function on the real line,
differentiable to every order from its own output."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

import jaxbridge as jb

_INVERSE_E = (0.36787944117144233, -1.2428753672788363e-17)
"""``1/e`` as the sum of two doubles (the first is the nearest double)."""

_BRANCH_SERIES = (-1, 1, -1 / 3, 11 / 72, -43 / 540, 769 / 17280, -221 / 8505, 680863 / 43545600)
"""W about the branch point, in powers of ``p = sqrt(2 (e x + 1))`` (Corless et al., "On
the Lambert W function", 1996, eq. 4.22)."""

_SERIES_REACH = 1e-2
"""Where ``p`` is below this the series is used: its first omitted term is 1e-18 of 1 + W."""


def _above_branch_point(raw: np.ndarray) -> np.ndarray:
    """``x`` in [-1/4, 4]: clear of the branch point -1/e, where W' is infinite."""
    return 1.875 + 2.125 * raw


class LambertW(jb.Adapter):
    """``w`` with ``w e^w = x`` on the principal branch (``w >= -1``), for real ``x``:
    ``scipy.special.lambertw(x).real`` where that is real.

    ``x >= -1/e``; NaN below (where the principal branch is complex: SciPy returns a
    complex number there, this adapter never does), ``inf`` at ``inf``. Values are SciPy's
    (Halley's iteration), accurate to about 1e-16 relative, except within 1.8e-5 of ``-1/e``,
    where SciPy loses digits and the series about the branch point gives them (1e-16 of
    ``1 + W``; ``W'`` then has about ``1e-16 / (1 + W)`` relative error from ``W``'s own
    rounding: 6e-9 one ulp above ``-1/e``).

    Derivatives: ``W'(x) = e^{-W} / (1 + W)`` (``= W / (x (1 + W))``, and 1 at ``x = 0``),
    from the output alone and differentiable in turn: every order, in both modes. Infinite
    at the branch point ``x = -1/e``.
    """

    signature = "()->()"
    vectorized = True
    domains = {"x": _above_branch_point}

    def output_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, jb.result_dtype(x))

    def forward(self, x):
        with np.errstate(invalid="ignore"):
            w = scipy.special.lambertw(x)
        real = np.where((w.imag == 0) & (x >= -np.exp(-1.0)), w.real, np.nan)
        # Near the branch point SciPy's W loses digits (4e-9 one ulp above -1/e, where
        # W' = e^{-W} / (1 + W) then came out 20% off): there, the series in
        # p = sqrt(2 (e x + 1)), with x + 1/e to full precision
        x64 = np.asarray(x, np.float64)
        above = (x64 + _INVERSE_E[0]) + _INVERSE_E[1]  # x + 1/e (NaN stays NaN)
        near = (x64 >= -_INVERSE_E[0]) & (2 * np.e * above < _SERIES_REACH**2)
        p = np.sqrt(2 * np.e * np.where(near, np.maximum(above, 0.0), 0.0))
        real = np.where(near, np.polynomial.polynomial.polyval(p, _BRANCH_SERIES), real)
        return real.astype(jb.result_dtype(x))

    def pullback(self, res, g):
        _, w = res
        return (g * jnp.exp(-w) / (1 + w),)

    def pushforward(self, res, tangents):
        _, w = res
        (dx,) = tangents
        return dx * jnp.exp(-w) / (1 + w)


lambertw = LambertW()
"""``scipy.special.lambertw(x).real`` on the principal branch, a ready ``LambertW``: differentiable
in ``x`` to every order."""

__all__ = ["LambertW", "lambertw"]
