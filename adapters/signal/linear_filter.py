"""``LinearFilter`` (``lfilter``): an IIR filter ``y = (b / a) x`` with zero initial
conditions; its rules are the all-pole filter ``1 / a`` again."""

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
    convolve_adjoint,
    correlate,
    per_filter,
    reverse,
    stable_denominator,
)


class LinearFilter(jb.Adapter):
    """Filter ``x`` along its last axis with the rational transfer function ``b / a``, as
    ``scipy.signal.lfilter(b, a, x)`` with zero initial conditions: ``y = lfilter(b, a, x)``.

    ``b`` is (nb,), ``a`` (na,), ``x`` and ``y`` (m,): ``y`` solves the difference equation
    ``Σₖ a[k] y[n-k] = Σₖ b[k] x[n-k]``. ``a[0]`` must be nonzero (SciPy divides ``b`` and
    ``a`` by it; any value is fine here and has a gradient). Leading axes are batch axes
    that broadcast: a batch of signals through one filter is one SciPy call. SciPy filters
    in float64 here (exact to rounding for a stable ``a``); ``y`` takes the inputs' dtype. A
    NaN or inf in ``b``, ``a`` or ``x`` is a ``ValueError`` naming the argument.

    Derivatives, with ``A`` and ``B`` the causal convolutions by ``a`` and ``b``: the
    tangent is ``ẏ = A⁻¹ (B ẋ + Ḃ x - Ȧ y)``; the cotangents are ``x̄ = Bᵀ v``,
    ``b̄[k] = Σₙ v[n] x[n-k]`` and ``ā[k] = -Σₙ v[n] y[n-k]`` with ``v = A⁻ᵀ ḡ``, the
    all-pole filter ``1 / a`` run backwards in time. Each is one call of this adapter, so
    derivatives of every order work in both modes; ``jax.linear_transpose`` works in ``x``.
    """

    signature = "(nb),(na),(m)->(m)"
    vectorized = True
    domains = {"a": stable_denominator}
    linear_in = ("x",)

    def output_specs(self, b, a, x):
        if a.shape[-1] == 0:
            raise ValueError("LinearFilter: 'a' is empty; it needs its leading coefficient a[0].")
        if b.shape[-1] == 0:  # (as SciPy; checked here, before any rule is traced)
            raise ValueError(
                "LinearFilter: 'b' is empty; it needs at least one coefficient (b = [0.0] for "
                "the filter whose output is zero)."
            )
        return jax.ShapeDtypeStruct(x.shape[-1:], jb.result_dtype(b, a, x))

    def check(self, b, a, x):
        # here, not in forward: the rules need neither y nor a host call that reads b or x
        # (x̄ = Bᵀ A⁻ᵀ ḡ), so under jit(grad) XLA drops the forward
        for name, value in (("b", b), ("a", a), ("x", x)):
            require_finite(f"lfilter: argument '{name}'", value, ValueError)
        check_leading("lfilter", "a[0]", a[..., 0])

    def forward(self, b, a, x):
        dtype = jb.result_dtype(b, a, x)
        if 0 in x.shape:
            batch = np.broadcast_shapes(b.shape[:-1], a.shape[:-1], x.shape[:-1])
            return np.zeros((*batch, x.shape[-1]), dtype)

        def apply(b, a, xs):
            return scipy.signal.lfilter(b, a, xs, axis=-1)

        return per_filter([b, a], [1, 1], x, apply).astype(dtype)

    @compiled
    def pushforward(self, res, tangents):
        b, a, x, y = res
        db, da, dx = tangents
        rhs = total(
            (
                None if dx is None else convolve(b, dx),
                None if db is None else convolve(db, x),
                None if da is None else -convolve(da, y),
            )
        )
        return None if rhs is None else _all_pole(self, a, rhs)

    @compiled
    def pullback(self, res, g):
        b, a, x, y = res
        v = reverse(_all_pole(self, a, reverse(g)))
        return (
            correlate(v, x, b.shape[-1]),
            -correlate(v, y, a.shape[-1]),
            convolve_adjoint(b, v),
        )


def _all_pole(lfilter: LinearFilter, a: jax.Array, s: jax.Array) -> jax.Array:
    """``A⁻¹ s``: the filter ``1 / a`` with ``a``'s own leading coefficient."""
    return lfilter(jnp.ones_like(a[..., :1]), a, s)


lfilter = LinearFilter()
"""``scipy.signal.lfilter`` (zero initial conditions) as a ready adapter: ``lfilter(b, a,
x)``."""
