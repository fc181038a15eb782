"""The second derivatives of a user's rhs or integrand that the second-order rules need, on
the host: how its ``backward`` moves along a direction of its inputs (forward over reverse),
from the adapter's own ``backward_jvp`` hook, or else from differences of its exact
``backward``, extrapolated.

SciPy's loops call the user's host methods directly (never JAX, which could hang there), so
rules the adapter writes in JAX (``pullback``, ``pushforward``) are not used here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._shared._host_cotangents import checked
from .._shared._user_function import UserFunction

STEP = float(np.finfo(np.float64).eps) ** (1 / 5)
"""The larger step of the differences, relative to ``max(1, |args|)`` along the unit
direction: 7e-4, where a central difference at ``h`` and ``h / 2`` extrapolated once
(error ``O(h⁴)``) balances truncation and rounding near 1e-12 relative on a function whose
scale is 1."""

HOOK = "backward_jvp"
"""The host method an rhs or integrand may define for exact second derivatives:
``backward_jvp(self, res, g, tangents)``, the derivative of ``backward(res, g)`` along
``tangents`` (one per input, None for zero), ``g`` held fixed; one array (or None) per
input."""


def backward_jvp(
    host: UserFunction,
    args: Sequence[np.ndarray],
    g: np.ndarray,
    tangents: Sequence[np.ndarray | None],
) -> list[np.ndarray]:
    """``d/dε backward(args + ε tangents, g)`` at ``ε = 0``: one float64 array per argument.

    The adapter's ``backward_jvp`` if it defines one (exact); else central differences of
    ``backward`` at steps ``h`` and ``h / 2`` along the direction, combined by Richardson's
    rule (4 forward and backward calls, about 1e-12 relative on a smooth function): a fixed
    linear combination of exact first derivatives, so the result is as smooth in ``args``
    as they are (an ODE solver's error control sees no switching)."""
    host.needs("backward", "a second derivative")
    shapes = [np.shape(a) for a in args]
    hook = getattr(host.adapter, HOOK, None)
    if callable(hook):
        got = hook(host.residuals(args), g, tuple(tangents))
        if not isinstance(got, (tuple, list)) or len(got) != len(args):
            raise TypeError(
                f"{host.name}.{HOOK} must return a tuple of {len(args)} arrays (one per "
                f"input, None for zero), got {type(got).__name__}."
            )
        return [
            np.zeros(shape)
            if value is None
            else checked(f"{host.name}.{HOOK}", f"entry {i}", value, shape)
            for i, (value, shape) in enumerate(zip(got, shapes))
        ]
    moving = [(i, np.asarray(t, np.float64)) for i, t in enumerate(tangents) if t is not None]
    size = max((float(np.max(np.abs(t))) for _, t in moving if t.size), default=0.0)
    if size == 0.0:
        return [np.zeros(shape) for shape in shapes]
    scale = max([1.0] + [float(np.max(np.abs(args[i]))) for i, t in moving if t.size])
    h = STEP * scale / size

    def at(step: float) -> list[np.ndarray]:
        moved = list(args)
        for i, t in moving:
            moved[i] = np.asarray(args[i], np.float64) + step * t
        return host.pullback(host.residuals(moved), g, len(args))

    wide = [p - m for p, m in zip(at(h), at(-h))]
    narrow = [p - m for p, m in zip(at(h / 2), at(-h / 2))]
    return [(8 * n - w) / (6 * h) for n, w in zip(narrow, wide)]
