"""``minimize(fun, x0, args, ...)``: SciPy's call, with ``fun`` a JAX function, solved by
``Minimize``, ``MinimizeBounded`` or ``MinimizeConstrained`` and differentiable in ``args``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from .._shared._failure import OnFailure
from .._shared._jax_function import JaxObjective, JaxResidual, Packing, float_dtype, scalar_output
from .._shared._result import OptimizeResult
from ._scipy_forms import method_named, options_pairs
from .minimize import Minimize
from .minimize_bounded import MinimizeBounded
from .minimize_constrained import MinimizeConstrained

_OWNER = "minimize"


def minimize(
    fun: Callable,
    x0: Any,
    args: Any = (),
    method: str | None = None,
    jac: Any = None,
    hess: Any = None,
    hessp: Any = None,
    bounds: Any = None,
    constraints: Any = (),
    tol: float | None = None,
    callback: Any = None,
    options: dict | None = None,
    *,
    on_failure: OnFailure = "raise",
) -> OptimizeResult:
    """``scipy.optimize.minimize`` with ``fun(x, *args)`` written in JAX: a strict local
    minimiser from ``x0``, differentiable in ``args`` (to second order) under ``jit``,
    ``vmap`` and ``grad``.

    ``x0`` and ``args`` may be arrays, numbers or pytrees of them. SciPy iterates on the host
    in float64 with ``fun`` compiled for the CPU backend; the gradient, and the Hessians the
    Newton-type methods and the derivative rules need, come from JAX, so ``jac``, ``hess``
    and ``hessp`` stay ``None``. Methods: without bounds or constraints ``"BFGS"`` (the
    default, as SciPy's), ``"L-BFGS-B"``, ``"CG"``, ``"Newton-CG"``, ``"trust-ncg"``,
    ``"trust-krylov"``, ``"trust-exact"``; with ``bounds`` (``Bounds`` or ``(min, max)``
    pairs, ``None`` for no bound) ``"L-BFGS-B"`` (the default), ``"TNC"``, ``"SLSQP"``,
    ``"trust-constr"``; with ``constraints`` (SciPy's dicts ``{"type": "eq" or "ineq",
    "fun": g, "args": ...}`` with ``g`` in JAX, ``NonlinearConstraint`` or
    ``LinearConstraint``, and any ``bounds`` among them) ``"SLSQP"`` (the default),
    ``"trust-constr"``, ``"COBYLA"`` or ``"COBYQA"``. The gradient-free methods (Nelder-Mead,
    Powell, COBYLA, COBYQA, also without constraints) get values alone, and their answer is
    refined with JAX's derivatives as every method's is: it is as differentiable in ``args``
    (where SciPy's answer misses the optimality conditions, as Powell's can stopping on a
    bound, the call is refused). ``options`` as SciPy's dict; ``tol`` as SciPy's.

    The answer is checked and refined as ``Minimize`` says (a strict minimum, Newton steps
    to 1e-10); where it fails, an ``OptimizeError`` with SciPy's message, or with
    ``on_failure="nan"`` NaN and ``success`` False. The derivatives are the implicit
    function theorem's at the minimiser (zero in ``x0``).

    Returns:
        ``OptimizeResult`` (a pytree): ``x`` (shaped as ``x0``), ``fun``, ``jac`` (the
        gradient at ``x``, flat) and ``success``.
    """
    refused = {"jac": jac, "hess": hess, "hessp": hessp, "callback": callback}
    for name, value in refused.items():
        if value is not None:
            raise TypeError(
                f"{_OWNER}: argument '{name}' must be None: fun is a JAX function, whose "
                f"derivatives the bridge takes from JAX"
                + (
                    " (SciPy's callback runs on the host, out of your program's reach)"
                    if name == "callback"
                    else ""
                )
                + f"; got {value!r}."
            )
    args = args if isinstance(args, tuple) else (args,)
    dtype = float_dtype()
    x_packing = Packing.of(x0)
    x_flat = x_packing.flat(x0, dtype)
    n = x_flat.shape[-1]
    lower_upper = None if bounds is None else _bounds(bounds, n, dtype)
    constraint_list = _constraint_list(constraints)
    if constraint_list and lower_upper is not None:  # SciPy's bounds, as inequalities
        constraint_list += _bound_constraints(*lower_upper)
    everything = (args, tuple(c.args for c in constraint_list))
    packing = Packing.of(everything)
    theta = packing.flat(everything, dtype)
    objective = JaxObjective(_Objective(fun), x_packing, packing, role="fun")
    scalar_output(_OWNER, "fun", objective, x_flat, theta)
    common = {"tol": tol, "options": options_pairs(_OWNER, options), "on_failure": on_failure}
    if constraint_list:
        eq, ineq = (
            _residual(constraint_list, kind, x_packing, packing, x_flat, theta)
            for kind in ("eq", "ineq")
        )
        solver_method = _method(method, "SLSQP", MinimizeConstrained._methods, " with constraints")
        x = MinimizeConstrained(objective, eq, ineq, method=solver_method, **common)(x_flat, theta)
    elif lower_upper is not None:
        solver_method = _method(method, "L-BFGS-B", MinimizeBounded._methods, " with bounds")
        x = MinimizeBounded(objective, method=solver_method, **common)(x_flat, theta, *lower_upper)
    else:
        solver_method = _method(method, "BFGS", Minimize._methods, " without bounds or constraints")
        x = Minimize(objective, method=solver_method, **common)(x_flat, theta)
    value, gradient = jax.value_and_grad(objective.called)(x, theta)
    return OptimizeResult(
        x=x_packing.unflat(x),
        fun=value,
        jac=gradient,
        success=jnp.all(jnp.isfinite(x), axis=-1),
    )


@dataclasses.dataclass(frozen=True)
class _Objective:
    """``fun(x, *args)`` from ``(x, args, constraints' args)``: hashable by ``fun`` (the
    host's compiled programs are kept per function)."""

    fun: Callable

    def __call__(self, x: Any, args: tuple, constraint_args: tuple) -> Any:
        return self.fun(x, *args)


@dataclasses.dataclass(frozen=True)
class _Constraint:
    """One of SciPy's constraints as ``g(x, *args)``, ``lb <= g <= ub`` (an equality where
    they are equal), its ``args`` differentiable."""

    fun: Callable
    args: tuple
    lower: tuple  # float entries (hashable), broadcast to g's size
    upper: tuple


def _constraint_list(constraints: Any) -> list[_Constraint]:
    if isinstance(
        constraints, (dict, scipy.optimize.NonlinearConstraint, scipy.optimize.LinearConstraint)
    ):
        constraints = [constraints]
    found = []
    for k, c in enumerate(constraints):
        where = f"constraints[{k}]"
        if isinstance(c, dict):
            kind, fun = c.get("type"), c.get("fun")
            if kind not in ("eq", "ineq") or not callable(fun):
                raise ValueError(
                    f"{_OWNER}: {where} must be SciPy's dict {{'type': 'eq' or 'ineq', 'fun': g, "
                    f"'args': (...)}} with g a JAX function of (x, *args); got {c!r}."
                )
            if c.get("jac") is not None:
                raise TypeError(
                    f"{_OWNER}: {where}['jac'] must be left out: g is a JAX function, whose "
                    "Jacobian the bridge takes from JAX."
                )
            cargs = c.get("args", ())
            cargs = cargs if isinstance(cargs, tuple) else (cargs,)
            upper = 0.0 if kind == "eq" else np.inf
            found.append(_Constraint(fun, cargs, (0.0,), (upper,)))
        elif isinstance(c, scipy.optimize.NonlinearConstraint):
            if callable(c.jac):
                raise TypeError(
                    f"{_OWNER}: {where}.jac must be left as SciPy's default: its fun is a JAX "
                    "function, whose Jacobian the bridge takes from JAX."
                )
            found.append(_Constraint(_Unpacked(c.fun), (), _entries(c.lb), _entries(c.ub)))
        elif isinstance(c, scipy.optimize.LinearConstraint):
            matrix = tuple(map(tuple, np.atleast_2d(np.asarray(c.A, np.float64))))
            found.append(_Constraint(_Linear(matrix), (), _entries(c.lb), _entries(c.ub)))
        else:
            raise TypeError(
                f"{_OWNER}: {where} must be SciPy's dict, a NonlinearConstraint or a "
                f"LinearConstraint, got {type(c).__name__}."
            )
    return found


@dataclasses.dataclass(frozen=True)
class _Unpacked:
    """A ``NonlinearConstraint``'s ``fun(x)``, which takes no ``args``."""

    fun: Callable

    def __call__(self, x: Any) -> Any:
        return self.fun(x)


@dataclasses.dataclass(frozen=True)
class _Linear:
    """A ``LinearConstraint``'s ``A @ x`` (``A`` held as nested tuples: hashable)."""

    matrix: tuple

    def __call__(self, x: Any) -> Any:
        flat = jnp.ravel(jnp.asarray(x))
        return jnp.asarray(self.matrix, flat.dtype) @ flat


def _entries(value: Any) -> tuple:
    return tuple(float(v) for v in np.ravel(np.asarray(value, np.float64)))


def _bound_constraints(lower: jax.Array, upper: jax.Array) -> list[_Constraint]:
    """``lower <= x <= upper`` as one linear constraint (finite entries only)."""
    lo, hi = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
    rows = np.flatnonzero(np.isfinite(lo) | np.isfinite(hi))
    if rows.size == 0:
        return []
    matrix = tuple(map(tuple, np.eye(lo.size)[rows]))
    return [_Constraint(_Linear(matrix), (), _entries(lo[rows]), _entries(hi[rows]))]


@dataclasses.dataclass(frozen=True)
class _Residual:
    """The constraints of one kind as one vector function of ``(x, everything)``, SciPy's
    convention: ``g - lb`` and ``ub - g`` (``>= 0``) for inequalities, ``g - lb`` (``= 0``)
    for equalities."""

    kind: str
    constraints: tuple  # (index into constraint_args, fun, lower, upper): static, no args

    def __call__(self, x: Any, args: tuple, constraint_args: tuple) -> Any:
        parts = []
        for k, fun, lb, ub in self.constraints:
            g = jnp.ravel(fun(x, *constraint_args[k]))
            lb, ub = (np.broadcast_to(np.asarray(v, np.float64), g.shape) for v in (lb, ub))
            lower, upper = jnp.asarray(lb, g.dtype), jnp.asarray(ub, g.dtype)
            equal = lb == ub
            if self.kind == "eq":
                parts.append((g - lower)[np.flatnonzero(equal)])
                continue
            low = np.flatnonzero(~equal & np.isfinite(lb))
            high = np.flatnonzero(~equal & np.isfinite(ub))
            parts += [(g - lower)[low], (upper - g)[high]]
        return jnp.concatenate(parts) if parts else jnp.zeros((0,), jnp.result_type(float))


def _residual(constraints, kind, x_packing, packing, x_flat, theta) -> JaxResidual | None:
    static = tuple((k, c.fun, c.lower, c.upper) for k, c in enumerate(constraints))
    residual = _Residual(kind, static)
    adapter = JaxResidual(residual, x_packing, packing, role="constraints")
    size = adapter.output_specs(x_flat, theta).shape[-1]
    return adapter if size else None


def _bounds(bounds: Any, n: int, dtype: Any) -> tuple[jax.Array, jax.Array]:
    """``(lower, upper)``, (n,) each, from SciPy's ``Bounds`` or ``(min, max)`` pairs."""
    if isinstance(bounds, scipy.optimize.Bounds):
        pairs = [np.broadcast_to(np.asarray(v, np.float64), (n,)) for v in (bounds.lb, bounds.ub)]
        return jnp.asarray(pairs[0], dtype), jnp.asarray(pairs[1], dtype)
    try:
        pairs = [(None, None) if b is None else tuple(b) for b in bounds]
    except TypeError:
        pairs = []
    if len(pairs) != n or any(len(p) != 2 for p in pairs):
        raise ValueError(
            f"{_OWNER}: argument 'bounds' must be a scipy.optimize.Bounds or a sequence of "
            f"{n} (min, max) pairs, one per entry of x0 (None for no bound); got {bounds!r}."
        )
    lower = [-np.inf if lo is None else lo for lo, _ in pairs]
    upper = [np.inf if hi is None else hi for _, hi in pairs]
    return jnp.asarray(lower, dtype), jnp.asarray(upper, dtype)


def _method(method: str | None, default: str, offered: tuple[str, ...], context: str) -> str:
    """SciPy's default where ``method`` is None, else ``method`` where ``offered``."""
    return default if method is None else method_named(_OWNER, method, offered, context)
