"""``Akima1DInterpolator``: Akima's piecewise cubic (or the modified "makima")."""

from __future__ import annotations

import jax.numpy as jnp
import scipy.interpolate

from ._hermite import HermiteInterpolant

METHODS = ("akima", "makima")


class Akima1DInterpolator(HermiteInterpolant):
    """SciPy's Akima interpolant through ``(x, y)`` evaluated at ``xq``:
    ``Akima1DInterpolator(method)(x, y, xq)`` is ``scipy.interpolate.Akima1DInterpolator(x,
    y, method=method)(xq, nu, extrapolate)``.

    ``x`` (n,) strictly increasing (n >= 2), ``y`` (n,), ``xq`` (m,) → (m,); leading axes are
    batch axes. ``method`` is "akima" (default) or "makima". As in SciPy, ``extrapolate``
    defaults to False: NaN outside ``[x[0], x[-1]]``. Values are SciPy's.

    Derivatives: in ``xq``, the interpolant's next derivative (every order, both modes; it
    is C¹); in ``y``, the Hermite evaluation's (linear) rules and SciPy's slope formula
    (weighted by the secant slopes' differences) differentiated in JAX: every order, except
    at its branch points (two equal neighbouring secant slopes, where the weights' absolute
    values have a kink, or SciPy's fallback for vanishing weights), where the derivative is
    the branch's own; in ``x``, exactly, as for ``PchipInterpolator`` (every order, both
    modes, the same branch points; outside ``[x[0], x[-1]]`` without extrapolation the value
    is NaN and its tangent in ``x`` 0). Parameters ``nu``, ``extrapolate`` and
    ``on_failure`` as for ``InterpSpline``.
    """

    method: str = "akima"

    default_extrapolate = False  # SciPy's, for extrapolate=None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in METHODS:
            raise ValueError(
                f"Akima1DInterpolator: parameter 'method' must be one of {METHODS}; got "
                f"{self.method!r}."
            )

    def interpolant(self, x, y):
        method = "makima" if self.method == "makima" else "akima"  # (a Literal for pyright)
        return scipy.interpolate.Akima1DInterpolator(x, y, method=method)

    def slopes(self, x, y):
        m = jnp.diff(y, axis=-1) / jnp.diff(x, axis=-1)
        if y.shape[-1] == 2:
            return jnp.concatenate([m, m], axis=-1)
        # two more secant slopes at each end, extrapolated linearly
        before = 2 * m[..., :1] - m[..., 1:2]
        after = 2 * m[..., -1:] - m[..., -2:-1]
        m = jnp.concatenate(
            [2 * before - m[..., :1], before, m, after, 2 * after - m[..., -1:]], axis=-1
        )
        fill = 0.5 * (m[..., 3:] + m[..., :-3])
        dm = jnp.abs(jnp.diff(m, axis=-1))
        f1, f2 = dm[..., 2:], dm[..., :-2]
        if self.method == "makima":
            pm = jnp.abs(m[..., 1:] + m[..., :-1])
            f1, f2 = f1 + 0.5 * pm[..., 2:], f2 + 0.5 * pm[..., :-2]
        f12 = f1 + f2
        defined = f12 > 1e-9 * jnp.max(f12, axis=-1, keepdims=True)
        weight = f2 / jnp.where(defined, f12, 1)
        weighted = m[..., 1:-2] + weight * (m[..., 2:-1] - m[..., 1:-2])
        return jnp.where(defined, weighted, fill)
