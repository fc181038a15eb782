"""A linear program's optimum as ``Linprog``'s rules read it: the constraints that hold
there, the vertex they make (``x``'s derivatives: refused where it is degenerate, naming
the constraint), and the multipliers (the value's derivatives in the right-hand sides and
bounds), with a check that they are unique (dual non-degeneracy) that does not need a
vertex: the value of an LP whose optimum is an edge is differentiable in ``b_ub`` wherever
its duals are unique."""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg
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
    multiplier in ``c = Mᵀ y`` (0 an equality, -1 an upper limit, +1 a lower bound).
    ``held`` is HiGHS's marginals of ``A_ub``'s rows and of the bounds (p + 2n)."""

    def __init__(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, held):
        n = len(c)
        self.c, self.x, self.held = c, x, held
        # each constraint on its own scale: a row's from its own terms, a bound's from its
        # entry (one scale from the largest |x| read a narrow box as "at lower" beside a
        # large entry, and refused a good vertex as having too many constraints)
        # (a row's entries with a floor relative to the solution's size, not an absolute 1:
        # a slack of 0.05 beside x = 1e-3 and rows of 1e6 was read as tight)
        floor = _FLOOR * np.abs(x).max(initial=0)
        tight_ub = np.abs(b_ub - a_ub @ x) <= _TIGHT * (
            np.abs(a_ub) @ (np.abs(x) + floor) + np.abs(b_ub)
        )
        entry = np.abs(x) + floor  # (not 1 + |x|: a free x[j] = 5e-8 read as at 0)
        to_lower, to_upper = np.abs(x - lower), np.abs(upper - x)
        tight_lo = np.isfinite(lower) & (to_lower <= _TIGHT * entry)
        tight_up = np.isfinite(upper) & (to_upper <= _TIGHT * entry)
        # a constraint with a nonzero marginal in HiGHS's basis holds (complementary
        # slackness), whatever its slack: on an LP scaled by 1e±6 HiGHS left a row of its
        # basis at a slack 200 times the tolerance, and the row was dropped
        p = len(b_ub)
        tight_ub |= held[:p] != 0
        tight_lo |= np.isfinite(lower) & (held[p : p + n] != 0)
        tight_up |= np.isfinite(upper) & (held[p + n :] != 0)
        both = tight_lo & tight_up  # (a box narrower than the tolerance: the nearer bound)
        tight_lo &= ~both | (to_lower <= to_upper)
        tight_up &= ~tight_lo
        self.rows = (np.flatnonzero(tight_ub), np.flatnonzero(tight_lo), np.flatnonzero(tight_up))
        self.sizes = (len(b_ub), len(b_eq), n)
        self._all = (a_ub, b_ub, lower, upper)
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
        self._inaccurate = False
        try:
            self._vertex: tuple[np.ndarray, np.ndarray] | str = self._solved_vertex()
        except _Degenerate as problem:
            self._vertex = str(problem)
            self._inaccurate = isinstance(problem, _Inaccurate)

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
        vertex, recomputed, where it is non-degenerate; elsewhere HiGHS's ``x``, which
        ``only_point`` checks is the only optimum."""
        return self.x if isinstance(self._vertex, str) else self._vertex[0]

    def only_point(self) -> np.ndarray:
        """``x``, checked to be the only optimal point: the value's derivatives in ``c`` and
        the matrices are taken there. Where other points are as good (an optimal edge or
        face) the value has a kink in them: an ``OptimizeError`` naming the constraints.

        The optimal points are the feasible ones at which every constraint with a nonzero
        multiplier holds (complementary slackness, with HiGHS's multipliers or any other
        optimal ones): near ``x`` they are ``x + d`` for ``d`` in the null space of those
        rows that keeps the ones holding with a zero multiplier (a bound at its value, say)
        on their feasible side; ``x`` is the only one where no such ``d ≠ 0`` exists."""
        if not isinstance(self._vertex, str):
            return self._vertex[0]
        if not np.isfinite(self.x).all():  # (the solve failed: NaN under on_failure)
            return self.x
        p, q, n = self.sizes
        ub, lo, up = self.rows
        held = np.concatenate(
            [np.zeros(q), self.held[ub], self.held[p + lo], self.held[p + n + up]]
        )
        # a multiplier is zero where its terms in c = Mᵀ y are rounding beside each entry's
        # own terms (not the largest multiplier's: c = [-1e6, -1e-4] at two bounds)
        terms = np.abs(held[:, None] * self.matrix)
        own = np.abs(self.c) + terms.sum(0)
        zero = (self.side != 0) & (terms <= _ZERO * own).all(1)
        rows, columns = self._scales  # (d = columns * e for e in the scaled null space)
        scaled = rows[:, None] * self.matrix * columns
        norms = np.linalg.norm(scaled, axis=1)
        scaled /= np.where(norms == 0, 1, norms)[:, None]
        kept = scaled[~zero]
        if len(kept):
            _, values, vt = np.linalg.svd(kept)
            rank = int((values > _DEPENDENT * values.max(initial=0)).sum())
            null = vt[rank:].T
        else:
            null = np.eye(n)
        if null.shape[1] == 0 or _pointed(scaled[zero] @ null, self.side[zero]):
            return self.x
        raise OptimizeError.because(
            "linprog's optimum is not unique: from x, points as good lie along an edge or "
            f"face (the constraints that hold there: {_listed(self.labels)}; with a zero "
            f"multiplier: {_listed(self.labels, zero)}), so fun has a kink in c, A_ub and "
            "A_eq there and no derivative in them"
        )

    def _solved_vertex(self) -> tuple[np.ndarray, np.ndarray]:
        count, n = len(self.matrix), len(self.c)
        if count != n:
            kind = "an optimal edge or face, not a vertex" if count < n else "too many"
            raise _Degenerate(
                f"linprog's optimum is degenerate: {count} constraints hold there for {n} "
                f"unknowns ({_listed(self.labels)}; {kind}): x has no derivative"
            )
        try:
            x = self.solve(self.rhs)
            y = self.solve(self.c, transpose=True)  # c = Mᵀ y
        except np.linalg.LinAlgError:
            raise _Degenerate(
                "linprog's optimum is degenerate: the constraints that hold there "
                f"({_listed(self.labels)}) are not independent: x has no derivative"
            ) from None
        self._check_feasible(x)
        inequality = self.side != 0
        rows, columns = self._scales  # (M's sizes as the scaled matrix's: see solve)
        sizes = rows * _sizes((rows[:, None] * self.matrix * columns).T, columns * self.c)
        zero = inequality & (np.abs(y) <= _ZERO * sizes)
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

    @functools.cached_property
    def _scales(self) -> tuple[np.ndarray, np.ndarray]:
        return _balance(self.matrix)

    def solve(self, rhs: np.ndarray, transpose: bool = False) -> np.ndarray:
        """``M⁻¹ rhs`` (``M⁻ᵀ rhs`` if ``transpose``) for the square ``M``, solved with its
        rows and columns scaled by powers of 2: an LP scaled by 1e±6 makes ``M``'s condition
        number 1e24 where the scaled one's is 10 (its multipliers came out 5x off)."""
        rows, columns = self._scales
        scaled = rows[:, None] * self.matrix * columns
        if transpose:  # Mᵀ y = b: (C Mᵀ R)(R⁻¹ y) = C b
            return rows * np.linalg.solve(scaled.T, columns * rhs)
        return columns * np.linalg.solve(scaled, rows * rhs)

    def _check_feasible(self, x: np.ndarray) -> None:
        """The vertex of the constraints that hold is the optimum only if it keeps the
        others: on an LP scaled by 1e±6 HiGHS reported an ``x`` that missed an equality by
        91% of its right-hand side, whose constraints made a vertex outside the feasible set
        (and multipliers 5x off)."""
        a_ub, b_ub, lower, upper = self._all
        excess = constraint_misses(x, a_ub, np.full_like(b_ub, -np.inf), b_ub, lower, upper)
        broken = np.flatnonzero(excess > _TIGHT)
        if broken.size:
            labels = [f"A_ub row {i}" for i in range(len(b_ub))]
            label = _constraint_named(int(broken[0]), labels, len(x))
            raise _Inaccurate(
                f"linprog's optimum could not be matched to the constraints that hold there: "
                f"the vertex they make ({_listed(self.labels)}) breaks {label}, so HiGHS's x "
                "is no accurate optimum (is the problem badly scaled? scale its rows and "
                "columns): x and fun have no derivative computed here"
            )

    def duals(self) -> np.ndarray:
        """The multipliers ``y`` (``c = Mᵀ y``, each of its side's sign), where they are
        unique, as they are at a non-degenerate vertex and on an optimal edge whose
        constraints are independent: the value's derivatives in ``r``. Where they are not
        unique the value has a kink in the right-hand sides and bounds: an
        ``OptimizeError`` naming the constraints."""
        if not isinstance(self._vertex, str):
            return self._vertex[1]
        if self._inaccurate:
            raise OptimizeError.because(self._vertex)
        if len(self.matrix) == 0:  # (no constraint holds: c = 0, or x is no optimum)
            if np.abs(self.c).max(initial=0) > 0:
                raise OptimizeError.because(
                    "linprog's optimum could not be matched to the constraints: none holds "
                    "there, and c is not 0: fun has no derivative computed here"
                )
            return np.zeros(0)
        # each equation of c = Mᵀ y, one per unknown, scaled by a power of 2 to its largest
        # term (unknowns scaled by 1e±6 left the least-squares multipliers 5x off), and unit
        # rows (the multipliers become y * scale)
        _, columns = self._scales
        rows = self.matrix * columns
        scale = np.linalg.norm(rows, axis=1)
        scale[scale == 0] = 1
        rows /= scale[:, None]
        c = self.c * columns
        _, values, vt = np.linalg.svd(rows.T)
        rank = int((values > _DEPENDENT * values.max(initial=0)).sum())
        null = vt[rank:].T  # the directions e with Mᵀ e = 0, scaled
        inequality = self.side != 0
        if rank == len(rows):
            scaled = np.linalg.lstsq(rows.T, c, rcond=None)[0]
        else:  # (some multiplier: an LP on the tight constraints, then checked below)
            signs = [(None, None), (0, None), (None, 0)]  # (the side's: 0, +1, -1)
            found = scipy.optimize.linprog(
                np.zeros(len(rows)),
                A_eq=rows.T,
                b_eq=c,
                bounds=[signs[int(s)] for s in self.side],
            )
            scaled = found.x if found.status == 0 else np.full(len(rows), np.nan)
        # each entry of c = Mᵀ y on its own scale (one global scale accepted multipliers
        # that missed an entry of c by 45%, beside a larger entry)
        residual = np.abs(rows.T @ scaled - c)
        own_scale = np.abs(c) + np.abs(rows.T) @ np.abs(scaled)
        largest = np.abs(scaled).max(initial=0)
        if not (residual <= _TIGHT * own_scale).all() or (
            (scaled * self.side < -_ZERO * largest).any()
        ):
            raise OptimizeError.because(
                "linprog's optimum could not be matched to the constraints that hold there "
                f"({_listed(self.labels)}): no multipliers of the right signs give c, so fun "
                "has no derivative computed here"
            )
        own = _sizes(rows.T, c) if rank == len(rows) else largest
        zero = inequality & (np.abs(scaled) <= _ZERO * own)
        if not _pointed(null[zero], self.side[zero]):
            raise OptimizeError.because(
                f"linprog's optimum is degenerate: {len(rows)} constraints hold there for "
                f"{len(c)} unknowns ({_listed(self.labels)}), and their multipliers "
                "(fun's derivatives in b_ub, b_eq and the bounds) are not unique: fun has a "
                "kink there and no derivative"
            )
        # unique: the zero ones exactly 0, the others the solution of their rows (independent)
        scaled = np.zeros(len(rows))
        scaled[~zero] = np.linalg.lstsq(rows[~zero].T, c, rcond=None)[0]
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

    @property
    def count(self) -> int:
        """The number of HiGHS's marginals: ``b_ub``'s, ``b_eq``'s and both bounds'."""
        p, q, n = self.sizes
        return p + q + 2 * n

    def _marginal_rows(self) -> np.ndarray:
        """Where each of ``M``'s rows sits among the marginals (``ineqlin``, ``eqlin``,
        ``lower``, ``upper``, SciPy's order)."""
        p, q, n = self.sizes
        ub, lo, up = self.rows
        return np.concatenate([p + np.arange(q), ub, p + q + lo, p + q + n + up])

    def picked(self, marginals: np.ndarray) -> np.ndarray:
        """The entries of an array laid out as the marginals that ``M``'s rows hold."""
        return marginals[self._marginal_rows()]

    def spread(self, values: np.ndarray) -> np.ndarray:
        """One value per row of ``M``, laid out as the marginals (0 where none holds)."""
        out = np.zeros(self.count)
        out[self._marginal_rows()] = values
        return out

    def matrix_tangent(self, da_ub, da_eq) -> np.ndarray:
        """``Ṁ`` from the tangents of ``A_ub`` and ``A_eq`` (the bounds' rows are fixed)."""
        p, q, n = self.sizes
        ub, lo, up = self.rows
        eq = np.zeros((q, n)) if da_eq is None else da_eq
        tight = np.zeros((len(ub), n)) if da_ub is None else da_ub[ub]
        return np.concatenate([eq, tight, np.zeros((len(lo) + len(up), n))])

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


FEASIBLE = 1e-6
"""How far HiGHS's ``x`` may miss a constraint, relative to the constraint's own terms
(``|a| |x| + |b|``; a bound's, ``|x_j| + |bound|``), before the solve is refused though
HiGHS reported success. On LPs whose rows and columns are scaled by 10^±6 HiGHS reported
success with an ``x`` that missed a constraint by 3e-4 to 60% (84 of 596 LPs and MILPs;
their values up to 200% off); the others missed by 3e-15 at most."""


def constraint_misses(x, a, low, high, lower, upper):
    """How far ``x`` misses each of ``low ≤ a x ≤ high`` (the rows first) and ``lower ≤ x ≤
    upper`` (then the lower bounds, then the upper ones), each relative to the
    constraint's own terms (``|a| |x| + |b|``; a bound's, ``|x_j| + |bound|``); 0 where
    it holds."""
    ax, terms = a @ x, np.abs(a) @ np.abs(x)
    bound = np.maximum(*(np.abs(np.where(np.isfinite(v), v, 0)) for v in (low, high)))
    rows = np.maximum(np.maximum(ax - high, low - ax), 0) / (terms + bound + _TINY)
    floor = _FLOOR * np.abs(x).max(initial=0)  # (a basic entry at 0 may come out as -1e-17)
    own = np.abs(x) + floor + _TINY
    at_lower = np.maximum(lower - x, 0) / (own + np.abs(np.where(np.isfinite(lower), lower, 0)))
    at_upper = np.maximum(x - upper, 0) / (own + np.abs(np.where(np.isfinite(upper), upper, 0)))
    return np.concatenate([rows, at_lower, at_upper])


def require_feasible(solver, x, a, low, high, lower, upper, labels, tolerance=FEASIBLE):
    """HiGHS's ``x`` checked against ``low ≤ a x ≤ high`` and ``lower ≤ x ≤ upper``
    (``constraint_misses``): an ``OptimizeError`` naming the one it misses most, where
    that is by more than ``tolerance``. ``labels``: the rows' names."""
    misses = constraint_misses(x, a, low, high, lower, upper)
    if not misses.size or misses.max() <= tolerance:
        return
    k = int(np.argmax(misses))
    entries = np.abs(a[a != 0])
    span = (
        f"its matrix's entries span a factor of {entries.max() / entries.min():.0e}: "
        if entries.size
        else ""
    )
    raise OptimizeError.because(
        f"{solver}'s x misses {_constraint_named(k, labels, len(x))} by {misses[k]:.1e} of "
        f"the constraint's own terms, though HiGHS reported success: it is no accurate "
        f"solution ({span}is the problem badly scaled? Scale its rows and columns)"
    )


def _constraint_named(k: int, labels: list[str], n: int) -> str:
    """The name of ``constraint_misses``' entry ``k``."""
    p = len(labels)
    if k < p:
        return labels[k]
    return f"x[{k - p}]'s lower bound" if k < p + n else f"x[{k - p - n}]'s upper bound"


_TINY = np.finfo(float).tiny


class _Degenerate(Exception):
    """Why the optimum is no non-degenerate vertex (a sentence without its full stop)."""


class _Inaccurate(_Degenerate):
    """HiGHS's x is no vertex of the constraints that hold there: neither x's derivatives
    nor the value's can be read from them."""


def _balance(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Powers of 2 that scale the rows and the columns of ``m`` to entries of size about 1
    (LAPACK's ``geequb``; 1 for an empty row or column)."""
    if m.size == 0:
        return np.ones(m.shape[0]), np.ones(m.shape[1])
    (geequb,) = scipy.linalg.get_lapack_funcs(("geequb",), (m,))
    rows, columns, *_, info = geequb(m)
    if info > 0:  # a zero row (info <= m) or column: geequb stops; scale the rest by hand
        rows = np.exp2(-np.round(np.log2(np.maximum(np.abs(m).max(1), 1e-300))))
        rows[np.abs(m).max(1) == 0] = 1
        scaled = np.abs(m) * rows[:, None]
        columns = np.exp2(-np.round(np.log2(np.maximum(scaled.max(0), 1e-300))))
        columns[scaled.max(0) == 0] = 1
    return rows, columns


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
