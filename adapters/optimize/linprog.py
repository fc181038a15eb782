"""``Linprog``: SciPy's ``linprog`` (HiGHS), differentiable at a non-degenerate optimum."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import jaxbridge as jb
from jaxbridge.internal import host_routed

from .._shared._failure import MayFail, OnFailure, require_finite
from .._shared._result import OptimizeResult
from ._implicit import OptimizeError
from ._lp_optimum import FEASIBLE, Optimum, require_feasible
from ._scipy_forms import (
    bound_arrays,
    floating,
    highs_options,
    refuse_scipy_bounds,
    refuse_unsupported,
)


class Linprog(MayFail):
    """``min c·x`` subject to ``A_ub x ≤ b_ub``, ``A_eq x = b_eq`` and ``lower ≤ x ≤
    upper``, with SciPy's HiGHS on the host: ``x, fun = Linprog()(c, A_ub, b_ub)``.

    Arguments as SciPy's, ``bounds`` as two arrays: ``c`` (n,); ``A_ub`` (p, n) and ``b_ub``
    (p,); ``A_eq`` (q, n) and ``b_eq`` (q,); ``lower`` and ``upper`` (n,), ``-inf``/``inf``
    for none. Omitted, the constraints are absent and the bounds SciPy's default, ``0 ≤
    x``. Leading axes are batch axes (one SciPy call per problem).

    Parameters:
        method: SciPy's ``"highs"`` (the default), ``"highs-ds"`` or ``"highs-ipm"``.
        maxiter: HiGHS's iteration limit (``None``: SciPy's default); reached, a failure
            with SciPy's status.
        time_limit: HiGHS's limit in seconds per problem (``None``: none); reached, a
            failure with SciPy's status.
        presolve: whether HiGHS presolves (SciPy's default, ``True``).
        dual_feasibility_tolerance: HiGHS's option of that name (``None``: SciPy's
            default). A looser tolerance leaves ``x`` less exact: where the rules cannot
            match it to its constraints they refuse the derivative by name.
        primal_feasibility_tolerance: HiGHS's option of that name, likewise.
        ipm_optimality_tolerance: HiGHS's option of that name (``"highs-ipm"``), likewise.
        simplex_dual_edge_weight_strategy: ``"dantzig"``, ``"devex"``,
            ``"steepest-devex"`` or ``"steepest"`` (``None``: SciPy's default).
        on_failure: see ``MayFail``. Fails (an ``OptimizeError`` with SciPy's status) on an
            infeasible or unbounded problem, and, where a derivative is asked for, on a
            degenerate optimum (below).

    Derivatives: first order. ``x``'s, in every argument, at a non-degenerate optimum:
    exactly n constraints hold with equality (the equalities, the inequalities and bounds
    that are tight), their rows are independent, and each inequality's multiplier is
    nonzero. There ``x`` is the vertex ``M x = r`` of those constraints and its derivatives
    are ``M``'s solves. Elsewhere (more constraints tight, a tight one whose multiplier is
    zero, an optimal edge or face) ``x`` has no derivative: an ``OptimizeError`` names the
    constraint, or NaN on request. ``fun``'s derivatives in ``b_ub``, ``b_eq`` and the
    bounds are the multipliers (HiGHS's marginals) wherever they are unique, an optimal
    edge included (checked on the constraints that hold: independent rows, or no direction
    in which the multipliers can move keeping their signs); where they are not, ``fun`` has
    a kink there, refused as above. ``fun``'s derivative in ``c`` is ``x`` and in the
    matrices ``-y xᵀ``, where ``x`` is the only optimal point (a degenerate vertex
    included), which the rules check on the host (``LinprogOptimumCheck``, no solve); on an
    optimal edge or face other points tie with it, the value has a kink in ``c`` and the
    matrices, and these derivatives are refused by name (NaN on request), as ``Milp``
    refuses a tie, while those in ``b_ub``, ``b_eq`` and the bounds stand. Forward mode
    (``jvp``, ``jacfwd``) computes ``x``'s tangent with ``fun``'s, so it needs the
    non-degenerate vertex; ``fun``'s derivatives alone come from reverse mode (``grad``).
    """

    method: str = "highs"
    maxiter: int | None = None
    time_limit: float | None = None
    presolve: bool = True
    dual_feasibility_tolerance: float | None = None
    primal_feasibility_tolerance: float | None = None
    ipm_optimality_tolerance: float | None = None
    simplex_dual_edge_weight_strategy: str | None = None

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
        for name, kind in _NUMBERS.items():
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, kind) or isinstance(value, bool) or not value > 0
            ):
                raise ValueError(
                    f"Linprog: parameter {name!r} must be a positive "
                    f"{'integer' if kind is _WHOLE else 'number'} or None; got {value!r}."
                )
        if not isinstance(self.presolve, (bool, np.bool_)):
            raise ValueError(
                f"Linprog: parameter 'presolve' must be True or False; got {self.presolve!r}."
            )
        strategies = (None, "dantzig", "devex", "steepest-devex", "steepest")
        if self.simplex_dual_edge_weight_strategy not in strategies:
            raise ValueError(
                "Linprog: parameter 'simplex_dual_edge_weight_strategy' must be one of "
                f"{strategies}; got {self.simplex_dual_edge_weight_strategy!r}."
            )

    def _options(self) -> dict[str, Any]:
        """The HiGHS options given, for SciPy's ``options=``."""
        given = {name: getattr(self, name) for name in (*_NUMBERS, _STRATEGY)}
        return {"presolve": self.presolve} | {k: v for k, v in given.items() if v is not None}

    def output_specs(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper):
        dtype = jb.result_dtype(c, a_ub, b_ub, a_eq, b_eq, lower, upper)
        return jax.ShapeDtypeStruct(c.shape, dtype), jax.ShapeDtypeStruct(c.shape[:-1], dtype)

    def residual_specs(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper):
        # HiGHS's marginals of the rows of A_ub and of the bounds: the constraints its
        # basis holds, which a badly scaled LP's slacks alone do not tell (Optimum)
        count = b_ub.shape[-1] + 2 * c.shape[-1]
        return jax.ShapeDtypeStruct((count,), jb.result_dtype(c, a_ub, b_ub, a_eq, b_eq))

    def check(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper):
        if c.shape[-1] == 0:  # (SciPy's own message speaks of c's dimensions)
            raise ValueError("argument 'c' has no entries: an LP needs one unknown at least.")
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
                options=self._options(),
            )
            if result.status != 0:
                raise OptimizeError.because(
                    f"linprog found no optimum (status {result.status}: {result.message})"
                )
            x, fun = result.x, result.fun
            loose = 10 * (self.primal_feasibility_tolerance or 0)  # (a tolerance asked for)
            require_feasible(
                "linprog",
                x,
                np.concatenate([a_ub, a_eq]),
                np.concatenate([np.full(len(b_ub), -np.inf), b_eq]),
                np.concatenate([b_ub, b_eq]),
                lower,
                upper,
                [f"A_ub row {i}" for i in range(len(b_ub))]
                + [f"A_eq row {i}" for i in range(len(b_eq))],
                max(FEASIBLE, loose),
            )
            marginals = np.concatenate(
                [
                    result.ineqlin.marginals,
                    result.eqlin.marginals,
                    result.lower.marginals,
                    result.upper.marginals,
                ]
            )
        except OptimizeError as error:
            x, fun = self.nan_on_failure(error, c.shape, ())
            marginals = np.full(len(b_ub) + len(b_eq) + 2 * len(c), np.nan)
        held = np.delete(marginals, np.s_[len(b_ub) : len(b_ub) + len(b_eq)])  # (no eqlin)
        outputs = (x, fun, marginals) if isinstance(self, LinprogMarginals) else (x, fun)
        return (*(np.asarray(v, dtype) for v in outputs), np.asarray(held, dtype))

    @host_routed
    def pullback(self, res, g, *, wanted=None):
        gx, gf, *marginals = g  # (LinprogMarginals': their cotangent)
        if wanted is not None and not wanted & {"c", "A_ub", "A_eq"}:
            return super().pullback(res, g)
        # fun's derivatives in c and the matrices are taken at x: refused where other
        # points are as good (an optimal edge or face), as Milp refuses a tie
        at = self._only_point(res)
        if wanted is not None and wanted <= {"c"}:
            # fun's derivative in c alone is x: the multipliers, which may not be unique
            # (more constraints tight than unknowns), are not needed for it. x's own part
            # still goes to the host, which refuses it where x has no derivative.
            got = super().pullback(res, (gx, jnp.zeros_like(gf), *marginals))
            return (got[0] + gf[..., None] * at, *got[1:])
        got = super().pullback(res, g)
        zero = jnp.sum(at * 0, -1)  # (NaN where the check refused, under on_failure="nan")
        tied = {0: zero[..., None], 1: zero[..., None, None], 3: zero[..., None, None]}
        return tuple(v + tied[i] if i in tied and v is not None else v for i, v in enumerate(got))

    def _only_point(self, res):
        """``x``, checked on the host to be the only optimal point (``LinprogOptimumCheck``),
        or the refusal. Constant: its own derivative is 0."""
        check = LinprogOptimumCheck(on_failure=self.on_failure)
        c, a_ub, b_ub, a_eq, b_eq, lower, upper, x = res[:8]
        return check(
            *(
                jax.lax.stop_gradient(r)
                for r in (c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, res[-1])
            )
        )

    def backward(self, res, g):
        c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, _, held = res
        gx, gf = g
        gx = np.zeros(c.shape) if gx is None else np.asarray(gx, np.float64)
        gf = 0.0 if gf is None else float(gf)
        optimum = Optimum(c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, held)
        try:
            lam = np.zeros(len(optimum.matrix))
            if gx.any():  # x's pullback, M⁻ᵀ ḡ: only at a non-degenerate vertex
                optimum.vertex()  # (an error naming the constraint elsewhere)
                lam = optimum.solve(gx, transpose=True)
            if gf:  # the value's: the multipliers, wherever they are unique
                lam = lam + gf * optimum.duals()
        except OptimizeError as error:
            nans = self.nan_on_failure(error, *(np.shape(v) for v in res[:7]))
            return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip(nans, res[:7]))
        at = optimum.point()
        cotangents = (gf * at, *optimum.scatter(lam, -np.outer(lam, at)))
        return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip(cotangents, res[:7]))

    def jvp(self, res, tangents):
        c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, _, held = res
        dc, *rest = tangents
        dtype = jb.result_dtype(*res[:7])
        optimum = Optimum(c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, held)
        try:
            at, _ = optimum.vertex(_FORWARD)
        except OptimizeError as error:
            return self.nan_on_failure(error, c.shape, (), dtype=dtype)
        dx = optimum.solve(optimum.gather(rest))  # M ẋ = ṙ - Ṁ x
        df = c @ dx + (0.0 if dc is None else dc @ at)
        return dx.astype(dtype), np.asarray(df, dtype)


class LinprogOptimumCheck(MayFail):
    """``Linprog``'s rules' check that its ``x`` is the only optimal point: ``x`` (the
    vertex recomputed, where it is one) where it is, else an ``OptimizeError`` naming the
    constraints that hold (``fun`` has a kink in ``c``, ``A_ub`` and ``A_eq`` there). On
    the host, from HiGHS's marginals ``held`` (``A_ub``'s rows and the bounds'), without
    another solve: the optimal points near ``x`` keep every constraint with a nonzero
    multiplier holding (see ``Optimum.only_point``)."""

    signature = "(n),(p,n),(p),(q,n),(q),(n),(n),(n),(k)->(n)"

    def forward(self, c, A_ub, b_ub, A_eq, b_eq, lower, upper, x, held):  # noqa: N803
        optimum = Optimum(c, A_ub, b_ub, A_eq, b_eq, lower, upper, x, held)
        try:
            return np.asarray(optimum.only_point(), x.dtype)
        except OptimizeError as error:
            return self.nan_on_failure(error, x.shape)


_WHOLE = (int, np.integer)
_REAL = (int, float, np.integer, np.floating)
_NUMBERS = {
    "maxiter": _WHOLE,
    "time_limit": _REAL,
    "dual_feasibility_tolerance": _REAL,
    "primal_feasibility_tolerance": _REAL,
    "ipm_optimality_tolerance": _REAL,
}
_STRATEGY = "simplex_dual_edge_weight_strategy"
OPTIONS = (*_NUMBERS, "presolve", _STRATEGY)  # SciPy's HiGHS options that Linprog takes


class LinprogMarginals(Linprog):
    """``Linprog`` that also returns HiGHS's marginals, SciPy's ``res.ineqlin.marginals``,
    ``eqlin``'s, ``lower``'s and ``upper``'s in that order, as one array (p + q + 2n,):
    ``x, fun, marginals = LinprogMarginals()(c, A_ub, b_ub, ...)``. They are the value's
    derivatives in ``b_ub``, ``b_eq`` and the bounds, ``y`` in ``c = Mᵀ y`` over the
    constraints that hold (0 for the others). Their own derivatives are taken at a
    non-degenerate vertex, as ``x``'s (``y = M⁻ᵀ c``: in ``c`` and the matrices; none in
    the right-hand sides), and refused by name elsewhere. ``optimize.linprog``'s result
    reads them."""

    signature = "(n),(p,n),(p),(q,n),(q),(n),(n)->(n),(),(m)"

    def output_specs(self, c, a_ub, b_ub, a_eq, b_eq, lower, upper):
        x, fun = super().output_specs(c, a_ub, b_ub, a_eq, b_eq, lower, upper)
        count = b_ub.shape[-1] + b_eq.shape[-1] + 2 * c.shape[-1]
        return x, fun, jax.ShapeDtypeStruct((count,), x.dtype)

    def backward(self, res, g):
        c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, fun, _, held = res
        args = (c, a_ub, b_ub, a_eq, b_eq, lower, upper)
        gx, gf, gm = g
        cotangents = super().backward((*args, x, fun, held), (gx, gf))
        if gm is None or not np.any(gm):
            return cotangents
        optimum = Optimum(c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, held)
        try:
            _, y = optimum.vertex(_MARGINALS)
        except OptimizeError as error:
            nans = self.nan_on_failure(error, *(np.shape(v) for v in args))
            return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip(nans, args))
        # y = M⁻ᵀ c: its pullback of ȳ is w = M⁻¹ ȳ into c, and -y wᵀ into M's rows
        w = optimum.solve(optimum.picked(np.asarray(gm, np.float64)))
        more = (w, *optimum.scatter(np.zeros(len(y)), -np.outer(y, w)))
        return tuple(
            np.asarray(t + e, jb.result_dtype(v)) for t, e, v in zip(cotangents, more, args)
        )

    def jvp(self, res, tangents):
        c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, fun, _, held = res
        args = (c, a_ub, b_ub, a_eq, b_eq, lower, upper)
        dtype = jb.result_dtype(*args)
        dx, df = super().jvp((*args, x, fun, held), tangents)
        optimum = Optimum(c, a_ub, b_ub, a_eq, b_eq, lower, upper, x, held)
        try:
            _, y = optimum.vertex(_FORWARD)
        except OptimizeError as error:
            return self.nan_on_failure(error, dx.shape, (), (optimum.count,), dtype=dtype)
        dc, da_ub, _, da_eq, *_ = tangents
        # ẏ = M⁻ᵀ (ċ - Ṁᵀ y)
        moved = optimum.matrix_tangent(da_ub, da_eq).T @ y
        dy = optimum.solve((0.0 if dc is None else dc) - moved, transpose=True)
        return dx, df, optimum.spread(dy).astype(dtype)


_MARGINALS = " (the marginals' own derivatives are taken at a non-degenerate vertex, as x's)"

_FORWARD = (
    " (forward mode computes x's tangent with fun's; fun's derivatives in b_ub, b_eq and "
    "the bounds, where the multipliers are unique, come from reverse mode: jax.grad, "
    "jax.vjp)"
)


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
) -> OptimizeResult:
    """``scipy.optimize.linprog(c, A_ub, b_ub, A_eq, b_eq, bounds, method=method)``: SciPy's
    result as an ``OptimizeResult`` pytree, ``x`` and ``fun`` from ``Linprog(method,
    on_failure=on_failure)``, ``slack`` (``b_ub - A_ub x``) and ``con`` (``b_eq - A_eq
    x``), ``success``, and ``ineqlin``, ``eqlin``, ``lower`` and ``upper``, each with
    SciPy's ``residual`` and HiGHS's ``marginals`` (the value's derivatives in ``b_ub``,
    ``b_eq`` and the bounds; their own derivatives, in ``c`` and the matrices, are taken at
    a non-degenerate vertex, as ``x``'s, and refused by name elsewhere). Every array is
    differentiable as ``Linprog``'s (SciPy's ``status``, ``message`` and ``nit`` are not
    kept: a failure raises, naming SciPy's status). ``bounds`` in every form SciPy takes:
    one ``(min, max)`` pair for every variable, a list of pairs, ``None`` for no bound
    (default ``(0, None)``); or an (n, 2) array, differentiable like ``lower`` and
    ``upper``. ``options``: SciPy's HiGHS options that ``Linprog`` takes as parameters
    (``maxiter``, ``time_limit``, ``presolve``, the tolerances, the dual edge weights) and
    ``disp=False``. SciPy's ``callback``, ``x0``, ``integrality`` (``milp`` takes integers),
    ``disp=True`` and other options are refused, naming the argument."""
    refuse_unsupported(
        "linprog",
        {
            "callback": (callback, None, "HiGHS reports no iterations to Python here"),
            "x0": (x0, None, "HiGHS takes no starting point (SciPy ignores x0 for it too)"),
            "integrality": (
                None if integrality is None or not np.any(integrality) else integrality,
                None,
                "integer variables are optimize.milp's (its value is differentiable in c)",
            ),
        },
    )
    options = highs_options("linprog", options, OPTIONS, {})
    (c,) = floating(c)
    c = jnp.atleast_1d(c)  # (SciPy's scalars: one unknown; one constraint, below)
    b_ub, b_eq = (None if v is None else jnp.atleast_1d(jnp.asarray(v)) for v in (b_ub, b_eq))
    lower, upper = bound_arrays("linprog", bounds, c.shape[-1], c.dtype)
    solver = LinprogMarginals(method, **options, on_failure=on_failure)
    x, fun, marginals = solver(c, A_ub, b_ub, A_eq, b_eq, lower, upper)
    n = x.shape[-1]
    p, q = (0 if b is None else b.shape[-1] for b in (b_ub, b_eq))

    def residual(a, b):  # b - a x, as SciPy's slack and con
        if b is None:
            return jnp.zeros((*x.shape[:-1], 0), x.dtype)
        return b - jnp.einsum("...ij,...j->...i", jnp.asarray(a), x)

    slack, con = residual(A_ub, b_ub), residual(A_eq, b_eq)
    parts = jnp.split(marginals, [p, p + q, p + q + n], axis=-1)
    return OptimizeResult(
        x=x,
        fun=fun,
        slack=slack,
        con=con,
        success=jnp.isfinite(fun),
        ineqlin=OptimizeResult(residual=slack, marginals=parts[0]),
        eqlin=OptimizeResult(residual=con, marginals=parts[1]),
        lower=OptimizeResult(residual=x - lower, marginals=parts[2]),
        upper=OptimizeResult(residual=upper - x, marginals=parts[3]),
    )
