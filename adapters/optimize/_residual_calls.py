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

from .._shared._failure import OnFailure
from .._shared._jax_function import (
    JaxResidual,
    JaxSquareResidual,
    Packing,
    float_dtype,
    square_output,
)
from .._shared._result import OptimizeResult
from ..linalg import solve  # (float64 on every backend: a TPU has no float64 LU)
from ._scipy_forms import method_named, options_pairs
from .least_squares import LeastSquares
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
    max_nfev: int | None = None,
    args: Any = (),
    kwargs: dict | None = None,
    *,
    on_failure: OnFailure = "raise",
) -> OptimizeResult:
    """``scipy.optimize.least_squares`` with ``fun(x, *args, **kwargs)`` written in JAX: a
    strict local minimiser of ``½ |fun|²`` from ``x0``, differentiable in ``args`` and
    ``kwargs`` (to second order) under ``jit``, ``vmap`` and ``grad``.

    The Jacobian comes from JAX (``jac`` stays SciPy's default). Methods ``"trf"`` (the
    default), ``"dogbox"``, ``"lm"``. SciPy's tolerances are passed on; the answer is then
    refined to 1e-10 and checked as ``LeastSquares`` says. Not offered: ``bounds`` other than
    none and a ``loss`` other than ``"linear"`` (the derivative rules assume the plain sum of
    squares at an unconstrained minimum).

    Returns:
        ``OptimizeResult``: ``x`` (shaped as ``x0``), ``fun`` (the residuals, flat),
        ``cost`` (``½ |fun|²``), ``jac`` (their Jacobian in ``x``), ``grad`` (``jacᵀ fun``),
        ``success``.
    """
    owner = "least_squares"
    _refuse_given(owner, jac=None if jac == "2-point" else jac)
    lower, upper = (np.asarray(b, np.float64) for b in bounds)
    if np.isfinite(lower).any() or np.isfinite(upper).any():
        raise ValueError(
            f"{owner}: bounds are not offered (the derivative rules assume an unconstrained "
            f"minimum); got {bounds!r}. Minimise ½|fun|² with jaxbridge's minimize(..., "
            "bounds=...) instead."
        )
    if loss != "linear":
        raise ValueError(
            f"{owner}: loss {loss!r} is not offered, only 'linear' (the derivative rules "
            "assume the plain sum of squares)."
        )
    args = args if isinstance(args, tuple) else (args,)
    everything = (args, dict(kwargs or {}))
    x_packing, x, theta, packing = _packed(x0, everything)
    residual = JaxResidual(_CalledWithKeywords(fun), x_packing, packing, role="fun")
    # the class's tol sets all three (1e-12 by default, refined to 1e-10 after): SciPy's
    # defaults stand for that; a tolerance set away from them, for the smallest given
    tolerances = [t for t in (ftol, xtol, gtol) if t is not None and t != 1e-8]
    options = () if max_nfev is None else (("max_nfev", max_nfev),)
    solver = LeastSquares(
        residual,
        method=method_named(owner, method, LeastSquares._methods),
        tol=min(tolerances) if tolerances else None,
        options=options,
        on_failure=on_failure,
    )
    x = solver(x, theta)
    r, jacobian = residual.called(x, theta), jax.jacfwd(residual.called)(x, theta)
    return OptimizeResult(
        x=x_packing.unflat(x),
        fun=r,
        cost=0.5 * jnp.sum(r * r, axis=-1),
        jac=jacobian,
        grad=jnp.einsum("...mn,...m->...n", jacobian, r),
        success=jnp.all(jnp.isfinite(x), axis=-1),
    )


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
    per point (a covariance matrix is not offered), ``bounds`` not offered (see
    ``least_squares``).
    """
    owner = "curve_fit"
    _refuse_given(owner, jac=jac)
    if check_finite is False:
        raise ValueError(f"{owner}: check_finite=False is not offered: NaN data are refused.")
    lower, upper = (np.asarray(b, np.float64) for b in bounds)
    if np.isfinite(lower).any() or np.isfinite(upper).any():
        raise ValueError(
            f"{owner}: bounds are not offered (the derivative rules assume an unconstrained "
            f"minimum); got {bounds!r}."
        )
    dtype = float_dtype()
    if p0 is None:
        count = len(inspect.signature(f).parameters) - 1
        if count < 1:
            raise ValueError(
                f"{owner}: f takes no parameters after xdata that p0 could default to (ones "
                "per parameter, as SciPy counts them): pass p0."
            )
        p0 = jnp.ones(count, dtype)
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
    method = "lm" if method is None else method
    solver = LeastSquares(
        residual, method=method_named(owner, method, LeastSquares._methods), on_failure=on_failure
    )
    popt = solver(p, theta)
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
