"""Second derivatives as differences of exact first derivatives, extrapolated by Ridders'
method: one column after another, or every column's points of a round together, which a
vectorized adapter evaluates in one call (a Hessian of n columns in a dozen host calls
instead of a dozen per column). Host code only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

FD_STEP = float(np.finfo(np.float64).eps) ** (1 / 5)
"""The first, largest step of the differences, relative to ``max(1, |x_j|)``: 7e-4, where
Richardson's extrapolation of steps ``h`` and ``h / 2`` balances truncation and rounding at
about 1e-12 on a function whose scale is 1. Ridders' method goes on to smaller steps while
that improves the estimate, so a function that varies on a smaller scale is differentiated
as well."""

RIDDERS_STEPS = 12
"""At most this many steps, each half the one before: down to ``FD_STEP / 2048``."""

ROUGH_STEP = float(np.finfo(np.float64).eps) ** (1 / 2)
"""The step of a rough column's single difference, one-sided, relative to ``max(1,
|x_j|)``: 1.5e-8, where a forward difference's truncation and rounding balance at about
1e-8 on a function whose scale is 1. Good enough for the matrix of Newton steps, which need
only converge, and for checks a hundred times coarser (``SCREEN``), at 1 evaluation per
``x_j`` (the value at ``x`` is at hand) instead of 4 to 24."""


def derivative_columns(
    x: np.ndarray,
    size: int,
    base: Callable[[], np.ndarray],
    first: Callable[[np.ndarray], np.ndarray],
    box: tuple[np.ndarray, np.ndarray] | None,
    rough: bool,
    firsts: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """``∂d/∂x_j`` for every ``j``, as the columns of a (size, n) array, where ``d(x)`` is a
    flat vector of ``size`` first derivatives, ``base()`` its value at ``x`` (asked for at
    most once, and only by a one-sided difference), ``first(point)`` its value at a point,
    and ``firsts(points)``, where one call can take many, its values at a stack of points
    (one row each).

    Each column by Ridders' method: differences with steps ``h``, ``h / 2``, ``h / 4``, ...,
    from ``h = FD_STEP * max(1, |x_j|)``, extrapolated to step 0 (Neville's tableau),
    stopping when the estimates' error grows (rounding has taken over); the estimate with
    the smallest error wins. Central differences, but one-sided into the ``box`` where
    ``x_j`` is within ``h`` of a bound (the function may be undefined beyond it), with ``h``
    no larger than the room there. ``rough``: one one-sided difference of step
    ``ROUGH_STEP * max(1, |x_j|)`` (into the box, where there is one).

    With ``firsts``, the columns go together: a round asks it once for the points of every
    column still refining its estimate (``_together``). Without, one column after another,
    one call per point (``_column``): the same rule, with a column's bookkeeping in
    scalars, which costs less than whole-array work on a handful of columns.
    """
    n = x.shape[-1]
    h = _first_step(x, rough)
    step = h  # the first point's offset: h (central), or ±h into the box
    central = ~one_sided(x, box, rough)
    if box is not None:
        below, above = x - box[0], box[1] - x
        room = np.maximum(below, above)  # (none: as unbounded)
        h = np.where(central | ~(room > 0), h, np.minimum(h, room))
        step = np.where(~central & (above < below), -h, h)
    base = functools.cache(base)
    if firsts is not None:
        return _together(x, size, base, firsts, step, central, rough)
    columns = [
        _column(x, j, base, first, float(step[j]), bool(central[j]), rough) for j in range(n)
    ]
    return np.stack(columns, axis=-1) if columns else np.zeros((size, 0))


def one_sided(x: np.ndarray, box: tuple[np.ndarray, np.ndarray] | None, rough: bool) -> np.ndarray:
    """Which columns ``derivative_columns`` differences one-sided: every rough one, and
    those whose ``x_j`` is within the first step of a bound of the ``box`` (and has room on
    the other side; with none, as unbounded)."""
    if rough:
        return np.ones(x.shape[-1], bool)
    if box is None:
        return np.zeros(x.shape[-1], bool)
    below, above = x - box[0], box[1] - x
    return (np.minimum(below, above) < _first_step(x, rough)) & (np.maximum(below, above) > 0)


def _first_step(x: np.ndarray, rough: bool) -> np.ndarray:
    return (ROUGH_STEP if rough else FD_STEP) * np.maximum(1.0, np.abs(x))


def _column(
    x: np.ndarray,
    j: int,
    base: Callable[[], np.ndarray],
    first: Callable[[np.ndarray], np.ndarray],
    step: float,
    central: bool,
    rough: bool,
) -> np.ndarray:
    """Column ``j`` alone (see ``derivative_columns``)."""

    def difference(step: float) -> np.ndarray:
        moved = x.copy()
        moved[j] += step
        if not central:
            return (first(moved) - base()) / step
        plus = first(moved)
        moved[j] = x[j] - step
        return (plus - first(moved)) / (2 * step)

    # the error of a difference runs in powers of h² (central) or of h (one-sided)
    ratio = 4.0 if central else 2.0
    rows = [difference(step)]
    if rough:
        return rows[0]
    best, error = rows[0], np.inf
    for _ in range(RIDDERS_STEPS - 1):
        step /= 2
        new, factor = [difference(step)], ratio
        for previous in rows:  # Neville: eliminate one more power of h each time
            new.append((factor * new[-1] - previous) / (factor - 1))
            factor *= ratio
            change = max(_largest(new[-1] - new[-2]), _largest(new[-1] - previous))
            if change <= error:
                best, error = new[-1], change
        if _largest(new[-1] - rows[-1]) >= 2 * error:
            break  # rounding now dominates: smaller steps only get worse
        rows = new
    return best


def _together(
    x: np.ndarray,
    size: int,
    base: Callable[[], np.ndarray],
    firsts: Callable[[np.ndarray], np.ndarray],
    step: np.ndarray,
    central: np.ndarray,
    rough: bool,
) -> np.ndarray:
    """Every column, a round of differences at a time (see ``derivative_columns``): the
    columns still refining share the tableau's depth, so a round is whole-array work."""
    n = x.shape[-1]
    step = step.copy()
    ratio = np.where(central, 4.0, 2.0)[:, None]
    best, error = np.empty((n, size)), np.full(n, np.inf)
    active = np.arange(n)
    rows = np.zeros((0, n, size))  # the active columns' last row of the tableau
    for _ in range(1 if rough else RIDDERS_STEPS):
        if not active.size:
            break
        difference = _differences(x, base, firsts, active, step[active], central[active])
        step[active] /= 2
        if not len(rows):
            rows = difference[None]
            best[active] = difference
            continue
        r = ratio[active]
        new, factor = [difference], r
        for previous in rows:  # Neville, as in ``_column``
            new.append((factor * new[-1] - previous) / (factor - 1))
            factor = factor * r
        # each new estimate's error: its change from the two it came from; the estimate
        # with the smallest error so far wins (the later one on a tie)
        tableau = np.stack(new)
        change = np.maximum(
            np.abs(tableau[1:] - tableau[:-1]).max(-1), np.abs(tableau[1:] - rows).max(-1)
        )
        err = np.fmin(error[active], np.fmin.reduce(change, 0))
        last = len(change) - 1 - np.argmax((change == err)[::-1], 0)
        won = change[last, np.arange(len(active))] == err
        best[active[won]] = tableau[last[won] + 1, np.flatnonzero(won)]
        error[active] = err
        # where rounding now dominates, smaller steps only get worse
        going = ~(np.abs(tableau[-1] - rows[-1]).max(-1) >= 2 * err)
        active, rows = active[going], tableau[:, going]
    return best.T


def _differences(
    x: np.ndarray,
    base: Callable[[], np.ndarray],
    firsts: Callable[[np.ndarray], np.ndarray],
    columns: np.ndarray,
    step: np.ndarray,
    central: np.ndarray,
) -> np.ndarray:
    """One difference per column in ``columns`` (rows): from the points ``x ± step e_j``
    (central), or ``x + step e_j`` and ``base()`` (one-sided)."""
    k = len(columns)
    twice = columns[central]
    points = np.repeat(x[None], k + len(twice), axis=0)
    offsets = np.concatenate([step, -step[central]])
    points[np.arange(len(points)), np.concatenate([columns, twice])] += offsets
    values = firsts(points)
    other = np.empty_like(values[:k])
    other[central] = values[k:]
    if not central.all():
        other[~central] = base()
    return (values[:k] - other) / np.where(central, 2 * step, step)[:, None]


def _largest(a: np.ndarray) -> float:
    return float(np.abs(a).max()) if a.size else 0.0


# ------------------------------------------------------- along directions (second order)


class RoughDifferences(ArithmeticError):
    """Differences along directions whose extrapolation is not finite, or whose error
    estimate is above ``ACCURATE`` of their scale: the function is not smooth there (a kink,
    noise) or not defined."""


ACCURATE = 1e-6
"""The largest error estimate ``directional`` and ``mixed`` accept, relative to the larger
of their result's magnitude and the scale of the values they difference (times the
directions' sizes): about 1e-10 is usual on smooth functions; a kink within the steps
gives errors near the result's own size."""

MIXED_STEP = float(np.finfo(np.float64).eps) ** (1 / 6)
"""The first step of a mixed second difference (``mixed``), relative as ``FD_STEP``'s: 2.4e-3,
where one Richardson step balances truncation (``h⁴``) and rounding (``eps / h²``)."""


def directional(
    fun: Callable[[np.ndarray], np.ndarray],
    point: np.ndarray,
    d: np.ndarray,
    room: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """``d/dt fun(point + t d)`` at 0, by central differences extrapolated by Ridders'
    method from a step that moves each coordinate by at most ``FD_STEP * max(1, |point_i|)``
    (and at most ``room_i``, the room about ``point_i``, where given); and the estimate's
    error. ``fun`` maps a flat point to a flat array."""
    unit, size = _unit(point, d)
    if size == 0 or not np.isfinite(size):  # (a NaN or infinite direction: NaN)
        return np.zeros_like(fun(point)) * size, 0.0
    step = _limited(FD_STEP, np.abs(unit), room)
    magnitude = [0.0]

    def difference(h: float) -> np.ndarray:
        plus, minus = fun(point + h * unit), fun(point - h * unit)
        magnitude[0] = max(magnitude[0], _largest(plus), _largest(minus))
        return (plus - minus) / (2 * h)

    best, error = extrapolated(difference, step)
    return _judged(size * best, size * error, size * magnitude[0])


def mixed(
    fun: Callable[[np.ndarray], np.ndarray],
    point: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    room: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """``∂²/∂s∂t fun(point + s u + t v)`` at 0, by the four-point difference
    ``(f(h, h) - f(h, -h) - f(-h, h) + f(-h, -h)) / 4h²`` (its error even in ``h``)
    extrapolated by Ridders' method from a step ``MIXED_STEP`` (relative, as
    ``directional``'s; at most ``room_i`` in all); and the estimate's error. A second
    derivative of ``fun`` from its values: where ``fun`` is an exact gradient, a third
    derivative from first ones."""
    unit_u, size_u = _unit(point, u)
    unit_v, size_v = _unit(point, v)
    if size_u * size_v == 0 or not np.isfinite(size_u * size_v):
        return np.zeros_like(fun(point)) * (size_u * size_v), 0.0
    step = _limited(MIXED_STEP, np.abs(unit_u) + np.abs(unit_v), room)
    magnitude = [0.0]

    def difference(h: float) -> np.ndarray:
        a, b = h * unit_u, h * unit_v
        values = [fun(point + a + b), fun(point + a - b), fun(point - a + b), fun(point - a - b)]
        magnitude[0] = max(magnitude[0], *map(_largest, values))
        return (values[0] - values[1] - values[2] + values[3]) / (4 * h * h)

    best, error = extrapolated(difference, step)
    size = size_u * size_v
    return _judged(size * best, size * error, size * magnitude[0])


def _judged(value: np.ndarray, error: float, scale: float) -> tuple[np.ndarray, float]:
    """``(value, error)``, or ``RoughDifferences`` (see ``ACCURATE``)."""
    if not (np.isfinite(value).all() and error <= ACCURATE * max(_largest(value), scale)):
        raise RoughDifferences(
            f"error estimate {error:.1e} for a result of magnitude {_largest(value):.1e} "
            f"(values of magnitude {scale:.1e} differenced)"
        )
    return value, error


def _unit(point: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, float]:
    """``d`` scaled to move no coordinate by more than ``max(1, |point_i|)``, and the scale."""
    size = float(np.max(np.abs(d) / np.maximum(1.0, np.abs(point)), initial=0.0))
    return (d / size if size else d), size


def _limited(step: float, reach: np.ndarray, room: np.ndarray | None) -> float:
    """``step``, or less where moving each coordinate by ``step * reach_i`` would leave its
    ``room_i`` (a margin kept)."""
    if room is None:
        return step
    moving = reach > 0
    if not moving.any():
        return step
    return min(step, 0.5 * float(np.min(room[moving] / reach[moving])))


def extrapolated(
    difference: Callable[[float], np.ndarray], step: float, ratio: float = 4.0
) -> tuple[np.ndarray, float]:
    """Ridders' method on ``difference(h)``, a difference of step ``h`` whose error runs in
    powers of ``h²`` (``ratio`` 4): steps ``step``, ``step / 2``, ..., Neville's tableau,
    until the estimates' error grows; the estimate with the smallest error, and that error
    (as ``_column``)."""
    rows = [difference(step)]
    best, error = rows[0], np.inf
    for _ in range(RIDDERS_STEPS - 1):
        step /= 2
        new, factor = [difference(step)], ratio
        for previous in rows:
            new.append((factor * new[-1] - previous) / (factor - 1))
            factor *= ratio
            change = max(_largest(new[-1] - new[-2]), _largest(new[-1] - previous))
            if change <= error:
                best, error = new[-1], change
        if _largest(new[-1] - rows[-1]) >= 2 * error:
            break
        rows = new
    return best, float(error)
