"""Central finite differences in float64 of a random projection of an adapter's outputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from . import _host
from ._domains import room

_STEP = np.finfo(np.float64).eps ** (1 / 3)  # balances truncation (h**2) and rounding (eps/h)

Direction = tuple[tuple[int, ...], ...]  # entries moved together, by the same step


def directions(kind: str, shape: tuple[int, ...]) -> Iterator[Direction]:
    """The directions to perturb an input of ``kind`` along: one entry at a time, or for a
    symmetric positive definite matrix (a function of symmetric matrices only), an entry and
    its mirror image together, so that the input stays symmetric."""
    if kind != "spd":
        for index in np.ndindex(*shape):
            yield (index,)
        return
    n = shape[-1]
    for lead in np.ndindex(*shape[:-2]):
        for i in range(n):
            for j in range(i, n):
                yield ((*lead, i, j),) if i == j else ((*lead, i, j), (*lead, j, i))


def projected(
    adapter: object,
    args: Sequence[np.ndarray],
    ranks: Sequence[int],
    output_ranks: Sequence[int],
    cts: Sequence[np.ndarray | None],
) -> Callable[[Sequence[np.ndarray]], float]:
    """``args -> sum over outputs of <ct, output>`` on the host, in float64.

    ``cts`` has one cotangent per output, ``None`` for integer outputs. Raises
    ``AssertionError`` if ``forward`` does not compute in float64 when given float64.
    """
    cts64 = [None if c is None else np.asarray(c, np.float64) for c in cts]

    def value(values: Sequence[np.ndarray]) -> float:
        outs = _host.outputs(adapter, values, ranks, output_ranks)  # type: ignore[arg-type]
        total = 0.0
        for i, (out, ct) in enumerate(zip(outs, cts64)):
            if ct is None:
                continue
            if out.dtype != np.float64:
                raise AssertionError(
                    f"forward returns output {i} as {out.dtype} for float64 inputs, so "
                    "finite differences in float64 cannot be taken; a forward should compute "
                    "in its inputs' precision"
                )
            total += float(np.sum(ct * out))
        return total

    return value


def finite_differences(
    value: Callable[[Sequence[np.ndarray]], float],
    args: Sequence[np.ndarray],
    index: int,
    kind: str,
    gradient: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Compare ``gradient``, the gradient of ``value`` in ``args[index]``, with central
    differences along ``directions``.

    Returns two arrays shaped like that argument: the gradient's projection on each direction
    and its finite difference, stored at the direction's first entry (0 elsewhere). Steps are
    ``eps**(1/3)`` of the entry's scale, and at most a quarter of the room the domain leaves
    (so that a step never crosses ReLU's kink at 0, say).
    """
    x = np.asarray(args[index], np.float64)
    limits = room(kind, x)
    rms = float(np.sqrt(np.mean(x**2))) if x.size else 0.0
    projections = np.zeros(x.shape)
    differences = np.zeros(x.shape)
    for direction in directions(kind, x.shape):
        first = direction[0]
        scale = max(abs(x[first]), rms) or 1.0
        step = min(_STEP * scale, min(limits[i] for i in direction) / 4)
        shifted = []
        for sign in (1.0, -1.0):
            moved = x.copy()
            for i in direction:
                moved[i] += sign * step
            shifted.append(value([*args[:index], moved, *args[index + 1 :]]))
        differences[first] = (shifted[0] - shifted[1]) / (2 * step)
        projections[first] = sum(float(gradient[i]) for i in direction)
    return projections, differences
