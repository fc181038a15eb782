"""Central finite differences: of a random projection of an adapter's outputs, entry by entry
(for gradients), and of any function along a direction (for tangents and Hessian-vector
products), each with an estimate of its own error."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from jaxbridge import Domain

from . import _host
from ._domains import room

_EPS = float(np.finfo(np.float64).eps)
_STEP = _EPS ** (1 / 3)  # balances truncation (h**2) and rounding (eps/h)
# How many ulps of its terms' magnitude a forward's projected value may be off by: its sum
# rounds, and so does the forward itself, by a few ulps times its condition number.
_ROUNDING = 100.0
# The least scale a step is taken relative to: an entry of 1e-26 in an argument of such
# entries would otherwise get a step that moves a function of unit scale by less than its
# rounding. Functions whose own scale is below ~1e-3 need inputs with entries above this.
_LEAST_SCALE = 1e-2

Direction = tuple[tuple[int, ...], ...]  # entries moved together, by the same step


def directions(domain: Domain, shape: tuple[int, ...]) -> Iterator[Direction]:
    """The directions to perturb an input of ``domain`` along: one entry at a time, or for a
    symmetric domain (a function of symmetric matrices only), an entry and its mirror image
    together, so that the input stays symmetric."""
    if not domain.symmetric:
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
) -> Callable[[Sequence[np.ndarray]], tuple[float, float]]:
    """``args -> (sum over outputs of <ct, output>, sum of |ct * output|)`` on the host, in
    float64. The second is the scale of the first's rounding error.

    ``cts`` has one cotangent per output, ``None`` for integer outputs. Raises
    ``AssertionError`` if ``forward`` does not compute in float64 when given float64.
    """
    cts64 = [None if c is None else np.asarray(c, np.float64) for c in cts]
    wanted = [i for i, c in enumerate(cts) if c is not None]
    outputs = outputs64(adapter, ranks, output_ranks, wanted)

    def value(values: Sequence[np.ndarray]) -> tuple[float, float]:
        total, magnitude = 0.0, 0.0
        for out, i in zip(outputs(values), wanted):
            terms = cts64[i] * out
            total += float(np.sum(terms))
            magnitude += float(np.sum(np.abs(terms)))
        return total, magnitude

    return value


def outputs64(
    adapter: object, ranks: Sequence[int], output_ranks: Sequence[int], wanted: Sequence[int]
) -> Callable[[Sequence[np.ndarray]], list[np.ndarray]]:
    """``args -> the outputs at indices wanted``, computed by ``forward`` on the host from
    float64 arguments. Raises ``AssertionError`` if they are not float64."""

    def outputs(values: Sequence[np.ndarray]) -> list[np.ndarray]:
        outs = _host.outputs(adapter, values, ranks, output_ranks)  # type: ignore[arg-type]
        for i in wanted:
            if outs[i].dtype != np.float64:
                raise AssertionError(
                    f"forward returns output {i} as {outs[i].dtype} for float64 inputs, so "
                    "finite differences in float64 cannot be taken; a forward should compute "
                    "in its inputs' precision"
                )
        return [outs[i] for i in wanted]

    return outputs


def finite_differences(
    value: Callable[[Sequence[np.ndarray]], tuple[float, float]],
    args: Sequence[np.ndarray],
    index: int,
    domain: Domain,
    gradient: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compare ``gradient``, the gradient of ``value`` in ``args[index]``, with central
    differences along ``directions``.

    Returns three arrays shaped like that argument, holding for each direction at its first
    entry (0 elsewhere): the gradient's projection on it, its central difference with step
    ``h``, and how far that difference may be off: its rounding, ``_ROUNDING * eps * |terms
    of value| / h``, plus its truncation error, estimated from a second difference with step
    ``2 h`` (the error grows as ``h**2``, so it is a third of the two's gap; twice that is
    allowed). ``h`` is ``eps**(1/3)`` of the entry's scale (the largest of its magnitude, the
    argument's root mean square and ``_LEAST_SCALE``), and at most a quarter of the room the
    domain leaves, so that neither step crosses ReLU's kink at 0, say.
    """
    x = np.asarray(args[index], np.float64)
    limits = room(domain, x)
    rms = float(np.sqrt(np.mean(x**2))) if x.size else 0.0
    projections, differences, uncertainty = np.zeros(x.shape), np.zeros(x.shape), np.zeros(x.shape)
    for direction in directions(domain, x.shape):
        first = direction[0]
        scale = max(abs(x[first]), rms, _LEAST_SCALE)
        step = min(_STEP * scale, min(limits[i] for i in direction) / 4)
        values, magnitude = {}, 0.0
        for multiple in (1.0, -1.0, 2.0, -2.0):
            moved = x.copy()
            for i in direction:
                moved[i] += multiple * step
            values[multiple], terms = value([*args[:index], moved, *args[index + 1 :]])
            magnitude = max(magnitude, terms)
        short = (values[1.0] - values[-1.0]) / (2 * step)
        long = (values[2.0] - values[-2.0]) / (4 * step)
        differences[first] = short
        uncertainty[first] = _ROUNDING * _EPS * magnitude / step + 2 * abs(long - short) / 3
        projections[first] = sum(float(gradient[i]) for i in direction)
    return projections, differences, uncertainty


def directional_step(
    domains: Sequence[Domain],
    args: Sequence[np.ndarray],
    direction: Mapping[int, np.ndarray],
    eps: float = _EPS,
) -> float:
    """The step ``h`` for central differences along ``direction`` (argument ``i`` moving by
    ``h * direction[i]``, with directions scaled like their arguments): ``eps**(1/3)``, the
    balance of truncation and rounding for a function computed to ``eps``, and at most a
    quarter of the room each argument's domain leaves (measured entry by entry, or for a
    square domain by the direction's Frobenius norm), so that neither step leaves it."""
    step = eps ** (1 / 3)
    for i, t in direction.items():
        t = np.abs(np.asarray(t, np.float64))
        if domains[i].square:
            t = np.broadcast_to(np.sqrt(np.sum(t**2, axis=(-2, -1)))[..., None, None], t.shape)
        limits = room(domains[i], np.asarray(args[i], np.float64))
        moving = t > 0
        if np.any(moving):
            step = min(step, float(np.min(limits[moving] / t[moving])) / 4)
    return step


def moved(
    args: Sequence[np.ndarray], direction: Mapping[int, np.ndarray], multiple: float
) -> list[np.ndarray]:
    """``args`` with argument ``i`` moved by ``multiple * direction[i]``, in float64."""
    out = list(args)
    for i, t in direction.items():
        out[i] = np.asarray(args[i], np.float64) + multiple * np.asarray(t, np.float64)
    return out


STEPS = (1.0, -1.0, 2.0, -2.0)
"""The multiples of the step ``h`` at which ``central_difference`` needs values."""


def central_difference(
    values: Mapping[float, Sequence[np.ndarray]], step: float, eps: float = _EPS
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The derivative along a direction of a function of arrays, from its ``values`` at the
    multiples ``STEPS`` of ``step`` along it, and how far each entry may be off.

    Returns, per array: the central difference with step ``h``, and its error bound:
    rounding, ``_ROUNDING * eps * (the array's largest magnitude) / h`` for a function
    computed to ``eps``, plus twice the truncation error estimated from the difference with
    step ``2 h`` (a third of the two's gap, as in ``finite_differences``).
    """
    short, uncertainty = [], []
    for plus, minus, plus2, minus2 in zip(*(values[m] for m in STEPS)):
        arrays = [np.asarray(v, np.float64) for v in (plus, minus, plus2, minus2)]
        first = (arrays[0] - arrays[1]) / (2 * step)
        second = (arrays[2] - arrays[3]) / (4 * step)
        magnitude = max((float(np.max(np.abs(a))) for a in arrays if a.size), default=0.0)
        short.append(first)
        uncertainty.append(_ROUNDING * eps * magnitude / step + 2 * np.abs(second - first) / 3)
    return short, uncertainty
