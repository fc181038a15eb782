"""``PchipInterpolator``: the shape-preserving piecewise cubic (Fritsch–Carlson slopes)."""

from __future__ import annotations

import jax.numpy as jnp
import scipy.interpolate

from ._hermite import HermiteInterpolant


class PchipInterpolator(HermiteInterpolant):
    """SciPy's PCHIP interpolant through ``(x, y)`` evaluated at ``xq``:
    ``PchipInterpolator()(x, y, xq)`` is ``scipy.interpolate.PchipInterpolator(x, y)(xq, nu,
    extrapolate)``.

    ``x`` (n,) strictly increasing (n >= 2), ``y`` (n,), ``xq`` (m,) → (m,); leading axes are
    batch axes. Values are SciPy's.

    Derivatives: in ``xq``, the interpolant's next derivative (every order, both modes; it
    is C¹, so the second derivative jumps at the sites); in ``y``, the Hermite evaluation's
    (linear) rules and SciPy's slope formula (weighted harmonic means of the secant slopes,
    0 where they change sign, the one-sided three-point ends) differentiated in JAX: every
    order, except where the formula switches branch (a secant slope of 0 or a sign change),
    where the derivative is the branch's own; in ``x``, exactly: the Hermite evaluation's
    rule in the sites (its pieces stretched and shifted) and the slope formula differentiated
    in ``x`` (every order, both modes, the same branch points). Parameters ``nu``,
    ``extrapolate`` (default True) and ``on_failure`` as for ``InterpSpline``.
    """

    def interpolant(self, x, y):
        return scipy.interpolate.PchipInterpolator(x, y)

    def slopes(self, x, y):
        h = jnp.diff(x, axis=-1)
        m = jnp.diff(y, axis=-1) / h
        if y.shape[-1] == 2:
            return jnp.concatenate([m, m], axis=-1)
        left, right = m[..., :-1], m[..., 1:]
        flat = (jnp.sign(left) != jnp.sign(right)) | (left == 0) | (right == 0)
        w1 = 2 * h[..., 1:] + h[..., :-1]
        w2 = h[..., 1:] + 2 * h[..., :-1]
        # (the branch not taken gets harmless values, so that its derivative is finite)
        harmonic = (w1 / jnp.where(flat, 1, left) + w2 / jnp.where(flat, 1, right)) / (w1 + w2)
        inner = jnp.where(flat, 0, 1 / jnp.where(flat, 1, harmonic))
        first = _edge(h[..., 0], h[..., 1], m[..., 0], m[..., 1])
        last = _edge(h[..., -1], h[..., -2], m[..., -1], m[..., -2])
        return jnp.concatenate([first[..., None], inner, last[..., None]], axis=-1)


def _edge(h0, h1, m0, m1):
    """SciPy's one-sided three-point slope at an end, kept shape-preserving."""
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    opposite = jnp.sign(d) != jnp.sign(m0)
    overshoot = (jnp.sign(m0) != jnp.sign(m1)) & (jnp.abs(d) > 3 * jnp.abs(m0))
    return jnp.where(opposite, 0, jnp.where(overshoot, 3 * m0, d))
