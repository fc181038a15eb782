"""What the filter adapters share: one SciPy call per distinct set of coefficients in a
batch, the causal convolutions and correlations of their rules (in JAX), and the domains
their tests draw from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._shared._coefficient_groups import CoefficientGroups


def per_filter(
    coefficients: Sequence[np.ndarray],
    ranks: Sequence[int],
    x: np.ndarray,
    apply: Callable[..., Any],
) -> np.ndarray:
    """``apply(*cores, xs)`` for every filter in a gufunc batch, in float64.

    ``coefficients`` each have leading batch axes before ``ranks`` core axes; ``x`` is
    (..., m). ``apply`` gets one filter's cores and every signal that uses that filter,
    stacked along the first axis, and filters along the last axis: SciPy's filters take
    ``axis`` but only one set of coefficients, so a batch of signals through one filter is
    one call, and a batch of filters is a loop.
    """
    float64 = [np.asarray(c, np.float64) for c in coefficients]
    groups = CoefficientGroups(float64, ranks, np.asarray(x, np.float64), 1)
    y = np.empty(groups.shape)
    for index in np.ndindex(*groups.coefficient_batch):
        groups.apply(index, lambda *args: (apply(*args),), y)
    return y


def convolve(c: jax.Array, s: jax.Array) -> jax.Array:
    """``Σₖ c[k] s[n-k]``, the causal convolution truncated to ``s``'s length: ``B s`` for
    the numerator ``c``, batched (leading axes broadcast)."""
    m = s.shape[-1]
    # (the k = 0 term always: with an empty signal it gives the empty result its shape)
    terms = [c[..., k : k + 1] * _delay(s, k) for k in range(min(c.shape[-1], max(m, 1)))]
    return sum(terms[1:], terms[0])


def correlate(u: jax.Array, s: jax.Array, size: int) -> jax.Array:
    """``Σₙ u[n] s[n-k]`` for ``k < size``: the cotangent of ``c`` in ``convolve(c, s)``
    for the output cotangent ``u``, batched (leading axes broadcast)."""
    m = s.shape[-1]
    batch = jnp.broadcast_shapes(u.shape[:-1], s.shape[:-1])
    lags = [
        (u[..., k:] * s[..., : m - k]).sum(-1) if k < m else jnp.zeros(batch, u.dtype)
        for k in range(size)
    ]
    return jnp.stack([jnp.broadcast_to(lag, batch) for lag in lags], axis=-1)


def convolve_adjoint(c: jax.Array, v: jax.Array) -> jax.Array:
    """``Σₖ c[k] v[j+k]``: the transpose of ``convolve(c, ·)`` applied to ``v``."""
    m = v.shape[-1]
    terms = [c[..., k : k + 1] * _advance(v, k) for k in range(min(c.shape[-1], max(m, 1)))]
    return sum(terms[1:], terms[0])


def reverse(s: jax.Array) -> jax.Array:
    return s[..., ::-1]


def _delay(s: jax.Array, k: int) -> jax.Array:
    pad = [(0, 0)] * (s.ndim - 1) + [(k, 0)]
    return jnp.pad(s[..., : s.shape[-1] - k], pad)


def _advance(s: jax.Array, k: int) -> jax.Array:
    pad = [(0, 0)] * (s.ndim - 1) + [(0, k)]
    return jnp.pad(s[..., k:], pad)


def stable_denominator(raw: np.ndarray) -> np.ndarray:
    """Denominators ``a`` with ``a[0]`` in [3/4, 5/4] and ``Σₖ₌₁ |a[k]| <= 1/2``, so every
    root of the filter's characteristic polynomial lies inside the unit circle (Rouché):
    stable filters, whose outputs and gradients stay of the inputs' size."""
    rest = raw[..., 1:] / (2 * max(raw.shape[-1] - 1, 1))
    return np.concatenate([1 + raw[..., :1] / 4, rest], axis=-1)


def check_leading(function: str, name: str, leading: np.ndarray) -> None:
    """Refuse a zero leading denominator coefficient, which SciPy divides by."""
    if not np.all(leading != 0):
        raise ValueError(
            f"{function}: the leading denominator coefficient {name} must be nonzero (the "
            "filter is normalised by it); got 0."
        )


def stable_sections(raw: np.ndarray) -> np.ndarray:
    """Sections with numerators in [-2, 2], ``a0`` in [3/4, 5/4] and ``|a1| + |a2| <= 1/2``:
    every section is stable (Rouché)."""
    return np.concatenate([2 * raw[..., :3], 1 + raw[..., 3:4] / 4, raw[..., 4:] / 4], axis=-1)
