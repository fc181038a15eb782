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
# in float64. Their own error (rounding, and truncation estimated with a second step) is
# allowed for entry by entry on top of this, so what is left is the backward's rounding: in
# float64, 1e-6 (backward errors are ~1e-13 on the kit's well-conditioned inputs, a 1% error
# is 1e-2); in float32, 1e-4 (~800 ulps) for a backward that loses a factor n * condition
# number <= ~100 of float32's precision.
#
# atol, for both: the smallest normal number. XLA runs host callbacks with subnormals flushed
# to zero (inputs and arithmetic), while an eager call or NumPy alone keeps them.
_TOLERANCES = {
    np.dtype(dtype): {
        "same": Tolerance(same, float(np.finfo(dtype).smallest_normal)),
        "grad": Tolerance(grad, float(np.finfo(dtype).smallest_normal)),
    }
    for dtype, same, grad in [(np.float32, 1e-5, 1e-4), (np.float64, 1e-12, 1e-6)]
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


def mismatch(
    got: object,
    expected: object,
    tol: Tolerance,
    labels: tuple[str, str] = ("got", "expected"),
    uncertainty: np.ndarray | None = None,
    least_scale: tuple[float, str] | None = None,
) -> str | None:
    """``None`` if ``got`` matches ``expected`` within ``tol``; otherwise a phrase saying
    where and by how much they differ, naming the two by ``labels``. Integer arrays must be
    equal; NaN matches NaN. ``uncertainty``, shaped like them, is how far ``expected`` itself
    may be off entry by entry (a finite difference's own error), and is allowed on top.
    ``least_scale``, a magnitude and what it is, is the least ``scale`` to take: for results
    that may cancel to far below the size of the terms they are computed from."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return f"has shape {got.shape} {labels[0]}, but {expected.shape} {labels[1]}"
    if got.size == 0:
        return None
    exact = not (np.issubdtype(got.dtype, np.inexact) or np.issubdtype(expected.dtype, np.inexact))
    g, e = got.astype(np.float64), expected.astype(np.float64)
    same = (g == e) | (np.isnan(g) & np.isnan(e))
    finite = np.isfinite(g) & np.isfinite(e)
    if not np.all(same | finite):
        index = _where(~(same | finite))
        return (
            f"differs at index {index}: {_show(got[index])} {labels[0]}, "
            f"{_show(expected[index])} {labels[1]}"
        )
    diff = np.where(finite, np.abs(g - e), 0.0)
    scale = float(np.max(np.where(finite, np.maximum(np.abs(g), np.abs(e)), 0.0)))
    scale_is = "the largest magnitude"
    if least_scale is not None and least_scale[0] > scale:
        scale, scale_is = least_scale
    slack = np.zeros(diff.shape) if uncertainty is None else np.asarray(uncertainty)
    allowed = 0.0 if exact else tol.atol + tol.rtol * scale
    excess = diff - (allowed + slack)
    if np.max(excess) <= 0:
        return None
    index = _where(excess == np.max(excess))
    worst = float(diff[index])
    extra = f" + {float(slack[index]):.3g} (their own error)" if uncertainty is not None else ""
    return (
        f"differs by {worst:.3g} at index {index} ({_show(got[index])} {labels[0]}, "
        f"{_show(expected[index])} {labels[1]}); allowed: {allowed + float(slack[index]):.3g} "
        f"= atol {tol.atol:.3g} + rtol {tol.rtol:g} × {scale:.3g} ({scale_is}){extra}, "
        f"so it is off by {worst / scale if scale else float('inf'):.2g} of that magnitude"
    )


def _where(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _show(value: np.ndarray) -> str:
    item = value.item()
    return f"{item:.9g}" if isinstance(item, float) else str(item)
