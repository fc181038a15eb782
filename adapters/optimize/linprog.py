"""``Linprog``: SciPy's ``linprog`` (HiGHS), differentiable at a non-degenerate optimum."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import jaxbridge as jb

from .._failure import MayFail, OnFailure, require_finite
from ._implicit import OptimizeError
from ._scipy_forms import bound_arrays, refuse_scipy_bounds, refuse_unsupported

_TIGHT = 1e-7  # a constraint this close to equality, relative to its scale, holds at x
_ZERO = 1e-9  # a multiplier this small, relative to the largest, is no multiplier


class Linprog(MayFail):
    """``min c·x`` subject to ``A_ub x ≤ b_ub``, ``A_eq x = b_eq`` and ``lower ≤ x ≤
    upper``, with SciPy's HiGHS on the host: ``x, fun = Linprog()(c, A_ub, b_ub)``.

    Arguments as SciPy's, ``bounds`` as two arrays: ``c`` (n,); ``A_ub`` (p, n) and ``b_ub``
    (p,); ``A_eq`` (q, n) and ``b_eq`` (q,); ``lower`` and ``upper`` (n,), ``-inf``/``inf``
    for none. Omitted, the constraints are absent and the bounds SciPy's default, ``0 ≤
    x``. Leading axes are batch axes (one SciPy call per problem).

    Parameters:
        method: SciPy's ``"highs"`` (the default), ``"highs-ds"`` or ``"highs-ipm"``.
        on_failure: see ``MayFail``. Fails (an ``OptimizeError`` with SciPy's status) on an
            infeasible or unbounded problem, and, where a derivative is asked for, on a
            degenerate optimum (below).

    Derivatives: first order, in every argument, at a non-degenerate optimum: exactly n
    constraints hold with equality (the equalities, the inequalities and bounds that are
    tight), their rows are independent, and each inequality's multiplier is nonzero. There
    ``x`` is the vertex ``M x = r`` of those constraints, ``x``'s derivatives are ``M``'s
    solves, and the value's derivatives in ``b_ub``, ``b_eq`` and the bounds are the
    multipliers (HiGHS's marginals). At a degenerate optimum (more constraints tight, a
    tight one whose multiplier is zero, or an optimal face rather than a vertex) ``x`` has
    no derivative: an ``OptimizeError`` names what degenerates, or NaN on request.
    """

    method: str = "highs"

    signature = "(n),(p,n),(p),(q,n),(q),(n),(n)->(n),()"
    blas_threads = 1  # the rules' dense solves woke OpenBLAS's threads (see Adapter.blas_threads)

    def __call__(
        self,
        c: Any,
        A_ub: Any = None,  # noqa: N803 (SciPy's names)
        b_ub: Any = None,
        A_eq: Any = None,  # noqa: N803
        b_eq: Any = None,
        lower: Any = None,
        upper: Any = None,
    ) -> Any:
        for name, value in (("lower", lower), ("upper", upper)):
            refuse_scipy_bounds("Linprog", name, value, "optimize.linprog(..., bounds=...)")
        c = jnp.asarray(c)
        n = c.shape[-1] if c.ndim else 0
        empty = jnp.zeros((0, n), c.dtype)
        A_ub, A_eq = (empty if a is None else a for a in (A_ub, A_eq))  # noqa: N806
        b_ub, b_eq = (empty[:, 0] if b is None else b for b in (b_ub, b_eq))
        lower = jnp.zeros(n, c.dtype) if lower is None else lower
        upper = jnp.full(n, jnp.inf, c.dtype) if upper is None else upper
        return super().__call__(c, A_ub, b_ub, A_eq, b_eq, lower, upper)

    def __post_init__(self) -> None:
        if self.method not in ("highs", "highs-ds", "highs-ipm"):
            raise ValueError(
                "Linprog: parameter 'method' must be one of 'highs', 'highs-ds', "
                f"'highs-ipm'; got {self.method!r}."
            )

    def output_specs(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper):
        dtype = jb.result_dtype(c, a_ub, b_ub, a_eq, b_eq, lower, upper)
        return jax.ShapeDtypeStruct(c.shape, dtype), jax.ShapeDtypeStruct(c.shape[:-1], dtype)

    def check(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper):
        if np.isnan(lower).any() or np.isnan(upper).any() or (lower == np.inf).any():
            raise ValueError("argument 'lower' must hold numbers below inf (-inf: no bound).")
        if (upper == -np.inf).any():
            raise ValueError("argument 'upper' must hold numbers above -inf (inf: no bound).")

    def forward(self, c, A_ub, b_ub, A_eq, b_eq, lower, upper):  # noqa: N803 (SciPy's names)
        a_ub, a_eq = A_ub, A_eq
        dtype = jb.result_dtype(c, a_ub, b_ub, a_eq, b_eq, lower, upper)
        try:
            for name, v in (("c", c), ("A_ub", a_ub), ("b_ub", b_ub), ("A_eq", a_eq)):
                require_finite(f"argument '{name}'", v, OptimizeError.because)
            require_finite("argument 'b_eq'", b_eq, OptimizeError.because)
            result = scipy.optimize.linprog(
                c,
                a_ub if len(b_ub) else None,
                b_ub if len(b_ub) else None,
                a_eq if len(b_eq) else None,
                b_eq if len(b_eq) else None,
                np.stack([lower, upper], -1),
                method=self.method,
            )
            if result.status != 0:
                raise OptimizeError.because(
                    f"linprog found no optimum (status {result.status}: {result.message})"
                )
            x, fun = result.x, result.fun
        except OptimizeError as error:
            x, fun = self.nan_on_failure(error, c.shape, ())
        return np.asarray(x, dtype), np.asarray(fun, dtype)

    def backward(self, res, g):
        c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, _ = res
        gx, gf = g
        gx = np.zeros(c.shape) if gx is None else np.asarray(gx, np.float64)
        gf = 0.0 if gf is None else float(gf)
        try:
            vertex = _Vertex(c, a_ub, b_ub, a_eq, b_eq, lower, upper, x)
        except OptimizeError as error:
            nans = self.nan_on_failure(error, *(np.shape(v) for v in res[:7]))
            return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip(nans, res))
        lam = np.linalg.solve(vertex.matrix.T, gx + gf * c)  # x's pullback: M⁻ᵀ ḡ
        cotangents = (gf * vertex.x, *vertex.scatter(lam, -np.outer(lam, vertex.x)))
        return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip(cotangents, res))

    def jvp(self, res, tangents):
        c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, _ = res
        dc, *rest = tangents
        dtype = jb.result_dtype(*res[:7])
        try:
            vertex = _Vertex(c, a_ub, b_ub, a_eq, b_eq, lower, upper, x)
        except OptimizeError as error:
            return self.nan_on_failure(error, c.shape, (), dtype=dtype)
        dx = np.linalg.solve(vertex.matrix, vertex.gather(rest))  # M ẋ = ṙ - Ṁ x
        df = c @ dx + (0.0 if dc is None else dc @ vertex.x)
        return dx.astype(dtype), np.asarray(df, dtype)


class _Vertex:
    """The optimum as the vertex ``M x = r`` of the constraints that hold there, refused
    where it is degenerate; ``x`` recomputed from them (a vertex to rounding)."""

    def __init__(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper, x):
        n = len(c)
        eye = np.eye(n)
        # each constraint on its own scale: a row's from its own terms, a bound's from its
        # entry (one scale from the largest |x| read a narrow box as "at lower" beside a
        # large entry, and refused a good vertex as having too many constraints)
        tight_ub = np.abs(b_ub - a_ub @ x) <= _TIGHT * (
            np.abs(a_ub) @ (np.abs(x) + 1) + np.abs(b_ub)
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
        self.matrix = np.concatenate([a_eq, a_ub[tight_ub], eye[tight_lo], eye[tight_up]])
        count = len(self.matrix)
        if count != n:
            raise OptimizeError.because(
                f"linprog's optimum is degenerate: {count} constraints hold there for {n} "
                f"unknowns ({'an optimal face, not a vertex' if count < n else 'too many'}): "
                "x has no derivative"
            )
        rhs = np.concatenate([b_eq, b_ub[tight_ub], lower[tight_lo], upper[tight_up]])
        try:
            self.x = np.linalg.solve(self.matrix, rhs)
            multipliers = np.linalg.solve(self.matrix.T, c)  # c = Mᵀ y
        except np.linalg.LinAlgError:
            raise OptimizeError.because(
                "linprog's optimum is degenerate: the constraints that hold there are not "
                "independent: x has no derivative"
            ) from None
        inequalities = multipliers[len(b_eq) :]
        if (np.abs(inequalities) <= _ZERO * np.abs(multipliers).max(initial=1)).any():
            raise OptimizeError.because(
                "linprog's optimum is degenerate: a constraint holds there with a zero "
                "multiplier (the optimum moves to one side only): x has no derivative"
            )
        # c = Mᵀ y: an upper limit (a row of A_ub, an upper bound) pushes back with y < 0, a
        # lower bound with y > 0; another sign means these are not the optimum's constraints
        upper_side = np.concatenate(
            [-np.ones(len(self.rows[0])), np.ones(len(self.rows[1])), -np.ones(len(self.rows[2]))]
        )
        if (inequalities * upper_side < 0).any():
            raise OptimizeError.because(
                "linprog's optimum could not be matched to the constraints that hold there "
                "(a multiplier has the wrong sign): x has no derivative"
            )

    def gather(self, tangents) -> np.ndarray:
        """``ṙ - Ṁ x`` from the tangents of ``A_ub, b_ub, A_eq, b_eq, lower, upper``."""
        da_ub, db_ub, da_eq, db_eq, dlo, dup = tangents
        ub, lo, up = self.rows
        parts = []
        for a, b, rows in ((da_eq, db_eq, None), (da_ub, db_ub, ub)):
            count = self.sizes[1] if rows is None else len(rows)
            part = np.zeros(count)
            if b is not None:
                part += b if rows is None else b[rows]
            if a is not None:
                part -= (a if rows is None else a[rows]) @ self.x
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


def linprog(
    c: Any,
    A_ub: Any = None,  # noqa: N803 (SciPy's names)
    b_ub: Any = None,
    A_eq: Any = None,  # noqa: N803
    b_eq: Any = None,
    bounds: Any = (0, None),
    method: str = "highs",
    callback: Any = None,
    options: dict[str, Any] | None = None,
    x0: Any = None,
    integrality: Any = None,
    *,
    on_failure: OnFailure = "raise",
) -> Any:
    """``scipy.optimize.linprog(c, A_ub, b_ub, A_eq, b_eq, bounds, method=method)`` as
    ``Linprog(method, on_failure=on_failure)(c, A_ub, b_ub, A_eq, b_eq, lower, upper)``:
    ``(x, fun)``, SciPy's ``res.x`` and ``res.fun``. ``bounds`` in every form SciPy takes:
    one ``(min, max)`` pair for every variable, a list of pairs, ``None`` for no bound
    (default ``(0, None)``); or an (n, 2) array, differentiable like ``lower`` and
    ``upper``. SciPy's ``callback``, ``options`` (HiGHS runs with SciPy's defaults), ``x0``
    and ``integrality`` (``milp`` takes integers) are refused, naming the argument."""
    refuse_unsupported(
        "linprog",
        {
            "callback": (callback, None, "HiGHS reports no iterations to Python here"),
            "options": (
                options or None,
                None,
                "Linprog runs HiGHS with SciPy's default options (no iteration or time limit)",
            ),
            "x0": (x0, None, "HiGHS takes no starting point (SciPy ignores x0 for it too)"),
            "integrality": (
                None if integrality is None or not np.any(integrality) else integrality,
                None,
                "integer variables are optimize.milp's (its value is differentiable in c)",
            ),
        },
    )
    c = jnp.asarray(c)
    lower, upper = bound_arrays("linprog", bounds, c.shape[-1], c.dtype)
    return Linprog(method, on_failure=on_failure)(c, A_ub, b_ub, A_eq, b_eq, lower, upper)
