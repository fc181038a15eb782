"""Queries of one point, as SciPy takes them: a scalar for a 1-D interpolant, one point of
``d`` coordinates for the others, the result a scalar too. It is what ``jax.vmap`` of a
function of one query point hands the interpolant (``vmap(grad(lambda t: f(x, y, t)))``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np


def per_point(call: Callable[[Any], Any], query: Any, point_rank: int) -> Any:
    """``call(query)``; for a ``query`` of one point (rank ``point_rank``: 0 for 1-D
    interpolants, 1 for the others), a batch of one point whose axis the result drops."""
    if np.ndim(query) != point_rank:
        return call(query)
    return call(jnp.expand_dims(jnp.asarray(query), 0))[..., 0]
