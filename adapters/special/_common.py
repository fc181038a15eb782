"""What the special-function adapters share: the result dtype on the host (``float_dtype``,
the declared one, is the solvers')."""

from __future__ import annotations

import numpy as np

from ..linalg._solving import float_dtype as float_dtype


def host_dtype(*arrays: np.ndarray) -> np.dtype:
    """``float_dtype`` on the host, from NumPy alone (host code never calls JAX): the
    floating inputs' common dtype; for integer inputs alone, float64 if any is 64-bit
    (JAX's 64-bit mode) and float32 otherwise."""
    floating = [a.dtype for a in arrays if np.issubdtype(a.dtype, np.floating)]
    if floating:
        return np.result_type(*floating)
    return np.dtype(np.float64 if any(a.dtype.itemsize > 4 for a in arrays) else np.float32)
