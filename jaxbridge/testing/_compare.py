"""Tolerances by dtype, and the comparison that says where and by how much two results differ."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Tolerance(NamedTuple):
    """``|got - expected| <= atol + rtol * scale``, where ``scale`` is the largest magnitude
    in either array: rounding errors scale with the largest values in play, so entries that
    cancel to nearly 0 are not held to a relative standard they cannot meet."""

    rtol: float
    atol: float


# "same": one computation by two routes (jit or eager, vmap or a loop, scan or a loop). The
# host runs the same code on the same numbers; only the order of sums may differ (a batched
# matmul against one at a time, XLA's sum of a broadcast argument's cotangent against
# NumPy's), which costs tens of ulps: 1e-5 is ~80 float32 ulps, 1e-12 ~4500 float64 ulps.
#
# "grad": the bridge's gradient, computed in the inputs' dtype, against central differences
# in float64 with steps of eps**(1/3) ~ 6e-6 of each entry's scale, which are good to ~1e-10
# of the gradient on the O(1), well-conditioned inputs the kit draws (truncation h**2 f'''/6,
# rounding eps/h). What is left is the backward's own rounding: in float64, 1e-6 leaves
# room for third derivatives 1e4 times larger than the inputs' scale suggests; in float32,
# 1e-4 (~800 ulps) for a backward that loses a factor n * condition number <= ~100.
_TOLERANCES = {
    np.dtype(np.float32): {"same": Tolerance(1e-5, 0.0), "grad": Tolerance(1e-4, 0.0)},
    np.dtype(np.float64): {"same": Tolerance(1e-12, 0.0), "grad": Tolerance(1e-6, 0.0)},
}


def tolerance(dtype: np.dtype, tier: str, rtol: float | None, atol: float | None) -> Tolerance:
    """The default tolerance of ``tier`` for ``dtype``, with the caller's overrides."""
    defaults = _TOLERANCES.get(np.dtype(dtype), {}).get(tier)
    if defaults is None and rtol is None:
        raise TypeError(
            f"check_adapter has default tolerances for float32 and float64 inputs only; "
            f"for {np.dtype(dtype)} pass `rtol` (and `atol`)."
        )
    default_rtol, default_atol = defaults or (0.0, 0.0)
    return Tolerance(default_rtol if rtol is None else rtol, default_atol if atol is None else atol)


def mismatch(got: object, expected: object, tol: Tolerance) -> str | None:
    """``None`` if ``got`` matches ``expected`` within ``tol``; otherwise a sentence saying
    where and by how much they differ. Integer arrays must be equal; NaN matches NaN."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return f"has shape {got.shape}, but the reference has shape {expected.shape}"
    if got.size == 0:
        return None
    exact = not (np.issubdtype(got.dtype, np.inexact) or np.issubdtype(expected.dtype, np.inexact))
    g, e = got.astype(np.float64), expected.astype(np.float64)
    same = (g == e) | (np.isnan(g) & np.isnan(e))
    finite = np.isfinite(g) & np.isfinite(e)
    if not np.all(same | finite):
        index = _where(~(same | finite))
        return f"is {got[index]} at index {index} where the reference is {expected[index]}"
    diff = np.where(finite, np.abs(g - e), 0.0)
    scale = float(np.max(np.where(finite, np.maximum(np.abs(g), np.abs(e)), 0.0)))
    allowed = 0.0 if exact else tol.atol + tol.rtol * scale
    worst = float(np.max(diff))
    if worst <= allowed:
        return None
    index = _where(diff == worst)
    return (
        f"differs by {worst:.3g} at index {index} ({_show(got[index])} against "
        f"{_show(expected[index])}); allowed: {allowed:.3g} = atol {tol.atol:g} + rtol "
        f"{tol.rtol:g} × {scale:.3g} (the largest magnitude), so it is off by "
        f"{worst / scale if scale else float('inf'):.2g} of that magnitude"
    )


def _where(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _show(value: np.ndarray) -> str:
    item = value.item()
    return f"{item:.9g}" if isinstance(item, float) else str(item)
