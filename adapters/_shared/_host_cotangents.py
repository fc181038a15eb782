"""Checking what a user's adapter returns when an adapter of ours calls its host methods
directly (an objective inside ``scipy.optimize``, an integrand inside ``scipy.integrate``).

There the bridge's own checks are not in the way, so a wrong shape would broadcast into a
wrong derivative without a word: a cotangent of shape ``(1,)`` for a parameter of shape
``(2,)`` would give both parameters the first one's derivative.
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np

import jaxbridge as jb
from jaxbridge.internal import arg_names


def checked(
    who: str, what: str, value: object, shape: tuple[int, ...], stacked: int = 0
) -> np.ndarray:
    """``value`` as a float64 array of ``shape``, zeros for None (a symbolic zero).

    ``who`` and ``what`` name it in the error (``"Quad's integrand F.backward"``, ``"the
    cotangent of 'theta'"``). The first ``stacked`` axes hold one result per stacked
    cotangent (a vectorized adapter's batch): there a missing axis or size 1 means the same
    for every cotangent, which only a zero can be. Every other axis must match exactly.
    """
    if _ready(value, shape):
        return value
    if value is None:
        return np.zeros(shape)
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"{who}: {what} has dtype {array.dtype}, expected real numbers.")
    padded = (1,) * (len(shape) - array.ndim) + array.shape
    fits = len(padded) == len(shape) and padded[stacked:] == shape[stacked:]
    fits = fits and all(p == s or (p == 1 and not array.any()) for p, s in zip(padded, shape))
    if not fits:
        raise ValueError(f"{who}: {what} has shape {array.shape}, expected {shape}.")
    return np.broadcast_to(array.astype(np.float64, copy=False), shape)


def cotangent(
    who: str,
    adapter: jb.Adapter,
    index: int,
    value: object,
    shape: tuple[int, ...],
    stacked: int = 0,
) -> np.ndarray:
    """``checked`` for the cotangent of argument ``index`` that ``adapter.backward`` returned
    (``who`` names the adapter in errors)."""
    if type(value) is np.ndarray and value.shape == shape and value.dtype == np.float64:
        return value  # (``_ready`` spelt out: called at every solver step, before any message)
    if value is None:  # a symbolic zero (an ODE rhs's for its time, at every step)
        return np.zeros(shape)
    name = arg_names(type(adapter))[index]
    return checked(f"{who}.backward", f"the cotangent of '{name}'", value, shape, stacked)


def _ready(value: object, shape: tuple[int, ...]) -> TypeGuard[np.ndarray]:
    """The common case: already a float64 array of ``shape``."""
    return type(value) is np.ndarray and value.shape == shape and value.dtype == np.float64
