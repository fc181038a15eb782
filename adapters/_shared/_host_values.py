"""Host values with JAX's derivatives: what the rules use where a value computed in JAX in
float32 (or on a TPU, whose ``exp`` and ``log`` round otherwise) would lose digits that the
host's float64 keeps."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def host_factor(host, log_factor):
    """``host`` (a residual: the host's float64 value of ``exp(log_factor)``, rounded once) with
    the derivatives of ``exp(log_factor)`` to every order: ``host · exp(E - E)``, the second
    ``E`` held constant (``stop_gradient``: a constant of the rules, whose derivative the
    first ``E`` carries). Where ``E`` is not finite (outside the support: the factor is 0 or
    inf there) no derivative."""
    finite = jnp.isfinite(log_factor)
    moved = log_factor - jax.lax.stop_gradient(log_factor)
    return jax.lax.stop_gradient(host) * jnp.exp(jnp.where(finite, moved, 0.0))


def host_valued(host_value, traced):
    """``host_value`` (SciPy's, a residual: a constant of the rules, as ``stop_gradient``
    says) as the value, ``traced``'s derivatives (JAX's)."""
    return jax.lax.stop_gradient(host_value) + (traced - jax.lax.stop_gradient(traced))
