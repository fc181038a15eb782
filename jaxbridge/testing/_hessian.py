"""The "hessian" check: second derivatives through the bridge, in every composition of modes
the adapter's rules define, against central differences of its checked first derivative.

Second derivatives differentiate a derivative rule, so they exist where that rule is JAX code
(``pullback``, ``pushforward``) or the adapter is linear in all its floating arguments
(``linear_in``): host rules are first order. Which compositions exist:

- forward over reverse (``jax.jvp`` of ``jax.grad``, the columns of ``jax.hessian``): a
  differentiable pullback and a forward-mode rule (a host ``jvp`` is enough: it only gives
  the outputs' tangents);
- reverse over reverse (``jax.vjp`` of ``jax.grad``, ``grad(grad)``): a differentiable
  pullback;
- reverse over forward (``jax.grad`` of ``jax.jvp``, ``jacrev(jacfwd)``): a differentiable
  pushforward and a reverse-mode rule (a host ``backward`` is enough);
- forward over forward (``jax.jvp`` of ``jax.jvp``, ``jacfwd(jacfwd)``): a differentiable
  pushforward.

For the scalar ``f(args) = sum(g * adapter(*args))`` (a random cotangent ``g``) and a random
direction ``v`` in all floating arguments together, each existing composition's ``H v`` (or
``<v, H v>``, for forward over forward) must equal central differences along ``v`` of the
bridge's gradient (which the "grad" check holds to ``forward``), or, for an adapter without
a reverse-mode rule, of ``<∇f, v>`` by ``jax.jvp`` (which the "jvp" check holds to
``forward``); the compositions must then agree with each other to rounding. This catches a
rule whose own derivative is wrong: a rule that reads a residual as if its derivative were
zero (the bridge hands residuals to the rules as constants), or a helper adapter, called
from a rule, whose own rules are wrong.

The differences are taken in float64 from gradients computed in the inputs' precision, with
their own error (rounding, truncation) estimated and allowed for. A few products, not whole
Hessians: one program of its own per shape, and four gradients by the program the
reverse-mode checks compiled already.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbridge import Adapter

from ._checks import (
    FORWARD_OVER_FORWARD,
    FORWARD_OVER_REVERSE,
    REVERSE_OVER_FORWARD,
    REVERSE_OVER_REVERSE,
)
from ._differences import STEPS, central_difference, directional_step, moved
from ._subject import Subject
from ._transforms import in_some, plain

_PRODUCTS = (FORWARD_OVER_REVERSE, REVERSE_OVER_REVERSE, REVERSE_OVER_FORWARD)
"""The compositions that give ``H v``; forward over forward gives ``<v, H v>``."""


def _scalar(adapter: Adapter, wrt: tuple[int, ...], args: tuple, cts: tuple) -> Any:
    def f(*xs: jax.Array) -> jax.Array:
        outputs = in_some(adapter, args, wrt)(*xs)
        return sum((jnp.sum(c * o) for c, o in zip(cts, outputs)), jnp.zeros((), cts[0].dtype))

    return f


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _second_derivatives(
    adapter: Adapter, wrt: tuple[int, ...], compositions: tuple[str, ...], args: tuple, cts, v
) -> dict[str, Any]:
    """Each of ``compositions``: ``H v`` (one array per argument in ``wrt``), or ``<v, H v>``."""
    f = _scalar(adapter, wrt, args, cts)
    xs = tuple(args[i] for i in wrt)
    grad = jax.grad(f, argnums=tuple(range(len(wrt))))

    def along_v(*x: jax.Array) -> jax.Array:
        return jax.jvp(f, x, v)[1]

    results: dict[str, Any] = {}
    if FORWARD_OVER_REVERSE in compositions:
        results[FORWARD_OVER_REVERSE] = jax.jvp(grad, xs, v)[1]
    if REVERSE_OVER_REVERSE in compositions:
        results[REVERSE_OVER_REVERSE] = jax.vjp(grad, *xs)[1](v)
    if REVERSE_OVER_FORWARD in compositions:
        results[REVERSE_OVER_FORWARD] = jax.grad(along_v, argnums=tuple(range(len(wrt))))(*xs)
    if FORWARD_OVER_FORWARD in compositions:
        results[FORWARD_OVER_FORWARD] = jax.jvp(along_v, xs, v)[1]
    return results


@functools.partial(jax.jit, static_argnums=(0, 1))
def _directional(adapter: Adapter, wrt: tuple[int, ...], args: tuple, cts, v) -> jax.Array:
    """``<∇f, v>`` by ``jax.jvp``: the first derivative of an adapter with no reverse-mode rule."""
    f = _scalar(adapter, wrt, args, cts)
    return jax.jvp(f, tuple(args[i] for i in wrt), v)[1]


def check_hessian(s: Subject) -> None:
    compositions = s.second_orders
    v = tuple(d[0] for d in s.directions("hessian", 1))
    first = s.first
    cts = tuple(jnp.asarray(c) for c in s.probe_cts)
    direction = {i: vj.astype(np.float64) for i, vj in zip(s.wrt, v)}
    eps = float(np.finfo(s.dtype).eps)  # the first derivative is computed in that precision
    step = directional_step(s.domains, [a.astype(np.float64) for a in first], direction, eps)
    got = jax.tree.map(
        np.asarray,
        _second_derivatives(
            s.adapter,
            tuple(s.wrt),
            compositions,
            tuple(jnp.asarray(a) for a in first),
            cts,
            tuple(jnp.asarray(x) for x in v),
        ),
    )

    def at(m: float) -> tuple[jax.Array, ...]:
        point = moved(first, direction, m * step)
        return tuple(
            jnp.asarray(a if i not in direction else a.astype(first[i].dtype))
            for i, a in enumerate(point)
        )

    # the first derivative at x + m h v: the gradient by the program the "grad" and "vmap"
    # checks compiled, or <∇f, v> by jax.jvp
    values = {}
    for m in STEPS:
        if s.reverse_rule:
            values[m] = [np.asarray(g) for g in plain(s.adapter, at(m), cts)[1]]
        else:
            values[m] = [np.asarray(_directional(s.adapter, tuple(s.wrt), at(m), cts, v))]
    differences, uncertainty = central_difference(values, step, eps)
    # H v has the units of the gradient (v is scaled like the arguments), and rounds like the
    # terms it is computed from, which are the gradient's size where H v cancels to ~0
    sizes = [
        max(float(np.max(np.abs(values[m][j]), initial=0.0)) for m in STEPS)
        for j in range(len(differences))
    ]
    labels = "by central differences of the gradient"
    products = [c for c in _PRODUCTS if c in got]
    for composition in products:
        for j, i in enumerate(s.wrt):
            s.expect_close(
                "hessian",
                f"the Hessian-vector product's entries for argument {s.names[i]!r}",
                got[composition][j],
                differences[j],
                "grad",
                None,
                (composition, labels),
                uncertainty[j],
            )
    if FORWARD_OVER_FORWARD in got:
        if s.reverse_rule:
            expected = sum(float(np.sum(x * d)) for x, d in zip(direction.values(), differences))
            error = sum(
                float(np.sum(np.abs(x) * e)) for x, e in zip(direction.values(), uncertainty)
            )
            what = f"<v, H v> along {_names(s)} together"
        else:
            expected, error = float(differences[0]), float(uncertainty[0])
            labels = "by central differences of <∇f, v> by jax.jvp"
            what = f"<v, H v> along {_names(s)} together (v the direction, f the projection)"
        s.expect_close(
            "hessian",
            what,
            got[FORWARD_OVER_FORWARD],
            np.asarray(expected),
            "grad",
            None,
            (FORWARD_OVER_FORWARD, labels),
            np.asarray(error),
        )
    _check_agreement(s, got, products, direction, sizes)


def _check_agreement(
    s: Subject, got: dict[str, Any], products: list[str], direction: dict, sizes: list[float]
) -> None:
    """The compositions against the first one, to rounding: sharper than finite differences."""
    if not products:
        return
    reference = products[0]
    for composition in products[1:]:
        for j, i in enumerate(s.wrt):
            s.expect_close(
                "hessian",
                f"the Hessian-vector product's entries for argument {s.names[i]!r}",
                got[composition][j],
                got[reference][j],
                "same",
                None,
                (composition, reference),
                least_scale=(sizes[j], "the gradient's largest magnitude"),
            )
    if FORWARD_OVER_FORWARD not in got:
        return
    hv = got[reference]
    expected = sum(float(np.sum(x * h)) for x, h in zip(direction.values(), hv))
    scale = sum(
        float(np.sum(np.abs(x))) * max(float(np.max(np.abs(h), initial=0.0)), size)
        for x, h, size in zip(direction.values(), hv, sizes)
    )
    s.expect_close(
        "hessian",
        f"<v, H v> along {_names(s)} together",
        got[FORWARD_OVER_FORWARD],
        np.asarray(expected),
        "same",
        None,
        (FORWARD_OVER_FORWARD, f"from {reference}"),
        least_scale=(scale, "the size of the terms"),
    )


def _names(s: Subject) -> str:
    return ", ".join(repr(s.names[i]) for i in s.wrt)
