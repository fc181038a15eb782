"""SciPy's calls of a residual function written in JAX: ``root``, ``least_squares`` and
``curve_fit``, solved by ``Root`` and ``LeastSquares`` and differentiable in their data."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from .._shared._failure import OnFailure
from .._shared._jax_function import (
    JaxObjective,
    JaxResidual,
    JaxSquareResidual,
    Packing,
    float_dtype,
    raveled,
    square_output,
)
from .._shared._result import OptimizeResult
from ..linalg import solve  # (float64 on every backend: a TPU has no float64 LU)
from ._scipy_forms import method_named, options_pairs
from .least_squares import LeastSquares
from .minimize import Minimize
from .minimize_bounded import MinimizeBounded
from .root import Root


def root(
    fun: Callable,
    x0: Any,
    args: Any = (),
    method: str = "hybr",
    jac: Any = None,
    tol: float | None = None,
    callback: Any = None,
    options: dict | None = None,
    *,
    on_failure: OnFailure = "raise",
) -> OptimizeResult:
    """``scipy.optimize.root`` with ``fun(x, *args)`` written in JAX (as many outputs as
    ``x0`` has entries): a root near ``x0``, differentiable in ``args`` (to second order)
    under ``jit``, ``vmap`` and ``grad``.

    SciPy iterates on the host in float64 with ``fun`` compiled for the CPU backend; its
    Jacobian comes from JAX (``jac`` stays ``None``). Methods as ``Root``'s: ``"hybr"`` (the
    default), ``"lm"``, ``"broyden1"``, ``"broyden2"``, ``"anderson"``, ``"krylov"``,
    ``"df-sane"``. The root is checked and refined as ``Root`` says; where it fails, an
    ``OptimizeError`` (with ``on_failure="nan"``: NaN, ``success`` False).

    Returns:
        ``OptimizeResult``: ``x`` (shaped as ``x0``), ``fun`` (the residual there, flat),
        ``success``.
    """
    owner = "root"
    _refuse_given(owner, jac=jac, callback=callback)
    args = args if isinstance(args, tuple) else (args,)
    x_packing, x, theta, packing = _packed(x0, args)
    residual = JaxSquareResidual(fun, x_packing, packing, role="fun")
    square_output(owner, "fun", residual, x, theta)
    solver = Root(
        residual,
        method=method_named(owner, method, Root._methods),
        tol=tol,
        options=options_pairs(owner, options),
        on_failure=on_failure,
    )
    x = solver(x, theta)
    return OptimizeResult(
        x=x_packing.unflat(x),
        fun=residual.called(x, theta),
        success=jnp.all(jnp.isfinite(x), axis=-1),
    )


def least_squares(
    fun: Callable,
    x0: Any,
    jac: Any = "2-point",
    bounds: Any = (-np.inf, np.inf),
    method: str = "trf",
    ftol: float | None = 1e-8,
    xtol: float | None = 1e-8,
    gtol: float | None = 1e-8,
    loss: str = "linear",
    f_scale: float = 1.0,
    max_nfev: int | None = None,
    args: Any = (),
    kwargs: dict | None = None,
    *,
    on_failure: OnFailure = "raise",
) -> OptimizeResult:
    """``scipy.optimize.least_squares`` with ``fun(x, *args, **kwargs)`` written in JAX: a
    strict local minimiser of SciPy's cost ``½ C² Σ ρ((fᵢ/C)²)`` (``C = f_scale``; ``½ |f|²``
    for the default ``loss="linear"``) from ``x0``, within ``bounds``, differentiable in
    ``args`` and ``kwargs`` (to second order, and in array ``bounds`` too) under ``jit``,
    ``vmap`` and ``grad``.

    The Jacobian comes from JAX (``jac`` stays SciPy's default). Methods ``"trf"`` (the
    default), ``"dogbox"``, ``"lm"`` (which, as SciPy's, takes neither bounds nor a robust
    loss). ``bounds``: SciPy's ``(lb, ub)`` pair (numbers or one entry per variable of
    ``x0``, ``±inf`` for none) or a ``Bounds``. ``loss``: SciPy's ``"linear"``,
    ``"soft_l1"``, ``"huber"``, ``"cauchy"``, ``"arctan"``.

    Without bounds and with the linear loss, SciPy's ``least_squares`` solves (``LeastSquares``:
    its tolerances passed on, the answer refined to 1e-10 and checked). With bounds or a
    robust loss the cost above is minimised in the box by L-BFGS-B from ``x0`` and refined
    (``MinimizeBounded``, or ``Minimize`` without bounds): the same strict minimum that
    SciPy's trf and dogbox converge to, to their tolerance (``method`` then chooses nothing
    more); the derivatives are the implicit function theorem's on that cost's stationarity,
    a variable held at an active bound following it. Huber's ``ρ`` has a jump in its second
    derivative at ``|fᵢ| = C``: a residual exactly there has no second derivative.

    Returns:
        ``OptimizeResult``: ``x`` (shaped as ``x0``), ``fun`` (the residuals, flat),
        ``cost``, ``jac`` (their Jacobian in ``x``, scaled for a robust loss as SciPy's),
        ``grad`` (the cost's gradient), ``active_mask`` (-1 at a lower bound, 1 at an upper,
        0 free; exactly at the bound, where SciPy's trf leaves a variable within its
        tolerance), ``success``.
    """
    owner = "least_squares"
    _refuse_given(owner, jac=None if isinstance(jac, str) and jac == "2-point" else jac)
    if loss not in _LOSSES:
        raise ValueError(
            f"{owner}: argument 'loss' must be one of {', '.join(map(repr, _LOSSES))}, as "
            f"SciPy's; got {loss!r}."
        )
    if not (np.ndim(f_scale) == 0 and float(f_scale) > 0):
        raise ValueError(f"{owner}: argument 'f_scale' must be positive; got {f_scale!r}.")
    method = method_named(owner, method, LeastSquares._methods)
    args = args if isinstance(args, tuple) else (args,)
    everything = (args, dict(kwargs or {}))
    x_packing, x, theta, packing = _packed(x0, everything)
    lower, upper, bounded = _box(owner, bounds, x)
    if method == "lm" and (bounded or loss != "linear"):
        raise ValueError(
            f"{owner}: method 'lm' takes neither bounds nor a loss other than 'linear', as "
            f"SciPy's; use 'trf' or 'dogbox' (got loss={loss!r}, bounds={bounds!r})."
        )
    called = _CalledWithKeywords(fun)
    residual = JaxResidual(called, x_packing, packing, role="fun")
    if bounded or loss != "linear":
        cost = _Cost(called, loss, float(f_scale))
        options = () if max_nfev is None else (("maxfun", max_nfev),)
        box = (lower, upper, bounded)
        x = _minimised(cost, x_packing, packing, x, theta, *box, options, on_failure)
    else:
        # the class's tol sets all three (1e-12 by default, refined to 1e-10 after): SciPy's
        # defaults stand for that; a tolerance set away from them, for the smallest given
        tolerances = [t for t in (ftol, xtol, gtol) if t is not None and t != 1e-8]
        options = () if max_nfev is None else (("max_nfev", max_nfev),)
        solver = LeastSquares(
            residual,
            method=method,
            tol=min(tolerances) if tolerances else None,
            options=options,
            on_failure=on_failure,
        )
        x = solver(x, theta)
    r, jacobian = residual.called(x, theta), jax.jacfwd(residual.called)(x, theta)
    c = float(f_scale)
    z = (r / c) ** 2
    rho = jnp.vectorize(_LOSSES[loss])
    slope = jnp.vectorize(jax.grad(_LOSSES[loss]))(z)
    bend = jnp.vectorize(jax.grad(jax.grad(_LOSSES[loss])))(z)
    # SciPy's modified Jacobian for a robust loss (``scale_for_robust_loss_function``)
    scale = jnp.sqrt(jnp.maximum(slope + 2 * bend * z, np.finfo(np.float64).eps))
    active = jnp.where(x <= lower, -1, jnp.where(x >= upper, 1, 0)).astype(jnp.int32)
    return OptimizeResult(
        x=x_packing.unflat(x),
        fun=r,
        cost=0.5 * c**2 * jnp.sum(rho(z), axis=-1),
        jac=jacobian if loss == "linear" else jacobian * scale[..., :, None],
        grad=jnp.einsum("...mn,...m->...n", jacobian, slope * r),
        active_mask=active,
        success=jnp.all(jnp.isfinite(x), axis=-1),
    )


def _huber(z: jax.Array) -> jax.Array:
    # (the unused branch's square root kept off 0, whose derivative is infinite)
    return jnp.where(z <= 1, z, 2 * jnp.sqrt(jnp.maximum(z, 1.0)) - 1)


_LOSSES: dict[str, Callable] = {
    "linear": lambda z: z,
    "soft_l1": lambda z: 2 * (jnp.sqrt(1 + z) - 1),
    "huber": _huber,
    "cauchy": jnp.log1p,
    "arctan": jnp.arctan,
}
"""SciPy's ``ρ(z)`` of ``least_squares``' ``loss``, ``z`` the squared scaled residual."""


@dataclasses.dataclass(frozen=True)
class _Cost:
    """SciPy's cost ``½ C² Σ ρ((fᵢ/C)²)`` of ``residual(x, *rest)``."""

    residual: Callable
    loss: str
    f_scale: float

    def __call__(self, x: Any, *rest: Any) -> Any:
        r = raveled(self.residual(x, *rest))
        c = self.f_scale
        return 0.5 * c**2 * jnp.sum(_LOSSES[self.loss]((r / c) ** 2))


def _minimised(
    cost: Callable,
    x_packing: Packing,
    packing: Packing,
    x: jax.Array,
    theta: jax.Array,
    lower: jax.Array,
    upper: jax.Array,
    bounded: bool,
    options: tuple,
    on_failure: OnFailure,
) -> jax.Array:
    """The strict minimiser of ``cost(x, *args)`` in the box by L-BFGS-B, as ``minimize``
    solves it: ``MinimizeBounded`` (differentiable in the bounds too), ``Minimize`` without."""
    objective = JaxObjective(cost, x_packing, packing, role="fun")
    if bounded:
        solver = MinimizeBounded(objective, options=options, on_failure=on_failure)
        return solver(x, theta, lower, upper)
    return Minimize(objective, options=options, on_failure=on_failure)(x, theta)


def _box(owner: str, bounds: Any, x: jax.Array) -> tuple[jax.Array, jax.Array, bool]:
    """``(lower, upper, bounded)`` from SciPy's ``bounds`` (a ``Bounds`` or a ``(lb, ub)``
    pair of numbers or of one entry per variable); ``bounded`` unless every bound is
    infinite. A concrete ``x0`` outside them is refused, as SciPy refuses it."""
    if isinstance(bounds, scipy.optimize.Bounds):
        bounds = (bounds.lb, bounds.ub)
    n, dtype = x.shape[-1], x.dtype
    try:
        lb, ub = bounds
        lower, upper = (jnp.broadcast_to(jnp.asarray(b, dtype), (n,)) for b in (lb, ub))
    except (TypeError, ValueError):
        raise ValueError(
            f"{owner}: argument 'bounds' must be SciPy's pair (lb, ub), each a number or "
            f"{n} values (one per entry of x0), or a scipy.optimize.Bounds; got {bounds!r}."
        ) from None
    try:  # (where the bounds are traced, they are taken as finite)
        lo, hi = (np.broadcast_to(np.asarray(b, np.float64), (n,)) for b in (lb, ub))
    except jax.errors.TracerArrayConversionError:
        return lower, upper, True
    if (lo >= hi).any():
        raise ValueError(
            f"{owner}: argument 'bounds' must have each lower bound below its upper bound, as "
            f"SciPy's; got lb = {lo}, ub = {hi}."
        )
    try:
        start = np.asarray(x)
    except jax.errors.TracerArrayConversionError:
        start = None
    if start is not None and ((start < lo) | (start > hi)).any():
        raise ValueError(
            f"{owner}: argument 'x0' must lie within 'bounds' (SciPy refuses an infeasible "
            f"start); got x0 = {start}, lb = {lo}, ub = {hi}."
        )
    return lower, upper, bool(np.isfinite(lo).any() or np.isfinite(hi).any())


def curve_fit(
    f: Callable,
    xdata: Any,
    ydata: Any,
    p0: Any = None,
    sigma: Any = None,
    absolute_sigma: bool = False,
    check_finite: bool | None = None,
    bounds: Any = (-np.inf, np.inf),
    method: str | None = None,
    jac: Any = None,
    *,
    on_failure: OnFailure = "raise",
) -> tuple[jax.Array, jax.Array]:
    """``scipy.optimize.curve_fit`` with the model ``f(xdata, *params)`` written in JAX:
    ``(popt, pcov)``, both differentiable in ``xdata``, ``ydata`` and ``sigma`` (to second
    order for ``popt``) under ``jit``, ``vmap`` and ``grad``.

    The fit minimises ``Σ ((f(xdata, *p) - ydata) / sigma)²`` by ``LeastSquares`` (method
    ``"lm"`` by default, as SciPy's; ``"trf"``, ``"dogbox"``), from ``p0`` (default: ones,
    one per parameter of ``f`` after the first, as SciPy counts them). ``pcov`` is SciPy's:
    ``(JᵀJ)⁻¹`` at ``popt``, ``J`` the residuals' Jacobian, times ``Σ r² / (m - n)`` unless
    ``absolute_sigma`` (inf where ``m <= n``, as SciPy's). ``sigma``: one standard deviation
    per point (a covariance matrix is not offered). ``bounds``: SciPy's ``(lb, ub)`` or a
    ``Bounds``; with finite ones, as SciPy, the method defaults to ``"trf"`` (``"lm"`` is
    refused), ``p0`` to a point inside them (SciPy's rule: the middle of a finite box, a bound
    plus or minus 1, else 1), and the fit is ``least_squares``' bounded one (L-BFGS-B in the
    box, refined; differentiable in array bounds too, a parameter at an active bound
    following it). ``pcov`` is then still SciPy's, from the full Jacobian at ``popt``.
    """
    owner = "curve_fit"
    _refuse_given(owner, jac=jac)
    if check_finite is False:
        raise ValueError(f"{owner}: check_finite=False is not offered: NaN data are refused.")
    dtype = float_dtype()
    if p0 is None:
        count = len(inspect.signature(f).parameters) - 1
        if count < 1:
            raise ValueError(
                f"{owner}: f takes no parameters after xdata that p0 could default to (ones "
                "per parameter, as SciPy counts them): pass p0."
            )
        p0 = _feasible_start(bounds, count)
    p0 = jnp.atleast_1d(jnp.asarray(p0, dtype))
    ydata = jnp.asarray(ydata, dtype)
    sigma = jnp.ones_like(ydata) if sigma is None else jnp.asarray(sigma, dtype)
    if sigma.shape != ydata.shape:
        raise ValueError(
            f"{owner}: sigma must hold one standard deviation per entry of ydata "
            f"{ydata.shape}, got shape {sigma.shape} (a covariance matrix is not offered)."
        )
    data = (xdata, ydata, sigma)
    x_packing, p, theta, packing = _packed(p0, data)
    residual = JaxResidual(_Weighted(f), x_packing, packing, role="f")
    m, n = ydata.size, p0.size
    lower, upper, bounded = _box(owner, bounds, p)
    method = ("trf" if bounded else "lm") if method is None else method
    method = method_named(owner, method, LeastSquares._methods)
    if bounded and method == "lm":
        raise ValueError(
            f"{owner}: method 'lm' only works without bounds, as SciPy's; use 'trf' or "
            f"'dogbox' (got bounds={bounds!r})."
        )
    if bounded:
        cost = _Cost(_Weighted(f), "linear", 1.0)
        popt = _minimised(cost, x_packing, packing, p, theta, lower, upper, True, (), on_failure)
    else:
        popt = LeastSquares(residual, method=method, on_failure=on_failure)(p, theta)
    r = residual.called(popt, theta)
    jacobian = jax.jacfwd(residual.called)(popt, theta)
    gram = jnp.einsum("...mi,...mj->...ij", jacobian, jacobian)
    pcov = solve(gram, jnp.broadcast_to(jnp.eye(n, dtype=gram.dtype), gram.shape))
    if not absolute_sigma:
        scale = jnp.sum(r * r, axis=-1) / (m - n) if m > n else jnp.inf
        pcov = pcov * jnp.asarray(scale)[..., None, None]
    return popt, pcov


@dataclasses.dataclass(frozen=True)
class _CalledWithKeywords:
    """``fun(x, *args, **kwargs)`` from ``(x, args, kwargs)``."""

    fun: Callable

    def __call__(self, x: Any, args: tuple, kwargs: dict) -> Any:
        return self.fun(x, *args, **kwargs)


@dataclasses.dataclass(frozen=True)
class _Weighted:
    """``(f(xdata, *p) - ydata) / sigma``: curve_fit's residual of ``p``."""

    f: Callable

    def __call__(self, p: Any, xdata: Any, ydata: Any, sigma: Any) -> Any:
        return (jnp.asarray(self.f(xdata, *p)) - ydata) / sigma


def _feasible_start(bounds: Any, count: int) -> np.ndarray:
    """SciPy's ``p0`` for ``curve_fit`` without one: 1 where unbounded, the middle of a finite
    box, 1 inside a one-sided bound (``_initialize_feasible``)."""
    if isinstance(bounds, scipy.optimize.Bounds):
        bounds = (bounds.lb, bounds.ub)
    try:
        lb, ub = (np.broadcast_to(np.asarray(b, np.float64), (count,)) for b in bounds)
    except jax.errors.TracerArrayConversionError:
        raise ValueError(
            "curve_fit: with traced bounds pass p0 (SciPy's default start is read from them)."
        ) from None
    except (TypeError, ValueError):
        return np.ones(count)  # (_box names the malformed bounds)
    start = np.ones(count)
    both, low, high = np.isfinite(lb) & np.isfinite(ub), np.isfinite(lb), np.isfinite(ub)
    start[low & ~high] = lb[low & ~high] + 1
    start[high & ~low] = ub[high & ~low] - 1
    start[both] = 0.5 * (lb[both] + ub[both])
    return start


def _packed(x0: Any, args: Any) -> tuple[Packing, jax.Array, jax.Array, Packing]:
    dtype = float_dtype()
    x_packing, packing = Packing.of(x0), Packing.of(args)
    return x_packing, x_packing.flat(x0, dtype), packing.flat(args, dtype), packing


def _refuse_given(owner: str, **given: Any) -> None:
    for name, value in given.items():
        if value is not None:
            raise TypeError(
                f"{owner}: argument '{name}' must be left as SciPy's default: the function is "
                f"written in JAX, whose derivatives the bridge takes from JAX; got {value!r}."
            )
