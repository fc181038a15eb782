"""``solve_ivp(fun, t_span, y0, ...)``: SciPy's call with ``fun`` written in JAX, solved by
``OdeSolve`` and differentiable in ``y0``, ``args`` and ``t_eval``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._shared._failure import OnFailure
from .._shared._jax_function import JaxRhs, Packing, float_dtype
from .._shared._result import OptimizeResult
from .ode_solve import OdeSolve

_OWNER = "solve_ivp"


@jax.tree_util.register_pytree_node_class
class OdeResult(OptimizeResult):
    """``solve_ivp``'s result, as SciPy's (an ``OptimizeResult``): ``t``, ``y`` (``(n,
    len(t))``, SciPy's layout), ``success``."""


def solve_ivp(
    fun: Callable,
    t_span: Any,
    y0: Any,
    method: str = "RK45",
    t_eval: Any = None,
    dense_output: bool = False,
    events: Any = None,
    vectorized: bool = False,
    args: Any = None,
    rtol: float = 1e-3,
    atol: float = 1e-6,
    max_step: float = np.inf,
    *,
    sensitivity: str = "auto",
    on_failure: OnFailure = "raise",
) -> OdeResult:
    """``scipy.integrate.solve_ivp`` with ``fun(t, y, *args)`` written in JAX: ``y`` at the
        times ``t_eval``, differentiable in ``y0``, ``args`` and ``t_eval`` (to second order)
        under ``jit``, ``vmap`` and ``grad``.

        SciPy integrates on the host in float64 with ``fun`` compiled for the CPU backend; the
        Jacobian the implicit methods need and every derivative the rules need (the adjoint's,
        the sensitivities', the steps') come from JAX. ``method`` (SciPy's default ``"RK45"``;
        ``"RK23"``, ``"DOP853"``, ``"Radau"``, ``"BDF"``, ``"LSODA"``), ``rtol``, ``atol`` and
        ``max_step`` as SciPy's (its defaults too: loose, ``rtol=1e-3``); ``sensitivity`` as
        ``OdeSolve``'s. ``t_eval`` is required (under ``jit`` the result's size must be known:
        SciPy's own step times are not), increasing, within ``t_span`` (a traced ``t_eval`` must
    start after ``t0``); ``y0`` may be a pytree
        (``y`` then holds its leaves raveled, in order). Not offered: ``events``,
        ``dense_output``, integration backwards in time.

        Returns:
            ``OdeResult``: ``t`` (``t_eval``), ``y`` (``(n, len(t_eval))``), ``success``.
    """
    if t_eval is None:
        raise ValueError(
            f"{_OWNER}: t_eval is required: under jit the result's size must be known before "
            "the solve, and SciPy's own step times are not."
        )
    if events is not None or dense_output:
        raise ValueError(f"{_OWNER}: events and dense_output are not offered.")
    if vectorized:
        raise ValueError(
            f"{_OWNER}: vectorized=True is not needed: fun is a JAX function, whose "
            "Jacobian the bridge takes from JAX."
        )
    start, end = (float(t) for t in t_span)
    if not end > start:
        raise ValueError(
            f"{_OWNER}: t_span must run forward in time (t0 < t1), got {tuple(t_span)!r}."
        )
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    dtype = float_dtype()
    y_packing, packing = Packing.of(y0), Packing.of(args)
    y_flat, theta = y_packing.flat(y0, dtype), packing.flat(args, dtype)
    times = jnp.asarray(t_eval, dtype)
    if times.ndim != 1 or times.shape[0] == 0:
        raise ValueError(f"{_OWNER}: t_eval must be a non-empty 1-D array, got {times.shape}.")
    # OdeSolve's first time is the initial one: t0 goes first unless t_eval starts there
    # (a traced t_eval is taken to start after t0: OdeSolve refuses a repeated time)
    try:
        prepend = bool(np.asarray(t_eval, np.float64)[0] != start)
    except jax.errors.TracerArrayConversionError:
        prepend = True
    ts = jnp.concatenate([jnp.full((1,), start, dtype), times]) if prepend else times
    rhs = JaxRhs(fun, y_packing, packing)
    solver = OdeSolve(
        rhs,
        method=method,
        rtol=rtol,
        atol=atol,
        max_step=max_step,
        sensitivity=sensitivity,
        on_failure=on_failure,
    )
    ys = solver(y_flat, theta, ts)
    ys = ys[1:] if prepend else ys
    return OdeResult(
        t=times,
        y=jnp.swapaxes(ys, -1, -2),
        success=jnp.all(jnp.isfinite(ys), axis=(-2, -1)),
    )
