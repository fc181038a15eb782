"""``OptimizeResult``: SciPy's result object as a JAX pytree, so that code reading ``res.x``
or ``res.fun`` ports unchanged and the arrays stay differentiable under ``jit``."""

from __future__ import annotations

from typing import Any

import jax


@jax.tree_util.register_pytree_node_class
class OptimizeResult(dict):
    """A dict of a solve's results with attribute access, as ``scipy.optimize``'s: ``x``,
    ``fun``, ``success`` and the others each call has (``jac``; ``linprog``'s ``slack`` and
    ``ineqlin.marginals``, nested results themselves; ``lsq_linear``'s ``cost``). Every
    entry is an array (``success`` a bool one), so the whole result passes through ``jit``
    and ``vmap``.
    SciPy's ``message``, ``nit`` and ``nfev`` are not kept: a failed solve raises
    ``OptimizeError`` naming SciPy's status and message (or, with ``on_failure="nan"``, gives
    NaN and ``success`` False)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"OptimizeResult has no {name!r}; it holds {sorted(self)}"
            ) from None

    def __repr__(self) -> str:
        return "OptimizeResult(" + ", ".join(f"{k}={self[k]!r}" for k in sorted(self)) + ")"

    def tree_flatten(self) -> tuple[list[Any], tuple[str, ...]]:
        keys = tuple(sorted(self))
        return [self[k] for k in keys], keys

    @classmethod
    def tree_unflatten(cls, keys: tuple[str, ...], children: list[Any]) -> OptimizeResult:
        return cls(zip(keys, children))
