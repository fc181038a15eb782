"""SciPy's argument forms that the adapters take as arrays: ``linprog``'s ``bounds`` (a
pair, a list of pairs, ``None`` entries, scalars) as ``lower`` and ``upper`` arrays, and
the refusal of such a form where an adapter takes arrays, so that no argument of SciPy's
form is read as something else (a list of pairs as a batch of lower bounds, say)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def bound_arrays(owner: str, bounds: Any, n: int, dtype: Any) -> tuple[jax.Array, jax.Array]:
    """``(lower, upper)``, (n,) each, from SciPy's ``bounds``: ``None`` (SciPy's default,
    ``(0, None)``), one ``(min, max)`` pair for every variable, a sequence of ``n`` pairs (or
    of one), where ``None`` is no bound; or an (n, 2) or (2,) array (differentiable)."""
    if bounds is None:
        bounds = (0, None)
    if isinstance(bounds, (jax.Array, np.ndarray)):
        array = jnp.asarray(bounds, dtype)
        if array.shape in ((2,), (1, 2), (n, 2)):
            pairs = jnp.broadcast_to(array, (n, 2))
            return pairs[:, 0], pairs[:, 1]
        raise ValueError(_shape_message(owner, n, array.shape))
    pairs = np.array(bounds, dtype=object)
    if pairs.shape in ((2,), (1, 2)):
        pairs = np.broadcast_to(pairs.reshape(1, 2), (n, 2))
    if pairs.shape != (n, 2):
        raise ValueError(_shape_message(owner, n, pairs.shape))
    lower = [-np.inf if v is None else v for v in pairs[:, 0]]
    upper = [np.inf if v is None else v for v in pairs[:, 1]]
    return _stacked(lower, dtype), _stacked(upper, dtype)


def _stacked(values: list, dtype: Any) -> jax.Array:
    """The entries (numbers, or JAX scalars that may be traced) as one (n,) array."""
    return jnp.stack([jnp.asarray(v, dtype) for v in values]) if values else jnp.zeros(0, dtype)


def refuse_scipy_bounds(owner: str, name: str, value: Any, instead: str) -> None:
    """Refuse SciPy's bounds (a list or tuple of pairs or arrays, or holding ``None``) given
    where ``owner`` takes an array: read as one array it would be a batch of ``name``s."""
    if not isinstance(value, (list, tuple)):
        return
    if any(v is None or isinstance(v, (list, tuple)) or np.ndim(v) > 0 for v in value):
        raise TypeError(
            f"{owner}: argument '{name}' looks like SciPy's bounds (pairs, arrays or None "
            f"entries); {owner} takes '{name}' as one array, a bound per variable. For "
            f"SciPy's form use {instead}."
        )


def _shape_message(owner: str, n: int, shape: tuple) -> str:
    return (
        f"{owner}: argument 'bounds' must be a (min, max) pair or {n} of them (one per "
        f"variable; None for no bound); got shape {shape}."
    )
