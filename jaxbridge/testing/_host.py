"""Calling an adapter's ``forward`` directly on NumPy arrays, bypassing JAX and the bridge.

The checks use it to see what the host really returns (before the bridge casts or checks
it) and to take finite differences in float64 whatever JAX's precision mode is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxbridge import Adapter
from jaxbridge.internal import batch_element, on_numpy


def padded(args: Sequence[np.ndarray], ranks: Sequence[int]) -> list[np.ndarray]:
    """``args`` with their leading (batch) axes padded with 1s to the same number, as the
    bridge hands them to a vectorized adapter."""
    loop = max((a.ndim - r for a, r in zip(args, ranks)), default=0)
    return [a.reshape((1,) * (loop - (a.ndim - r)) + a.shape) for a, r in zip(args, ranks)]


def forward_items(
    adapter: Adapter, args: Sequence[np.ndarray], ranks: Sequence[int], **told: bool
) -> list:
    """Whatever one call of ``adapter.forward`` returns, as a list: outputs, then residuals
    (``told``: ``residuals=False``, as a call that is not differentiated passes it)."""
    got = on_numpy(adapter, "forward")(*padded(args, ranks), **told)
    return list(got) if isinstance(got, (tuple, list)) else [got]


def outputs(
    adapter: Adapter,
    args: Sequence[np.ndarray],
    ranks: Sequence[int],
    output_ranks: Sequence[int],
) -> list[np.ndarray]:
    """The outputs of one gufunc-style call on the host, batch axes in front.

    A vectorized adapter gets one call; any other gets one call per batch element.
    """
    loop = np.broadcast_shapes(*(a.shape[: a.ndim - r] for a, r in zip(args, ranks)))
    n_out = len(output_ranks)

    def shaped(items: list, batch: tuple[int, ...]) -> list[np.ndarray]:
        arrays = [np.asarray(v) for v in items[:n_out]]
        return [
            np.broadcast_to(v, batch + v.shape[v.ndim - r :]) for v, r in zip(arrays, output_ranks)
        ]

    if type(adapter).vectorized or not loop:
        return shaped(forward_items(adapter, args, ranks), loop)
    results: list[np.ndarray] = []
    for index in np.ndindex(*loop):
        element = [a[batch_element(index, a.shape[: a.ndim - r])] for a, r in zip(args, ranks)]
        values = shaped(forward_items(adapter, element, ranks), ())
        if not results:
            results = [np.empty(loop + v.shape, v.dtype) for v in values]
        for result, value in zip(results, values):
            result[index] = value
    return results
