"""A linear program's optimum as ``Linprog``'s rules read it: the constraints that hold
there, the vertex they make (``x``'s derivatives: refused where it is degenerate, naming
the constraint), and the multipliers (the value's derivatives in the right-hand sides and
bounds), with a check that they are unique (dual non-degeneracy) that does not need a
vertex: the value of an LP whose optimum is an edge is differentiable in ``b_ub`` wherever
its duals are unique."""

from __future__ import annotations

import numpy as np
import scipy.optimize

from ._implicit import OptimizeError

_TIGHT = 1e-7  # a constraint this close to equality, relative to its scale, holds at x
_FLOOR = 1e-6  # an entry of x counts as at least this much of the largest in a row's scale
_ZERO = 1e-9  # a multiplier this small, relative to its own size (_sizes), is no multiplier
_DEPENDENT = 1e-9  # a singular value this small, relative to the largest (rows of unit
# norm), makes the rows dependent


class Optimum:
    """The constraints that hold at ``x`` as rows ``M x = r``: equalities, tight rows of
    ``A_ub``, tight lower and upper bounds, in that order; ``side`` is each row's sign of
    multiplier in ``c = Mᵀ y`` (0 an equality, -1 an upper limit, +1 a lower bound)."""

    def __init__(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper, x):
        n = len(c)
        self.c, self.x = c, x
        # each constraint on its own scale: a row's from its own terms, a bound's from its
        # entry (one scale from the largest |x| read a narrow box as "at lower" beside a
        # large entry, and refused a good vertex as having too many constraints)
        # (a row's entries with a floor relative to the solution's size, not an absolute 1:
        # a slack of 0.05 beside x = 1e-3 and rows of 1e6 was read as tight)
        floor = _FLOOR * np.abs(x).max(initial=0)
        tight_ub = np.abs(b_ub - a_ub @ x) <= _TIGHT * (
            np.abs(a_ub) @ (np.abs(x) + floor) + np.abs(b_ub)
        )
        entry = 1 + np.abs(x)
        to_lower, to_upper = np.abs(x - lower), np.abs(upper - x)
        tight_lo = np.isfinite(lower) & (to_lower <= _TIGHT * entry)
        tight_up = np.isfinite(upper) & (to_upper <= _TIGHT * entry)
        both = tight_lo & tight_up  # (a box narrower than the tolerance: the nearer bound)
        tight_lo &= ~both | (to_lower <= to_upper)
        tight_up &= ~tight_lo
        self.rows = (np.flatnonzero(tight_ub), np.flatnonzero(tight_lo), np.flatnonzero(tight_up))
        self.sizes = (len(b_ub), len(b_eq), n)
        eye = np.eye(n)
        self.matrix = np.concatenate([a_eq, a_ub[tight_ub], eye[tight_lo], eye[tight_up]])
        self.rhs = np.concatenate([b_eq, b_ub[tight_ub], lower[tight_lo], upper[tight_up]])
        ub, lo, up = self.rows
        self.side = np.concatenate(
            [np.zeros(len(b_eq)), -np.ones(len(ub)), np.ones(len(lo)), -np.ones(len(up))]
        )
        self.labels = (
            [f"A_eq row {i}" for i in range(len(b_eq))]
            + [f"A_ub row {i}" for i in ub]
            + [f"x[{j}]'s lower bound" for j in lo]
            + [f"x[{j}]'s upper bound" for j in up]
        )
        try:
            self._vertex: tuple[np.ndarray, np.ndarray] | str = self._solved_vertex()
        except _Degenerate as problem:
            self._vertex = str(problem)

    def vertex(self, note: str = "") -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)``: the vertex ``M x = r`` (recomputed, a vertex to rounding) and its
        multipliers ``c = Mᵀ y``, where it is non-degenerate: exactly n independent
        constraints hold, each inequality's multiplier nonzero and of its side's sign.
        Elsewhere ``x`` has no derivative: an ``OptimizeError`` naming the constraint (and
        ``note``)."""
        if isinstance(self._vertex, str):
            raise OptimizeError.because(self._vertex + note)
        return self._vertex

    def point(self) -> np.ndarray:
        """``x`` at which the value's derivatives in ``c`` and the matrices are taken: the
        vertex, recomputed, where it is non-degenerate; elsewhere HiGHS's ``x`` (on an
        optimal edge, the derivative along HiGHS's choice)."""
        return self.x if isinstance(self._vertex, str) else self._vertex[0]

    def _solved_vertex(self) -> tuple[np.ndarray, np.ndarray]:
        count, n = len(self.matrix), len(self.c)
        if count != n:
            kind = "an optimal edge or face, not a vertex" if count < n else "too many"
            raise _Degenerate(
                f"linprog's optimum is degenerate: {count} constraints hold there for {n} "
                f"unknowns ({_listed(self.labels)}; {kind}): x has no derivative"
            )
        try:
            x = np.linalg.solve(self.matrix, self.rhs)
            y = np.linalg.solve(self.matrix.T, self.c)  # c = Mᵀ y
        except np.linalg.LinAlgError:
            raise _Degenerate(
                "linprog's optimum is degenerate: the constraints that hold there "
                f"({_listed(self.labels)}) are not independent: x has no derivative"
            ) from None
        inequality = self.side != 0
        zero = inequality & (np.abs(y) <= _ZERO * _sizes(self.matrix.T, self.c))
        if zero.any():
            raise _Degenerate(
                f"linprog's optimum is degenerate: {_listed(self.labels, zero)} "
                f"hold{'s' if zero.sum() == 1 else ''} there with a zero multiplier (the "
                "optimum moves to one side only, or along an edge of optimal points): x has "
                "no derivative"
            )
        wrong = y * self.side < 0
        if wrong.any():
            raise _Degenerate(
                "linprog's optimum could not be matched to the constraints that hold there "
                f"(the multiplier of {_listed(self.labels, wrong)} has the wrong sign): x has "
                "no derivative"
            )
        return x, y

    def duals(self) -> np.ndarray:
        """The multipliers ``y`` (``c = Mᵀ y``, each of its side's sign), where they are
        unique, as they are at a non-degenerate vertex and on an optimal edge whose
        constraints are independent: the value's derivatives in ``r``. Where they are not
        unique the value has a kink in the right-hand sides and bounds: an
        ``OptimizeError`` naming the constraints."""
        if not isinstance(self._vertex, str):
            return self._vertex[1]
        if len(self.matrix) == 0:  # (no constraint holds: c = 0, or x is no optimum)
            if np.abs(self.c).max(initial=0) > 0:
                raise OptimizeError.because(
                    "linprog's optimum could not be matched to the constraints: none holds "
                    "there, and c is not 0: fun has no derivative computed here"
                )
            return np.zeros(0)
        scale = np.linalg.norm(self.matrix, axis=1)
        scale[scale == 0] = 1
        rows = self.matrix / scale[:, None]  # (unit rows: the multipliers become y * scale)
        _, values, vt = np.linalg.svd(rows.T)
        rank = int((values > _DEPENDENT * values.max(initial=0)).sum())
        null = vt[rank:].T  # the directions e with Mᵀ e = 0, scaled
        inequality = self.side != 0
        if rank == len(rows):
            scaled = np.linalg.lstsq(rows.T, self.c, rcond=None)[0]
        else:  # (some multiplier: an LP on the tight constraints, then checked below)
            signs = [(None, None), (0, None), (None, 0)]  # (the side's: 0, +1, -1)
            found = scipy.optimize.linprog(
                np.zeros(len(rows)),
                A_eq=rows.T,
                b_eq=self.c,
                bounds=[signs[int(s)] for s in self.side],
            )
            scaled = found.x if found.status == 0 else np.full(len(rows), np.nan)
        residual = np.abs(rows.T @ scaled - self.c).max(initial=0)
        largest = np.abs(scaled).max(initial=0)
        if not residual <= _TIGHT * (np.abs(self.c).max(initial=0) + largest) or (
            (scaled * self.side < -_ZERO * largest).any()
        ):
            raise OptimizeError.because(
                "linprog's optimum could not be matched to the constraints that hold there "
                f"({_listed(self.labels)}): no multipliers of the right signs give c, so fun "
                "has no derivative computed here"
            )
        own = _sizes(rows.T, self.c) if rank == len(rows) else largest
        zero = inequality & (np.abs(scaled) <= _ZERO * own)
        if not _pointed(null[zero], self.side[zero]):
            raise OptimizeError.because(
                f"linprog's optimum is degenerate: {len(rows)} constraints hold there for "
                f"{len(self.c)} unknowns ({_listed(self.labels)}), and their multipliers "
                "(fun's derivatives in b_ub, b_eq and the bounds) are not unique: fun has a "
                "kink there and no derivative"
            )
        # unique: the zero ones exactly 0, the others the solution of their rows (independent)
        scaled = np.zeros(len(rows))
        scaled[~zero] = np.linalg.lstsq(rows[~zero].T, self.c, rcond=None)[0]
        return scaled / scale

    def gather(self, tangents) -> np.ndarray:
        """``ṙ - Ṁ x`` from the tangents of ``A_ub, b_ub, A_eq, b_eq, lower, upper``."""
        da_ub, db_ub, da_eq, db_eq, dlo, dup = tangents
        x = self.vertex()[0]
        ub, lo, up = self.rows
        parts = []
        for a, b, rows in ((da_eq, db_eq, None), (da_ub, db_ub, ub)):
            count = self.sizes[1] if rows is None else len(rows)
            part = np.zeros(count)
            if b is not None:
                part += b if rows is None else b[rows]
            if a is not None:
                part -= (a if rows is None else a[rows]) @ x
            parts.append(part)
        for bound, rows in ((dlo, lo), (dup, up)):
            parts.append(np.zeros(len(rows)) if bound is None else bound[rows])
        return np.concatenate(parts)

    def scatter(self, rhs: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, ...]:
        """The cotangents of ``A_ub, b_ub, A_eq, b_eq, lower, upper`` from those of ``r``
        and ``M`` (rows in ``M``'s order: equalities, tight inequalities, bounds)."""
        p, q, n = self.sizes
        ub, lo, up = self.rows
        a_ub, b_ub, a_eq = np.zeros((p, n)), np.zeros(p), matrix[:q]
        at = q + len(ub)
        a_ub[ub], b_ub[ub] = matrix[q:at], rhs[q:at]
        lower, upper = np.zeros(n), np.zeros(n)
        lower[lo] = rhs[at : at + len(lo)]
        upper[up] = rhs[at + len(lo) :]
        return a_ub, b_ub, a_eq, rhs[:q], lower, upper


class _Degenerate(Exception):
    """Why the optimum is no non-degenerate vertex (a sentence without its full stop)."""


def _sizes(m_t: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Each multiplier's own size, that of the terms it is made of: ``|pinv(Mᵀ)| |c|``. A
    multiplier at rounding level of it is zero; one well above it is not, however large
    the others (a scale from the largest read the second multiplier of ``c = [-1e6,
    -1e-4]`` at two upper bounds as zero, and its derivative silently as 0)."""
    return np.abs(np.linalg.pinv(m_t)) @ np.abs(c)


def _pointed(directions: np.ndarray, side: np.ndarray) -> bool:
    """Whether no combination ``u ≠ 0`` of the columns of ``directions`` (z × s) has
    ``side * (directions @ u) >= 0``: the multipliers can move along no null direction
    without one that is zero (``directions``' rows) leaving its sign. Independent columns,
    and an LP: the largest ``Σ side (directions u)`` with each term in [0, 1] is 1 or more
    where such a ``u`` exists (scaled to reach 1), 0 where none does."""
    count = directions.shape[1]
    if count == 0:
        return True
    signed = side[:, None] * directions
    values = np.linalg.svd(signed, compute_uv=False)
    if len(values) < count or (values > _DEPENDENT * values.max(initial=0)).sum() < count:
        return False
    rows = len(signed)
    found = scipy.optimize.linprog(
        -signed.sum(0),
        A_ub=np.concatenate([signed, -signed]),
        b_ub=np.concatenate([np.ones(rows), np.zeros(rows)]),
        bounds=(None, None),
    )
    return found.status == 0 and -found.fun < 0.5


def _listed(labels: list[str], chosen: np.ndarray | None = None) -> str:
    """The constraints' names (those ``chosen``), as a phrase."""
    names = [name for i, name in enumerate(labels) if chosen is None or chosen[i]]
    return ", ".join(names) if names else "none"
