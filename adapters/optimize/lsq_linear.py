"""``LsqLinear``: SciPy's ``lsq_linear``, differentiable on its active set."""

from __future__ import annotations

from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import jaxbridge as jb

from .._shared._failure import MayFail, OnFailure, require_finite
from .._shared._result import OptimizeResult
from ._implicit import OptimizeError
from ._scipy_forms import floating, refuse_scipy_bounds, refuse_unsupported

_TIGHT = 1e-7  # an entry this close to a bound, relative to its size, is at it (trf stops
# within about 5e-9 of it; its active_mask missed 6 of 300 random problems' bounded entries)
_ZERO = 1e-9  # a multiplier this small, relative to the size of its terms, is 0
_FLOOR = 1e-6  # an entry counts as at least this much of the largest in its scale


class LsqLinear(MayFail):
    """``argmin ½‖A x - b‖²`` over ``lb ≤ x ≤ ub``, with SciPy's ``lsq_linear`` on the
    host: ``x, cost = LsqLinear()(A, b, lb, ub)``, as ``scipy.optimize.lsq_linear(A, b,
    bounds=(lb, ub))``.

    ``A`` is (m, n), ``b`` (m,), ``lb`` and ``ub`` (n,) (``-inf``/``inf`` for none;
    omitted, none); ``x`` is (n,) and ``cost = ½‖A x - b‖²``, SciPy's ``cost``. Leading
    axes are batch axes (one SciPy call per problem).

    Parameters:
        method: SciPy's ``"trf"`` (the default) or ``"bvls"``.
        tol: SciPy's tolerance (``trf``'s relative change of the cost; ``bvls``'s too).
        max_iter: SciPy's iteration limit (``None``: its default).
        on_failure: see ``MayFail``. Fails (an ``OptimizeError``) on non-finite ``A`` or
            ``b``, on SciPy's iteration limit, and, where a derivative is asked for, on a
            degenerate solution (below).

    Derivatives: first order, in ``A``, ``b``, ``lb`` and ``ub``, on the active set (the
    entries within 1e-7, relative, of a bound: ``trf`` stops a few 1e-9 inside; SciPy's
    ``active_mask`` misses some): the entries at a bound follow it, and the free ones are the
    least-squares solution of their columns against ``b`` less the bounded columns' part;
    the free columns must be independent. Every bounded entry must be held there by a
    strictly nonzero multiplier (the gradient of the cost pushes it out of the box); a
    bounded entry whose multiplier is zero would leave its bound under the smallest change:
    an ``OptimizeError`` says so, or NaN on request. ``lb`` must be below ``ub`` (SciPy
    refuses equal bounds), a ``ValueError`` naming them. The rules use the active set's exact
    solution (``trf`` stops within its tolerance of it, a relative change of the cost: beside
    a large residual that can be far from a bound its solution is on, and free entries whose
    fit crosses a bound are held at it, as an active-set method would).
    """

    method: Literal["trf", "bvls"] = "trf"
    tol: float = 1e-10
    max_iter: int | None = None

    signature = "(m,n),(m),(n),(n)->(n),()"
    blas_threads = 1  # its dense least squares woke OpenBLAS's threads (see Adapter.blas_threads)

    def __call__(self, A: Any, b: Any, lb: Any = None, ub: Any = None) -> Any:  # noqa: N803
        for name, value in (("lb", lb), ("ub", ub)):
            refuse_scipy_bounds("LsqLinear", name, value, "optimize.lsq_linear(A, b, bounds)")
        A, b = floating(A, b)  # noqa: N806 (SciPy's name)
        n = A.shape[-1]
        lb = jnp.full(n, -jnp.inf, A.dtype) if lb is None else lb
        ub = jnp.full(n, jnp.inf, A.dtype) if ub is None else ub
        return super().__call__(A, b, lb, ub)

    def __post_init__(self) -> None:
        if not isinstance(self.tol, (int, float)) or isinstance(self.tol, bool) or not self.tol > 0:
            raise ValueError(
                f"LsqLinear: parameter 'tol' must be a positive number; got {self.tol!r}."
            )
        if self.max_iter is not None and (
            not isinstance(self.max_iter, int)
            or isinstance(self.max_iter, bool)
            or self.max_iter < 1
        ):
            raise ValueError(
                f"LsqLinear: parameter 'max_iter' must be a positive integer or None; got "
                f"{self.max_iter!r}."
            )

    def output_specs(self, A, b, lb, ub):  # noqa: N803
        dtype = jb.result_dtype(A, b, lb, ub)
        return jax.ShapeDtypeStruct(A.shape[-1:], dtype), jax.ShapeDtypeStruct((), dtype)

    def check(self, A, b, lb, ub):  # noqa: N803
        if (
            np.isnan(lb).any()
            or np.isnan(ub).any()
            or (lb == np.inf).any()
            or (ub == -np.inf).any()
        ):
            raise ValueError(
                "arguments 'lb' and 'ub' must hold numbers (-inf in 'lb', inf in 'ub': no bound)."
            )
        if (lb >= ub).any():  # (SciPy refuses equal bounds too, in its own words)
            raise ValueError("argument 'lb' must be below 'ub' in every entry.")

    def forward(self, A, b, lb, ub):  # noqa: N803
        dtype = jb.result_dtype(A, b, lb, ub)
        try:
            require_finite("argument 'A'", A, OptimizeError.because)
            require_finite("argument 'b'", b, OptimizeError.because)
            result = scipy.optimize.lsq_linear(
                np.asarray(A, np.float64),  # (trf refuses float32)
                np.asarray(b, np.float64),
                tuple(np.asarray(v, np.float64) for v in (lb, ub)),
                method=self.method,
                tol=self.tol,
                max_iter=self.max_iter,
            )
            if result.status <= 0:
                raise OptimizeError.because(
                    f"lsq_linear did not converge (status {result.status}: {result.message})"
                )
            x, cost = result.x, result.cost
        except OptimizeError as error:
            x, cost = self.nan_on_failure(error, A.shape[-1:], ())
        return np.asarray(x, dtype), np.asarray(cost, dtype)

    def backward(self, res, g):
        A, b, lb, ub, x, _ = res  # noqa: N806
        gx, gc = g
        try:
            fit = _ActiveSet(A, b, lb, ub, x)
        except OptimizeError as error:
            nans = self.nan_on_failure(error, A.shape, b.shape, lb.shape, ub.shape)
            return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip(nans, res))
        ga, gb, g_bound = np.zeros(A.shape), np.zeros(b.shape), np.zeros(x.shape)
        f, at = fit.free, fit.bounded
        if gx is not None:  # x_F = G⁻¹ A_Fᵀ (b - A_B x_B), x_B the bounds
            gx = np.asarray(gx, np.float64)
            u = fit.solve(gx[f])
            au = fit.a[:, f] @ u
            ga[:, f] += np.outer(fit.r, u)
            ga -= np.outer(au, fit.x)
            gb += au
            g_bound[at] += gx[at] - fit.a[:, at].T @ au
        if gc is not None:  # ½‖r‖²: ċ = rᵀ(ḃ - Ȧ x) - (A_Bᵀ r)·ẋ_B (A_Fᵀ r = 0)
            gb += float(gc) * fit.r
            ga -= float(gc) * np.outer(fit.r, fit.x)
            g_bound[at] -= float(gc) * (fit.a[:, at].T @ fit.r)
        g_lb, g_ub = np.where(fit.side < 0, g_bound, 0), np.where(fit.side > 0, g_bound, 0)
        return tuple(np.asarray(t, jb.result_dtype(v)) for t, v in zip((ga, gb, g_lb, g_ub), res))

    def jvp(self, res, tangents):
        A, b, lb, ub, x, _ = res  # noqa: N806
        da, db, dlb, dub = tangents
        dtype = jb.result_dtype(A, b, lb, ub)
        try:
            fit = _ActiveSet(A, b, lb, ub, x)
        except OptimizeError as error:
            return self.nan_on_failure(error, x.shape, (), dtype=dtype)
        f, at = fit.free, fit.bounded
        dx = np.zeros(x.shape)
        for bound, side in ((dlb, fit.side < 0), (dub, fit.side > 0)):
            if bound is not None:
                dx[side] = np.asarray(bound, np.float64)[side]
        moved = np.zeros(b.shape) if db is None else np.asarray(db, np.float64)  # ḃ - Ȧ x - A_B ẋ_B
        moved = moved - fit.a[:, at] @ dx[at]
        rhs = np.zeros(len(f))
        if da is not None:
            da = np.asarray(da, np.float64)
            moved = moved - da @ fit.x
            rhs += da[:, f].T @ fit.r
        dx[f] = fit.solve(rhs + fit.a[:, f].T @ moved)
        return dx.astype(dtype), np.asarray(fit.r @ moved, dtype)  # (A_Fᵀ r = 0)


class _ActiveSet:
    """The entries at a bound, ``bounded`` (``side`` -1 at the lower, 1 at the upper), and
    the free ones, ``free``; the active set's exact solution ``x`` and residual ``r = b -
    A x``, and solves with ``a_Fᵀ a_F``; refused where it is degenerate."""

    def __init__(self, A, b, lb, ub, x) -> None:  # noqa: N803
        if not np.isfinite(x).all():
            raise OptimizeError.because("lsq_linear found no solution: x has no derivative")
        A, b, lb, ub, x = (np.asarray(v, np.float64) for v in (A, b, lb, ub, x))  # noqa: N806
        # each entry on its own scale, with a floor relative to the solution's size, not an
        # absolute 1: x = [5e-8, 1] over x >= 0 read its free 5e-8 as at the bound, and
        # refused a well-posed problem as degenerate
        tight = _TIGHT * (np.abs(x) + _FLOOR * np.abs(x).max(initial=0))
        to_lb, to_ub = x - lb, ub - x
        # at a bound, the nearer one: a box narrower than the tolerance is at both
        at_lb = (to_lb <= tight) & (to_lb <= to_ub)
        self.side = np.where(at_lb, -1, np.where(to_ub <= tight, 1, 0))
        self.a = A
        self.x, a_f = self._fit(A, b, lb, ub)
        # trf may stop far from a bound its answer should be on (it stops on the cost's
        # relative change: beside a residual of 1e7 a distance of 0.05 is within it), so the
        # fit of its free entries crosses their bounds: then those are at their bounds, as
        # an active-set method would find (each round holds at least one more, or stops)
        for _ in range(len(x)):
            crossed = (self.side == 0) & ((self.x < lb) | (self.x > ub))
            if not crossed.any():
                break
            self.side = np.where(crossed, np.where(self.x < lb, -1, 1), self.side)
            self.x, a_f = self._fit(A, b, lb, ub)
        self.r = b - A @ self.x
        self._gram = a_f.T @ a_f
        # -∇ of ½‖A x - b‖² at the bounded entries, times their side: positive when it
        # pushes out of the box, as it must
        pushes = A[:, self.bounded].T @ self.r * self.side[self.bounded]
        # each against the terms it sums (as Nnls's: not ‖A_j‖ ‖r‖, which counts rows of r
        # that column j does not touch)
        terms = np.abs(self.r) + np.abs(b) + np.abs(A) @ np.abs(self.x)
        if (pushes <= _ZERO * (np.abs(A[:, self.bounded]).T @ terms)).any():
            raise OptimizeError.because(
                "lsq_linear's solution is degenerate: an entry is at its bound with a zero "
                "multiplier (it would leave the bound under the smallest change): x has no "
                "derivative"
            )

    def _fit(self, A, b, lb, ub) -> tuple[np.ndarray, np.ndarray]:  # noqa: N803
        """The entries at their bounds, and the free ones' least-squares fit; refused where
        the free columns are dependent."""
        self.free, self.bounded = np.flatnonzero(self.side == 0), np.flatnonzero(self.side)
        x = np.where(self.side < 0, lb, np.where(self.side > 0, ub, 0.0))
        a_f = A[:, self.free]
        if np.linalg.matrix_rank(a_f) < len(self.free):
            raise OptimizeError.because(
                "lsq_linear's solution is degenerate: the columns of its free entries are "
                "not independent: x has no derivative"
            )
        x[self.free] = np.linalg.lstsq(a_f, b - A @ x, rcond=None)[0]
        return x, a_f

    def solve(self, v: np.ndarray) -> np.ndarray:
        """``(a_Fᵀ a_F)⁻¹ v``."""
        return np.linalg.solve(self._gram, v)


def lsq_linear(
    A: Any,  # noqa: N803 (SciPy's names)
    b: Any,
    bounds: Any = (-np.inf, np.inf),
    method: Literal["trf", "bvls"] = "trf",
    tol: float = 1e-10,
    lsq_solver: str | None = None,
    lsmr_tol: Any = None,
    max_iter: int | None = None,
    verbose: int = 0,
    *,
    lsmr_maxiter: int | None = None,
    on_failure: OnFailure = "raise",
) -> OptimizeResult:
    """``scipy.optimize.lsq_linear(A, b, bounds, method, tol, max_iter=max_iter)``: SciPy's
    result as an ``OptimizeResult`` pytree, ``x`` and ``cost`` from ``LsqLinear(method,
    tol, max_iter, on_failure=on_failure)(A, b, lb, ub)``, ``fun`` (the residuals ``A x -
    b``) and ``success``, all differentiable as ``LsqLinear``'s (SciPy's ``optimality``,
    ``active_mask``, ``status``, ``message`` and ``nit`` are not kept: a failure raises,
    naming SciPy's status). ``bounds`` is SciPy's ``(lb, ub)`` or a ``Bounds``, each bound a
    number or an (n,) array. ``A`` is dense: ``lsq_solver`` is SciPy's ``"exact"`` (its
    default for a dense ``A``), and the ``lsmr`` options and ``verbose`` are refused, naming
    the argument."""
    refuse_unsupported(
        "lsq_linear",
        {
            "lsq_solver": (
                None if lsq_solver == "exact" else lsq_solver,
                None,
                "A is dense and solved exactly (SciPy's 'exact', its default for a dense A)",
            ),
            "lsmr_tol": (lsmr_tol, None, "the lsmr solver is not used (A is dense)"),
            "lsmr_maxiter": (lsmr_maxiter, None, "the lsmr solver is not used (A is dense)"),
            "verbose": (verbose, 0, "SciPy's report is not shown (the solve runs on the host)"),
        },
    )
    if isinstance(bounds, scipy.optimize.Bounds):
        bounds = (bounds.lb, bounds.ub)
    if not (isinstance(bounds, (list, tuple)) and len(bounds) == 2):
        raise ValueError(
            "lsq_linear: argument 'bounds' must be SciPy's (lb, ub), each a number or an "
            f"array of one bound per variable; got {bounds!r}."
        )
    A, b = floating(A, b)  # noqa: N806 (SciPy's name)
    n = A.shape[-1]
    lb, ub = (jnp.broadcast_to(jnp.asarray(v, A.dtype), (n,)) for v in bounds)
    solver = LsqLinear(method=method, tol=tol, max_iter=max_iter, on_failure=on_failure)
    x, cost = solver(A, b, lb, ub)
    residuals = jnp.einsum("...ij,...j->...i", A, x) - b
    return OptimizeResult(x=x, cost=cost, fun=residuals, success=jnp.isfinite(cost))
