"""SciPy's argument forms that the adapters take as arrays: ``linprog``'s ``bounds`` (a
pair, a list of pairs, ``None`` entries, scalars) as ``lower`` and ``upper`` arrays;
``milp``'s ``bounds`` (a ``Bounds`` or a pair) and ``constraints`` (``LinearConstraint``
objects or ``(A, lb, ub)`` tuples, one or a list) as arrays; the refusal of such a form where an
adapter takes arrays, so that no argument of SciPy's form is read as something else (a
list of pairs as a batch of lower bounds, say); and the refusal of SciPy's arguments that a
call form does not take, naming where they go."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.sparse

from .._shared._refusals import refuse_unsupported as refuse_unsupported


def floating(*values: Any) -> tuple[jax.Array, ...]:
    """``values`` (arrays, lists, numbers) as JAX arrays of their common floating dtype, JAX's
    default float where none is floating: SciPy solves an optimisation problem in floating
    point whatever its arrays' type (integer bounds or costs cast to an integer type
    rounded 2.5 to 2, and an infinite bound overflowed)."""
    arrays = [jnp.asarray(v) for v in values]
    dtype = jnp.result_type(*arrays)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    return tuple(a.astype(dtype) for a in arrays)


def bound_arrays(owner: str, bounds: Any, n: int, dtype: Any) -> tuple[jax.Array, jax.Array]:
    """``(lower, upper)``, (n,) each, from SciPy's ``bounds``: ``None`` (SciPy's default,
    ``(0, None)``), one ``(min, max)`` pair for every variable, a sequence of ``n`` pairs (or
    of one), where ``None`` is no bound; or an (n, 2) or (2,) array (differentiable)."""
    if bounds is None:
        bounds = (0, None)
    if isinstance(bounds, (jax.Array, np.ndarray)):
        array = jnp.asarray(bounds, dtype)
        if array.shape in ((2,), (1, 2), (n, 2)):
            pairs = jnp.broadcast_to(array, (n, 2))
            return pairs[:, 0], pairs[:, 1]
        raise ValueError(_shape_message(owner, n, array.shape))
    pairs = np.array(bounds, dtype=object)
    if pairs.shape in ((2,), (1, 2)):
        pairs = np.broadcast_to(pairs.reshape(1, 2), (n, 2))
    if pairs.shape != (n, 2):
        raise ValueError(_shape_message(owner, n, pairs.shape))
    lower = [-np.inf if v is None else v for v in pairs[:, 0]]
    upper = [np.inf if v is None else v for v in pairs[:, 1]]
    return _stacked(lower, dtype), _stacked(upper, dtype)


def _stacked(values: list, dtype: Any) -> jax.Array:
    """The entries (numbers, or JAX scalars that may be traced) as one (n,) array."""
    return jnp.stack([jnp.asarray(v, dtype) for v in values]) if values else jnp.zeros(0, dtype)


def refuse_scipy_bounds(owner: str, name: str, value: Any, instead: str) -> None:
    """Refuse SciPy's bounds (a list or tuple of pairs or arrays, or holding ``None``) given
    where ``owner`` takes an array: read as one array it would be a batch of ``name``s."""
    if not isinstance(value, (list, tuple)):
        return
    if any(v is None or isinstance(v, (list, tuple)) or np.ndim(v) > 0 for v in value):
        raise TypeError(
            f"{owner}: argument '{name}' looks like SciPy's bounds (pairs, arrays or None "
            f"entries); {owner} takes '{name}' as one array, a bound per variable. For "
            f"SciPy's form use {instead}."
        )


def box_arrays(owner: str, bounds: Any, n: int, dtype: Any) -> tuple[jax.Array, jax.Array]:
    """``(lower, upper)``, (n,) each, from ``milp``'s ``bounds``: ``None`` (SciPy's default,
    ``0 <= x``), a ``scipy.optimize.Bounds`` or SciPy's pair ``(lb, ub)``, each a number or
    (n,) values."""
    if bounds is None:
        bounds = (0, np.inf)
    if isinstance(bounds, scipy.optimize.Bounds):
        bounds = (bounds.lb, bounds.ub)
    if not (isinstance(bounds, (tuple, list)) and len(bounds) == 2):
        raise ValueError(
            f"{owner}: argument 'bounds' must be a scipy.optimize.Bounds or SciPy's pair (lb, "
            f"ub), each a number or {n} values; got {bounds!r}."
        )
    try:
        lower, upper = (jnp.broadcast_to(jnp.asarray(v, dtype), (n,)) for v in bounds)
    except (TypeError, ValueError):
        raise ValueError(
            f"{owner}: argument 'bounds' must hold numbers that broadcast to the {n} "
            f"variables; got {bounds!r}."
        ) from None
    return lower, upper


def constraint_arrays(
    owner: str, constraints: Any, n: int, dtype: Any
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(A, b_l, b_u)``, (m, n), (m,) and (m,), from SciPy's ``constraints``: ``None``, a
    ``LinearConstraint``, an ``(A, lb, ub)`` tuple, or a list of either, stacked in order
    (a sparse ``A`` made dense)."""
    if constraints is None or (isinstance(constraints, (list, tuple)) and not constraints):
        return jnp.zeros((0, n), dtype), jnp.zeros(0, dtype), jnp.zeros(0, dtype)
    if isinstance(constraints, scipy.optimize.LinearConstraint) or _one_triple(constraints):
        constraints = [constraints]
    if not isinstance(constraints, (list, tuple)):
        raise ValueError(_constraints_message(owner, constraints))
    parts = []
    for constraint in constraints:
        if isinstance(constraint, scipy.optimize.LinearConstraint):
            constraint = (constraint.A, constraint.lb, constraint.ub)
        if not (isinstance(constraint, (list, tuple)) and 1 <= len(constraint) <= 3):
            raise ValueError(_constraints_message(owner, constraint))
        a: Any = constraint[0]
        lb = constraint[1] if len(constraint) > 1 else -np.inf  # (LinearConstraint's defaults)
        ub = constraint[2] if len(constraint) > 2 else np.inf
        if scipy.sparse.issparse(a):
            a = a.toarray()
        a = jnp.asarray(a, dtype)
        a = a[None] if a.ndim == 1 else a
        if a.ndim != 2 or a.shape[1] != n:
            raise ValueError(
                f"{owner}: argument 'constraints' has a matrix A of shape {a.shape}; expected "
                f"(m, {n}), one column per variable."
            )
        m = a.shape[0]
        parts.append((a, *(jnp.broadcast_to(jnp.asarray(b, dtype), (m,)) for b in (lb, ub))))
    return tuple(jnp.concatenate(arrays) for arrays in zip(*parts))  # type: ignore[return-value]


def _one_triple(constraints: Any) -> bool:
    """Whether ``constraints`` is one ``(A, lb, ub)`` tuple rather than a list of
    constraints (SciPy's test: three entries, the first an array, not a constraint)."""
    if not isinstance(constraints, (list, tuple)) or len(constraints) != 3:
        return False
    first = constraints[0]
    if isinstance(first, (scipy.optimize.LinearConstraint, tuple)):
        return False
    if isinstance(first, (jax.Array, np.ndarray)) or scipy.sparse.issparse(first):
        return True
    try:
        np.asarray(first, np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _constraints_message(owner: str, value: Any) -> str:
    return (
        f"{owner}: argument 'constraints' must be a scipy.optimize.LinearConstraint, a tuple "
        f"(A, lb, ub), or a list of them; got {value!r}."
    )


def _shape_message(owner: str, n: int, shape: tuple) -> str:
    return (
        f"{owner}: argument 'bounds' must be a (min, max) pair or {n} of them (one per "
        f"variable; None for no bound); got shape {shape}."
    )


def method_named(owner: str, method: Any, offered: tuple[str, ...], context: str = "") -> str:
    """SciPy's ``method``, matched without regard to case (as SciPy matches it), among the
    ``offered`` names; ``context`` says when these are the ones (``" with bounds"``)."""
    for name in offered:
        if name.lower() == str(method).lower():
            return name
    raise ValueError(
        f"{owner}: method {method!r} is not offered{context}; the methods are {', '.join(offered)}."
    )


def options_pairs(owner: str, options: Any) -> tuple:
    """SciPy's ``options`` dict as the solver classes take it: sorted (name, value) pairs."""
    if options is None:
        return ()
    if not isinstance(options, dict):
        raise TypeError(f"{owner}: argument 'options' must be a dict, as SciPy's; got {options!r}.")
    return tuple(sorted(options.items()))


def highs_options(
    owner: str, options: dict[str, Any] | None, taken: tuple[str, ...], fixed: dict[str, Any]
) -> dict[str, Any]:
    """SciPy's HiGHS ``options`` for ``owner`` (``linprog``, ``milp``): ``disp`` False (HiGHS's
    log is not shown from a host callback), the ``fixed`` ones at their one value, the
    ``taken`` ones returned; any other is refused by name (SciPy would pass it on to HiGHS,
    or warn)."""
    given = dict(options or {})
    refuse_unsupported(
        owner,
        {
            f"options[{name!r}]": (given.pop(name, value), value, why)
            for name, (value, why) in {
                "disp": (False, "HiGHS's log is not shown (the solve runs in a host callback)"),
                **fixed,
            }.items()
        },
    )
    unknown = sorted(set(given) - set(taken))
    if unknown:
        held = ", ".join(f"{name!r} ({value!r})" for name, (value, _) in fixed.items())
        raise ValueError(
            f"{owner}: options {unknown} are not taken; the HiGHS options taken are 'disp' "
            f"(False), {held + ', ' if held else ''}{', '.join(map(repr, taken))}."
        )
    return given
