"""The "refused" check: arguments the adapter refuses are refused under every transformation.

A refusal written in ``forward`` alone is lost where ``forward`` does not run: under ``jit``,
XLA removes a host call whose value no one uses, so ``jax.jit(jax.grad(f))`` runs only the
rules, which compute on the refused input (NaN, or a plausible number). ``Adapter.check``
refuses in every host call; this check finds a refusal that some composition loses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbridge import host_errors

from ._subject import Subject
from ._transforms import floating


def check_refused(s: Subject) -> None:
    """Each composition that runs on ``s.args`` raises on ``s.refused`` the error (its type)
    that the eager call raises there."""
    assert s.refused is not None  # (the check applies only then)
    bad = s.refused
    shown = "\n".join(f"  {name} = {a!r}" for name, a in zip(s.names, bad))
    good = tuple(jnp.asarray(a, b.dtype) for a, b in zip(s.args, bad))
    try:
        jax.block_until_ready(s.adapter(*bad))
    except Exception as error:
        kind = type(error)
    else:
        raise s.failure("refused", "the eager call on the refused arguments raised nothing", shown)
    for name, run in _compositions(s, good).items():
        try:
            jax.block_until_ready(run(*good))
        except Exception:
            continue  # (it does not apply here: an argument held fixed, say)
        try:
            with host_errors():
                got = jax.block_until_ready(run(*bad))
        except kind:
            continue
        except Exception as error:
            raise s.failure(
                "refused",
                f"under {name} it raised {type(error).__name__}, not the {kind.__name__} of the "
                f"eager call",
                shown,
            ) from error
        leaf = jax.tree.leaves(got)[0] if jax.tree.leaves(got) else None
        raise s.failure(
            "refused",
            f"under {name} it raised nothing (the eager call raises {kind.__name__}) and gave "
            f"{leaf}: a refusal made in forward alone is lost where XLA drops that call; "
            "refuse in `check`, which every host call runs",
            shown,
        )


def _compositions(s: Subject, args: Sequence[jax.Array]) -> dict[str, Callable[..., Any]]:
    """The transformed calls to try, by name, each taking the call's arguments."""
    adapter = s.adapter
    assert s.refused is not None
    differs = [not np.array_equal(b, g) for b, g in zip(s.refused, args)]

    def refused_elsewhere(i: int) -> bool:
        # the transpose in argument i reads its shape alone: a refusal of its value has
        # nothing to see there
        return any(d for j, d in enumerate(differs) if j != i)

    def total(*a: jax.Array) -> jax.Array:
        outs = jax.tree.leaves(adapter(*a))
        return sum((jnp.sum(o) for o in outs if floating(o.dtype)), jnp.zeros(()))

    found: dict[str, Callable[..., Any]] = {"jax.jit": jax.jit(adapter)}
    for i, (name, a) in enumerate(zip(s.names, args)):
        if not floating(a.dtype):
            continue

        def moved(ai: jax.Array, *a: jax.Array, i: int = i) -> jax.Array:
            return total(*a[:i], ai, *a[i + 1 :])

        # (each binds this argument's `moved`: a closure would see the loop's last one)
        def grad(*a: jax.Array, i: int = i, moved: Callable[..., Any] = moved) -> jax.Array:
            return jax.grad(moved)(a[i], *a)

        def jvp(*a: jax.Array, i: int = i, moved: Callable[..., Any] = moved) -> jax.Array:
            return jax.jvp(lambda ai: moved(ai, *a), (a[i],), (jnp.ones_like(a[i]),))[1]

        def vmap_grad(*a: jax.Array, grad: Callable[..., Any] = grad) -> jax.Array:
            return jax.vmap(grad)(*(x[None] for x in a))

        if s.reverse_rule:
            found[f"jax.jit(jax.grad) in '{name}'"] = jax.jit(grad)
            found[f"jax.vmap(jax.grad) in '{name}'"] = vmap_grad
        if s.forward_rule:
            found[f"jax.jit(jax.jvp) in '{name}'"] = jax.jit(jvp)
        if name in adapter.linear_in and refused_elsewhere(i):

            def transposed(*a: jax.Array, i: int = i) -> Any:
                def linear(ai: jax.Array) -> Any:
                    return adapter(*a[:i], ai, *a[i + 1 :])

                cts = jax.eval_shape(linear, a[i])
                transpose = jax.linear_transpose(linear, a[i])
                return transpose(jax.tree.map(lambda c: jnp.ones(c.shape, c.dtype), cts))

            found[f"jax.jit(jax.linear_transpose) in '{name}'"] = jax.jit(transposed)
    return found
