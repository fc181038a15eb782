"""``SosFilter`` (``sosfilt``): a cascade of second-order sections with zero initial
conditions; its rules are the same cascade, reversed in time or with one section changed."""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.signal

import jaxbridge as jb

from .._shared._failure import require_finite
from .._shared._rules import compiled, total
from ._filtering import (
    check_leading,
    convolve,
    correlate,
    per_filter,
    reverse,
    stable_sections,
)


class SosFilter(jb.Adapter):
    """Filter ``x`` along its last axis with a cascade of second-order sections, as
    ``scipy.signal.sosfilt(sos, x)`` with zero initial conditions: ``y = sosfilt(sos, x)``.

    ``sos`` is (s, 6), one section ``[b0, b1, b2, a0, a1, a2]`` per row (the filter
    ``b / a``), ``x`` and ``y`` (m,). SciPy requires ``a0 = 1``; here each row is divided
    by its ``a0`` first, so any nonzero ``a0`` is accepted and has a gradient. Leading
    axes are batch axes that broadcast: a batch of signals through one cascade is one SciPy
    call. SciPy filters in float64 here; ``y`` takes the inputs' dtype. A NaN or inf in
    ``sos`` or ``x`` is a ``ValueError`` naming the argument.

    Derivatives: the sections commute (linear, time-invariant, zero initial conditions),
    so with ``wᵢ`` the cascade with section i's numerator replaced by 1 applied to ``x``,
    and ``zᵢ = y / aᵢ`` (section i's all-pole part applied to ``y``), the tangent is
    ``ẏ = sosfilt(sos, ẋ) + Σᵢ (ḃᵢ * wᵢ - ȧᵢ * zᵢ)`` (``*`` the causal convolution) and the
    cotangents are ``x̄ = reverse(sosfilt(sos, reverse(ḡ)))``,
    ``b̄ᵢ[k] = Σₙ ḡ[n] wᵢ[n-k]``, ``āᵢ[k] = -Σₙ ḡ[n] zᵢ[n-k]``. Each is a call of this
    adapter (on s cascades at once for ``wᵢ``), so derivatives of every order work in both
    modes; ``jax.linear_transpose`` works in ``x``.
    """

    signature = "(s,6),(m)->(m)"
    vectorized = True
    linear_in = ("x",)

    domains = {"sos": stable_sections}

    def output_specs(self, sos, x):
        return jax.ShapeDtypeStruct(x.shape[-1:], jb.result_dtype(sos, x))

    def check(self, sos, x):
        # here, not in forward: x̄ is the cascade on ḡ alone, so under jit(grad) in x XLA
        # drops the forward, the one call that reads x
        for name, value in (("sos", sos), ("x", x)):
            require_finite(f"sosfilt: argument '{name}'", value, ValueError)
        check_leading("sosfilt", "sos[:, 3]", sos[..., 3])

    def forward(self, sos, x):
        dtype = jb.result_dtype(sos, x)
        if 0 in x.shape or 0 in sos.shape:
            batch = np.broadcast_shapes(sos.shape[:-2], x.shape[:-1])
            return np.broadcast_to(np.asarray(x, dtype), (*batch, x.shape[-1])).copy()

        def apply(sos, xs):
            return scipy.signal.sosfilt(sos / sos[:, 3:4], xs, axis=-1)

        return per_filter([sos], [2], x, apply).astype(dtype)

    @compiled
    def pushforward(self, res, tangents):
        sos, x, y = res
        dsos, dx = tangents
        terms = [] if dx is None else [self(sos, dx)]
        if dsos is not None:
            w, z = _partials(self, sos, x, y)
            db, da = dsos[..., :3], dsos[..., 3:]
            terms.append((convolve(db, w) - convolve(da, z)).sum(-2))
        return total(terms)

    @compiled
    def pullback(self, res, g):
        sos, x, y = res
        w, z = _partials(self, sos, x, y)
        gs = g[..., None, :]
        dsos = jnp.concatenate([correlate(gs, w, 3), -correlate(gs, z, 3)], axis=-1)
        return dsos, reverse(self(sos, reverse(g)))


def _partials(sosfilt: SosFilter, sos: jax.Array, x: jax.Array, y: jax.Array):
    """``(w, z)``, (..., s, m) each: ``wᵢ`` the cascade with section i's numerator set to
    ``[1, 0, 0]`` applied to ``x``, ``zᵢ`` section i's all-pole filter ``1 / aᵢ`` applied to
    ``y``: two calls, on s cascades at once."""
    s = sos.shape[-2]
    one = jnp.zeros_like(sos[..., :3]).at[..., 0].set(1)  # the numerator 1, per section
    own = jnp.eye(s, dtype=bool)[:, :, None]  # row i of cascade i
    numerators = jnp.where(own, one[..., None, :, :], sos[..., None, :, :3])
    cascades = jnp.concatenate(
        [numerators, jnp.broadcast_to(sos[..., None, :, 3:], numerators.shape)], axis=-1
    )
    w = sosfilt(cascades, x[..., None, :])
    z = sosfilt(jnp.concatenate([one, sos[..., 3:]], axis=-1)[..., None, :], y[..., None, :])
    return w, z


sosfilt = SosFilter()
"""``scipy.signal.sosfilt`` (zero initial conditions) as a ready adapter: ``sosfilt(sos,
x)``."""
