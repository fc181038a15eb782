"""The "linear_transpose" check, for adapters that declare ``linear_in``: ``forward`` is
linear in those arguments, on the host, and ``jax.linear_transpose`` in them equals the vjp
(so the adapter needs a reverse-mode rule, which ``jax.linear_transpose`` runs)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxbridge import Adapter

from ._arguments import listing
from ._compare import mismatch
from ._differences import outputs64
from ._domains import sample
from ._subject import Subject
from ._transforms import floating, in_some

# forward(a u + b v) against a forward(u) + b forward(v): a + b != 1 catches an offset
_A, _B = 0.5, 1.5


@functools.partial(jax.jit, static_argnums=(0, 1))
def _transpose_program(
    adapter: Adapter, linear: tuple[int, ...], args: tuple, cts: tuple
) -> tuple[tuple, tuple]:
    """The cotangents of the ``linear`` arguments for ``cts`` by ``jax.linear_transpose`` and
    by ``jax.vjp``."""
    function = in_some(adapter, args, linear)
    primals = tuple(args[i] for i in linear)
    transposed = jax.linear_transpose(function, *primals)(tuple(cts))
    _, pullback = jax.vjp(function, *primals)
    return transposed, pullback(tuple(cts))


def check_linear_transpose(s: Subject) -> None:
    declared = tuple(s.adapter.linear_in)
    for name in declared:
        if name not in s.names or not floating(s.args[s.names.index(name)].dtype):
            problem = "is not an argument" if name not in s.names else "is not floating"
            raise s.failure(
                "linear_transpose",
                f"linear_in = {declared!r} names {name!r}, which {problem} of "
                f"{s.owner}.forward({', '.join(s.names)})",
            )
    linear = tuple(s.names.index(name) for name in declared)
    _check_linearity(s, declared, linear)
    if not s.reverse_rule:
        names = " and ".join(repr(name) for name in declared)
        raise s.failure(
            "linear_transpose",
            f"linear_in = {declared!r} offers jax.linear_transpose in {names}, which runs the "
            f"reverse-mode rule, but {s.owner} has none: jax.linear_transpose, jax.grad, "
            f'jax.vjp and jax.jacrev raise "{s.owner} defines no `backward`". Define '
            "`backward` (for an argument forward is linear in, its cotangent is forward's "
            "transpose applied to g) or `pullback`",
        )
    transposed, pulled = jax.tree.map(
        np.asarray,
        _transpose_program(
            s.adapter,
            linear,
            tuple(jnp.asarray(a) for a in s.first),
            tuple(jnp.asarray(c) for c in s.probe_cts),
        ),
    )
    for i, got, expected in zip(linear, transposed, pulled):
        s.expect_close(
            "linear_transpose",
            f"the cotangent of {s.names[i]!r}",
            got,
            expected,
            "same",
            None,
            ("by jax.linear_transpose", "by jax.vjp"),
        )


def _check_linearity(s: Subject, declared: tuple[str, ...], linear: tuple[int, ...]) -> None:
    """``forward(a u + b v) = a forward(u) + b forward(v)`` in float64 on the host, for ``u``
    and ``v`` drawn from the domains: in each argument of ``linear`` alone (the other ones it
    names at zero: linear together means linear in each with the others at zero), then in
    all of them together; the arguments not named stay as given."""
    rng = s.generator("linearity")
    args = [a.astype(np.float64) if floating(a.dtype) else a for a in s.first]
    outputs = outputs64(s.adapter, s.ranks, s.output_ranks, s.floating_outputs)
    zeros = {i: np.zeros_like(args[i]) for i in linear}
    tests = [(i,) for i in linear] + ([linear] if len(linear) > 1 else [])
    tol = s.tolerance("same", "linear_transpose", np.dtype(np.float64))
    for moving in tests:
        u = {i: sample(s.domains[i], args[i].shape, np.dtype(np.float64), rng) for i in moving}
        v = {i: sample(s.domains[i], args[i].shape, np.dtype(np.float64), rng) for i in moving}

        def at(values: dict[int, np.ndarray]) -> list[np.ndarray]:
            full = list(args)
            for i in linear:
                full[i] = values.get(i, zeros[i])
            return outputs(full)

        combined = at({i: _A * u[i] + _B * v[i] for i in moving})
        on_u, on_v = at(u), at(v)
        separate = [_A * x + _B * y for x, y in zip(on_u, on_v)]
        labels = (f"from forward({_A} u + {_B} v)", f"from {_A} forward(u) + {_B} forward(v)")
        for o, got, expected, x, y in zip(s.floating_outputs, combined, separate, on_u, on_v):
            # the sum may cancel far below its terms, whose rounding both sides carry
            terms = float(np.max(np.abs(_A * x) + np.abs(_B * y), initial=0.0))
            problem = mismatch(
                got, expected, tol, labels, least_scale=(terms, "the size of the terms")
            )
            if problem is None:
                continue
            names = " and ".join(repr(s.names[i]) for i in moving)
            if len(moving) > 1:
                which = f"arguments {names} together"
            elif len(linear) > 1:
                which = f"argument {names} (the other arguments linear_in names at zero)"
            else:
                which = f"argument {names}"
            shown = [s.names[i] for i in moving]
            fix = (
                "linear_in names arguments forward is linear in all together (x * y is linear "
                "in x and in y, not in both): take some out"
                if len(moving) > 1
                else f"Take {names} out of linear_in (and give {s.owner} a forward-mode rule "
                "of its own if it needs one)"
            )
            raise s.failure(
                "linear_transpose",
                f"forward is not linear in {which}, as linear_in = {declared!r} declares: for "
                f"u and v drawn from the domain, in float64, output {o} {problem}. {fix}",
                "\n".join(
                    [
                        s.inputs(),
                        listing([f"u_{n}" for n in shown], [u[i] for i in moving]),
                        listing([f"v_{n}" for n in shown], [v[i] for i in moving]),
                    ]
                ),
            )
