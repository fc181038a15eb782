"""``result_dtype``: the one rule for the dtype of an adapter's floating results."""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np


def result_dtype(*values: Any) -> np.dtype:
    """The dtype of floating results computed from ``values`` (arrays or
    ``jax.ShapeDtypeStruct``): the floating ones' common dtype, float64 if none is floating.

    Both sides of the bridge use it: ``output_specs`` declares it, and the bridge narrows
    that to float32 when JAX's 64-bit mode is off; ``forward`` computes in it on the host,
    where 64-bit mode cannot be seen (an int32 argument is int32 either way), so integer
    and bool arguments compute in float64, never narrower than what is declared. Float32
    arguments compute and return float32.
    """
    floating = [np.dtype(v.dtype) for v in values if jnp.issubdtype(v.dtype, jnp.floating)]
    if not floating:
        return np.dtype(np.float64)
    # promote_types, unlike result_type, ignores 64-bit mode: the host's answer, too
    return functools.reduce(jnp.promote_types, floating)
