"""What the special-function adapters share: the result dtype, on the host and when traced."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def float_dtype(*specs: jax.ShapeDtypeStruct) -> np.dtype:
    """The declared result dtype: the inputs' floating one, or the default float for integer
    inputs (a Python float is weak, so float32 inputs stay float32)."""
    return jnp.result_type(*(s.dtype for s in specs), float)


def host_dtype(*arrays: np.ndarray) -> np.dtype:
    """``float_dtype`` on the host, from NumPy alone (host code never calls JAX): the
    floating inputs' common dtype; for integer inputs alone, float64 if any is 64-bit
    (JAX's 64-bit mode) and float32 otherwise."""
    floating = [a.dtype for a in arrays if np.issubdtype(a.dtype, np.floating)]
    if floating:
        return np.result_type(*floating)
    return np.dtype(np.float64 if any(a.dtype.itemsize > 4 for a in arrays) else np.float32)
