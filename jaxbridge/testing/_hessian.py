"""The "hessian" check, for adapters whose derivative rules are JAX code (``pushforward`` and
``pullback``), so that their own derivatives come from the bridged calls they are made of.

For the scalar ``f(args) = sum(g * adapter(*args))`` (a random cotangent ``g``) and a random
direction ``v`` in all floating arguments together, it compares Hessian-vector products
``H v``: forward over reverse (``jax.jvp`` of ``jax.grad``, the columns ``jax.hessian`` is made
of) against central differences of the bridge's own gradient along ``v`` (which the "grad"
check holds to ``forward``), then reverse over reverse (``jax.vjp`` of ``jax.grad``; ``H`` is
symmetric) against forward over reverse, then forward over forward (``jax.jvp`` of
``jax.jvp``, ``<v, H v>``) against ``<v, H v>`` from forward over reverse. The first catches
a rule whose own derivative is wrong (a residual used as if it were a constant, say); the
others, a mode whose second derivatives disagree with the other's. A few products, not
whole Hessians: one program of its own per shape, and four gradients by the program the
reverse-mode checks compiled already.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._adapter import Adapter
from ._differences import STEPS, central_difference, directional_step, moved
from ._subject import Subject
from ._transforms import in_some, plain


@functools.partial(jax.jit, static_argnums=(0, 1))
def _hessian_program(
    adapter: Adapter, wrt: tuple[int, ...], args: tuple, cts: tuple, v: tuple
) -> tuple[Any, Any, Any]:
    """``H v`` forward over reverse and reverse over reverse, and ``<v, H v>`` forward over
    forward."""

    def f(*xs: jax.Array) -> jax.Array:
        outputs = in_some(adapter, args, wrt)(*xs)
        return sum((jnp.sum(c * o) for c, o in zip(cts, outputs)), jnp.zeros((), cts[0].dtype))

    grad = jax.grad(f, argnums=tuple(range(len(wrt))))
    xs = tuple(args[i] for i in wrt)
    forward_over_reverse = jax.jvp(grad, xs, v)[1]
    reverse_over_reverse = jax.vjp(grad, *xs)[1](v)
    forward_over_forward = jax.jvp(lambda *x: jax.jvp(f, x, v)[1], xs, v)[1]
    return forward_over_reverse, reverse_over_reverse, forward_over_forward


def check_hessian(s: Subject) -> None:
    v = tuple(d[0] for d in s.directions("hessian", 1))
    first = s.first
    cts = tuple(jnp.asarray(c) for c in s.probe_cts)
    direction = {i: vj.astype(np.float64) for i, vj in zip(s.wrt, v)}
    eps = float(np.finfo(s.dtype).eps)  # the gradient is computed in the inputs' precision
    step = directional_step(s.kinds, [a.astype(np.float64) for a in first], direction, eps)
    results = _hessian_program(
        s.adapter,
        tuple(s.wrt),
        tuple(jnp.asarray(a) for a in first),
        cts,
        tuple(jnp.asarray(x) for x in v),
    )
    forward_over_reverse, reverse_over_reverse, forward_over_forward = jax.tree.map(
        np.asarray, results
    )
    # the gradient at x + m h v, by the program the "grad" and "vmap" checks compiled
    values = {}
    for m in STEPS:
        point = [
            a if i not in direction else a.astype(first[i].dtype)
            for i, a in enumerate(moved(first, direction, m * step))
        ]
        _, gradient = plain(s.adapter, tuple(jnp.asarray(a) for a in point), cts)
        values[m] = [np.asarray(g) for g in gradient]
    differences, uncertainty = central_difference(values, step, eps)
    # H v has the units of the gradient (v is scaled like the arguments), and rounds like the
    # terms it is computed from, which are the gradient's size where H v cancels to ~0
    gradient_size = [
        max(float(np.max(np.abs(values[m][j]), initial=0.0)) for m in STEPS)
        for j in range(len(s.wrt))
    ]
    for j, i in enumerate(s.wrt):
        s.expect_close(
            "hessian",
            f"the Hessian-vector product's entries for argument {s.names[i]!r}",
            forward_over_reverse[j],
            differences[j],
            "grad",
            None,
            ("forward over reverse (as jax.hessian)", "by central differences of the gradient"),
            uncertainty[j],
        )
    for j, i in enumerate(s.wrt):
        s.expect_close(
            "hessian",
            f"the Hessian-vector product's entries for argument {s.names[i]!r}",
            reverse_over_reverse[j],
            forward_over_reverse[j],
            "same",
            None,
            ("reverse over reverse (jax.vjp of jax.grad)", "forward over reverse (jax.hessian)"),
            least_scale=(gradient_size[j], "the gradient's largest magnitude"),
        )
    expected = sum(float(np.sum(x.astype(np.float64) * h)) for x, h in zip(v, forward_over_reverse))
    got = float(forward_over_forward)
    tol = s.tolerance("same")
    scale = sum(
        float(np.sum(np.abs(x))) * max(float(np.max(np.abs(h), initial=0.0)), size)
        for x, h, size in zip(v, forward_over_reverse, gradient_size)
    )
    allowed = tol.atol + tol.rtol * scale
    if not abs(got - expected) <= allowed:
        raise s.failure(
            "hessian",
            f"<v, H v> along {', '.join(repr(s.names[i]) for i in s.wrt)} together is "
            f"{got:.9g} forward over forward (jax.jvp of jax.jvp, through the forward-mode "
            f"rule's own derivative) but {expected:.9g} from forward over reverse: they differ "
            f"by {abs(got - expected):.3g}; allowed: {allowed:.3g} = atol {tol.atol:.3g} + rtol "
            f"{tol.rtol:g} × {scale:.3g} (the size of the terms)",
        )
