"""``Milp``: SciPy's ``milp`` (HiGHS), its optimal value differentiable in ``c``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import jaxbridge as jb

from .._shared._failure import MayFail, OnFailure, require_finite
from .._shared._fixed import HoldsFixed
from .._shared._result import OptimizeResult
from ._implicit import OptimizeError
from ._lp_optimum import require_feasible
from ._scipy_forms import (
    box_arrays,
    constraint_arrays,
    floating,
    highs_options,
)

_JUMPS = (
    "an integer solution moves by whole steps, so the optimum jumps where it changes, and "
    "jaxbridge computes no derivative of the continuous part's vertex in the constraints"
)


class Milp(MayFail, HoldsFixed):
    """``min c·x`` subject to ``b_l ≤ A x ≤ b_u`` and ``lower ≤ x ≤ upper``, the entries
    that ``integrality`` marks integers, with SciPy's HiGHS branch and bound on the host:
    ``x, fun = Milp()(c, integrality, A, b_l, b_u)``, as ``scipy.optimize.milp(c,
    integrality=integrality, bounds=Bounds(lower, upper), constraints=LinearConstraint(A,
    b_l, b_u))``.

    ``c`` is (n,); ``integrality`` (n,) integers, SciPy's codes (0 continuous, 1 integer, 2
    semi-continuous, 3 semi-integer); ``A`` (m, n) and ``b_l``, ``b_u`` (m,), ``-inf`` and
    ``inf`` for no bound; ``lower`` and ``upper`` (n,). Omitted, every entry is continuous,
    there are no constraints and the bounds are SciPy's default, ``0 ≤ x``. ``x`` is (n,)
    and ``fun = c·x``. Leading axes are batch axes (one SciPy call per problem).

    Parameters:
        mip_rel_gap: HiGHS's relative gap at which it stops (``None``: SciPy's default,
            1e-4): a larger gap can stop at a solution that is not optimal.
        node_limit: the most branch-and-bound nodes (``None``: no limit).
        time_limit: the most seconds per problem (``None``: no limit).
        on_failure: see ``MayFail``. Fails (an ``OptimizeError`` with SciPy's status) on
            an infeasible or unbounded problem, on a limit reached, and on non-finite
            ``c`` or ``A``.

    Derivatives: ``fun`` is differentiable in ``c``, to every order, with the solution
    held fixed: its gradient is ``x``, where ``x`` is the only optimal solution, which the
    rules check on the host (``MilpOptimumCheck``: two more solves); where another
    ties with it the value has a kink, and the derivative is refused (an
    ``OptimizeError``, NaN under ``on_failure="nan"``), as ``Linprog`` refuses it on an
    optimal edge. ``x``'s derivative in ``c`` is 0 (the solution is locally constant).
    Differentiating in ``A``, ``b_l``, ``b_u``, ``lower`` or ``upper`` is a ``TypeError``
    naming the argument when the program is traced: an integer entry moves by whole steps,
    so the value jumps where a tight constraint pushes it off, and the continuous entries'
    vertex is not differentiated here (``Linprog`` does that for a problem without integers).
    ``integrality`` is integers, never differentiated.
    """

    mip_rel_gap: float | None = None
    node_limit: int | None = None
    time_limit: float | None = None

    signature = "(n),(n),(m,n),(m),(m),(n),(n)->(n),()"
    held = {name: _JUMPS for name in ("A", "b_l", "b_u", "lower", "upper")}

    def __call__(
        self,
        c: Any,
        integrality: Any = None,
        A: Any = None,  # noqa: N803 (SciPy's names)
        b_l: Any = None,
        b_u: Any = None,
        lower: Any = None,
        upper: Any = None,
    ) -> Any:
        c = jnp.asarray(c)
        n = c.shape[-1] if c.ndim else 0
        integrality = jnp.zeros(n, np.int32) if integrality is None else integrality
        A = jnp.zeros((0, n), c.dtype) if A is None else A  # noqa: N806
        b_l = jnp.full(jnp.shape(A)[-2:-1], -jnp.inf, c.dtype) if b_l is None else b_l
        b_u = jnp.full(jnp.shape(A)[-2:-1], jnp.inf, c.dtype) if b_u is None else b_u
        lower = jnp.zeros(n, c.dtype) if lower is None else lower
        upper = jnp.full(n, jnp.inf, c.dtype) if upper is None else upper
        return super().__call__(c, integrality, A, b_l, b_u, lower, upper)

    def __post_init__(self) -> None:
        for name, kind in (
            ("mip_rel_gap", (int, float)),
            ("node_limit", int),
            ("time_limit", (int, float)),
        ):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, kind) or isinstance(value, bool) or not value >= 0
            ):
                raise ValueError(
                    f"Milp: parameter {name!r} must be a nonnegative "
                    f"{'integer' if kind is int else 'number'} or None; got {value!r}."
                )

    def output_specs(self, c, integrality, A, b_l, b_u, lower, upper):  # noqa: N803
        dtype = jb.result_dtype(c, A, b_l, b_u, lower, upper)
        return jax.ShapeDtypeStruct(c.shape, dtype), jax.ShapeDtypeStruct(c.shape[:-1], dtype)

    def check(self, c, integrality, A, b_l, b_u, lower, upper):  # noqa: N803
        if c.shape[-1] == 0:  # (SciPy's own message speaks of c's dimensions)
            raise ValueError("argument 'c' has no entries: a MILP needs one unknown at least.")
        if (
            np.issubdtype(integrality.dtype, np.floating)
            or not np.isin(integrality, (0, 1, 2, 3)).all()
        ):
            raise ValueError(
                "argument 'integrality' must hold integers 0 (continuous), 1 (integer), 2 "
                "(semi-continuous) or 3 (semi-integer)."
            )
        for name, values in (("b_l", b_l), ("b_u", b_u), ("lower", lower), ("upper", upper)):
            if np.isnan(values).any():
                raise ValueError(f"argument {name!r} holds NaN; expected numbers or ±inf.")

    def forward(self, c, integrality, A, b_l, b_u, lower, upper):  # noqa: N803
        dtype = jb.result_dtype(c, A, b_l, b_u, lower, upper)
        try:
            require_finite("argument 'c'", c, OptimizeError.because)
            require_finite("argument 'A'", A, OptimizeError.because)
            result = _solve(_options(self), c, integrality, A, b_l, b_u, lower, upper)
            x, fun = result.x, result.fun
        except OptimizeError as error:
            x, fun = self.nan_on_failure(error, c.shape, ())
        return np.asarray(x, dtype), np.asarray(fun, dtype)

    def pullback(self, res, g):
        _, g_fun = g  # (x is locally constant: its cotangent contributes nothing)
        g_c = None if g_fun is None else g_fun[..., None] * self._only_optimum(res)
        return g_c, None, None, None, None, None, None  # (the others: held_fixed's guard)

    def pushforward(self, res, tangents):
        t_c = tangents[0]
        t_fun = None if t_c is None else jnp.sum(t_c * self._only_optimum(res), -1)
        return None, t_fun

    def _only_optimum(self, res):
        """``x``, checked on the host to be the only optimal solution (``MilpOptimumCheck``):
        the value's gradient in ``c`` where it is, an error (or NaN) where another ties with
        it. Constant: its own derivative is 0."""
        check = MilpOptimumCheck(**_options(self), on_failure=self.on_failure)
        return check(*(jax.lax.stop_gradient(r) for r in res[:9]))


class MilpOptimumCheck(MayFail):
    """``Milp``'s rules' check that its ``x`` is the only optimal solution: ``x`` where it
    is, else an ``OptimizeError`` naming an entry that varies among the optimal solutions
    (``fun`` has a kink in ``c`` there).

    On the host, two more solves, to a gap of 0: the smallest and the largest ``w·x`` over
    the solutions as good as ``x`` (to 1e-9 of ``|c|·|x| + |fun|``), for a ``w`` of
    irrational-looking entries, which no two distinct solutions share a value along but by
    chance; a solution that differs from ``x`` by more than 1e-6 (relative) in an entry is
    a tie, as is a better one than HiGHS returned within its gap. Parameters as
    ``Milp``'s."""

    mip_rel_gap: float | None = None
    node_limit: int | None = None
    time_limit: float | None = None

    signature = "(n),(n),(m,n),(m),(m),(n),(n),(n),()->(n)"

    def forward(self, c, integrality, A, b_l, b_u, lower, upper, x, fun):  # noqa: N803
        try:
            if not np.isfinite(x).all():  # (the solve itself failed: NaN under on_failure)
                return x
            # the solutions as good as x, to rounding: HiGHS's own gap would let the
            # continuous entries move with it (measured: 0.5 to 0.4986 at a gap of 1e-4)
            within = float(fun) + 1e-9 * (float(np.abs(c) @ np.abs(x)) + abs(float(fun)))
            rows = np.vstack([A, c[None]])
            low, high = np.append(b_l, -np.inf), np.append(b_u, within)
            exact = {**_options(self), "mip_rel_gap": 0.0}  # (a gap could hide a tie)
            # a direction no two solutions share a value along, but by a measure-zero chance:
            # where another solution is as good, w·x reaches past w·x* at one end or the other
            w = (1 + np.modf(np.arange(1, len(c) + 1) * _GOLDEN)[0]) / np.maximum(1, np.abs(x))
            for side in (1.0, -1.0):
                other = _solve(exact, side * w, integrality, rows, low, high, lower, upper).x
                moved = np.abs(other - x) / np.maximum(1, np.abs(x))
                if moved.max() > 1e-6:
                    j = int(np.argmax(moved))
                    raise OptimizeError.because(
                        f"milp's optimum is not unique: x[{j}] is {x[j]:.6g} in the solution "
                        f"found and {other[j]:.6g} in another as good (fun = {float(fun):.6g}), "
                        "so fun has a kink in c there and no derivative"
                    )
            return x
        except OptimizeError as error:
            return self.nan_on_failure(error, x.shape)


def _options(adapter: Any) -> dict[str, Any]:
    """SciPy's ``options`` for HiGHS: the parameters given (``Milp``'s, ``MilpOptimumCheck``'s)."""
    return {name: getattr(adapter, name) for name in _OPTIONS if getattr(adapter, name) is not None}


def _solve(options, c, integrality, A, b_l, b_u, lower, upper):  # noqa: N803
    result = scipy.optimize.milp(
        c,
        integrality=integrality,
        bounds=scipy.optimize.Bounds(lower, upper),
        constraints=scipy.optimize.LinearConstraint(A, b_l, b_u) if len(A) else None,
        options=options,
    )
    if result.status != 0:
        raise OptimizeError.because(
            f"milp found no optimum (status {result.status}: {result.message})"
        )
    labels = [f"A row {i}" for i in range(len(A))]
    require_feasible("milp", result.x, A, b_l, b_u, lower, upper, labels)
    return result


_OPTIONS = ("mip_rel_gap", "node_limit", "time_limit")  # SciPy's options that Milp takes
_GOLDEN = (5**0.5 - 1) / 2  # (its multiples' fractional parts: distinct, irrational)


def milp(
    c: Any,
    *,
    integrality: Any = None,
    bounds: Any = None,
    constraints: Any = None,
    options: dict[str, Any] | None = None,
    on_failure: OnFailure = "raise",
    **kwargs: Any,
) -> OptimizeResult:
    """``scipy.optimize.milp(c, integrality=..., bounds=..., constraints=...,
    options=...)``: SciPy's result as an ``OptimizeResult`` pytree, ``x`` and ``fun`` from
    ``Milp(**options)(c, integrality, A, b_l, b_u, lower, upper)``, ``fun`` differentiable
    in ``c`` (see ``Milp``), and ``success`` (SciPy's ``status``, ``message`` and the
    ``mip_*`` counts are not kept: a failure raises, naming SciPy's status).

    Arguments in SciPy's forms: ``integrality`` SciPy's codes, one per variable or one for
    all (default: all continuous); ``bounds`` a ``scipy.optimize.Bounds`` or a pair ``(lb,
    ub)``, each a number or one per variable (default ``0 <= x``); ``constraints`` a
    ``scipy.optimize.LinearConstraint``, a tuple ``(A, lb, ub)`` or a list of them, stacked
    in order; ``options`` SciPy's ``mip_rel_gap``, ``node_limit`` and ``time_limit`` (with
    ``disp=False`` and ``presolve=True``, SciPy's defaults, the only values taken).
    ``on_failure``: as ``Milp``'s. Other keywords are refused by name."""
    for name in kwargs:
        where = (
            f"it goes in options={{{name!r}: ...}}, as SciPy's (or Milp({name}=...))"
            if name in _OPTIONS
            else "it is not one of SciPy's milp arguments"
        )
        raise TypeError(f"milp: argument {name!r} is not taken here: {where}.")
    options = highs_options(
        "milp", options, _OPTIONS, {"presolve": (True, "Milp runs HiGHS with its presolve")}
    )
    (c,) = floating(c)
    n, dtype = c.shape[-1], c.dtype
    codes = jnp.broadcast_to(jnp.asarray(0 if integrality is None else integrality), (n,))
    lower, upper = box_arrays("milp", bounds, n, dtype)
    a, b_l, b_u = constraint_arrays("milp", constraints, n, dtype)
    solver = Milp(on_failure=on_failure, **options)
    x, fun = solver(c, codes.astype(np.int32), a, b_l, b_u, lower, upper)
    return OptimizeResult(x=x, fun=fun, success=jnp.isfinite(fun))
