"""``OdeGradient``: ``OdeSolve``'s gradient as a bridged call of its own, so that it can be
differentiated again (Hessians, Hessian-vector products), forward over the first-order rule.

Its forward is ``OdeSolve.backward`` itself, so a gradient costs what it did. Its rules,
for a direction ``v = (ẏ0, θ̇, ṫ)`` of the inputs ``x = (y0, θ, ts)`` and the cotangent
``g`` of the outputs, use the symmetry of second derivatives:

- the gradient ``G(x, g) = J(x)ᵀ g`` moves along ``(v, ġ)`` by ``G(x, ġ) + ∇ₓ⟨g, J(x) v⟩``;
- its pullback of ``w`` is ``(∇ₓ⟨g, J(x) w⟩, J(x) w)``.

``J(x) v`` is the output of one ``OdeSolve`` of the ODE with its directional sensitivity
(``TangentRhs``: ``n`` more unknowns, ``p`` more parameters, the same method and
settings), and ``∇ₓ`` of ``⟨g, J(x) v⟩`` that solve's first-order gradient: forward over
the adjoint, or over the steps, or over forward sensitivities, as the setting is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

import jaxbridge as jb

from ._checks import kept_on, named_backward
from ._tangent_rhs import TangentRhs

_SUPPORTED = (
    "Second derivatives are supported by reverse mode first: jax.hessian, jacfwd or jacrev "
    "of grad, jacrev of jacrev and Hessian-vector products (jax.jvp of jax.grad)."
)
_THIRD_ORDER = (
    "OdeSolve differentiates to second order at most; a third derivative would "
    "differentiate the rhs's second derivatives again, which OdeSolve does not take. " + _SUPPORTED
)
_FORWARD_TWICE = (
    "OdeSolve differentiates to second order at most, reverse mode first: its forward mode "
    "(jvp, jacfwd) is a first-order rule on the host, not differentiated again (jacfwd of "
    "jacfwd, jacrev of jacfwd, a third derivative). " + _SUPPORTED
)


def _floating(x: Any) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.floating)


class OdeGradient(jb.Adapter):
    """``(ȳ0, θ̄, t̄) = OdeGradient(solver)(y0, theta, ts, ys, g)``: ``solver.backward``.
    ``ys`` is the solve's output, whose tangent the rules do not read: they take every
    derivative through ``y0``, ``theta`` and ``ts``, on which ``ys`` depends."""

    solver: Any  # (an OdeSolve)

    signature = "(n),(p),(k),(k,n),(k,n)->(n),(p),(k)"
    blas_threads = 1  # (as OdeSolve's: the same host loops)

    def output_specs(self, y0, theta, ts, *rest):
        return tuple(jax.ShapeDtypeStruct(a.shape, jb.result_dtype(a)) for a in (y0, theta, ts))

    def forward(self, y0, theta, ts, ys, g):
        with named_backward("OdeSolve"):
            return tuple(self.solver.backward((y0, theta, ts, ys), g))

    def pushforward(self, res, tangents):
        if isinstance(self.solver.rhs, TangentRhs):
            raise TypeError(_THIRD_ORDER)
        count = len(self.signature.split("->")[0].split("),("))
        args, dg = res[:count], tangents[count - 1]
        y0, theta, ts, g = args[0], args[1], args[2], args[-1]
        out = [None, None, None]
        if dg is not None:  # (the gradient is linear in g)
            out = list(self(*args[:-1], dg))
        if any(t is not None for t in tangents[:3]):
            second, _ = second_order(self.solver, y0, theta, ts, g, *tangents[:3])
            out = [s if o is None else o + s for o, s in zip(out, second)]
        return tuple(
            jnp.zeros(a.shape, jb.result_dtype(a)) if o is None else o
            for o, a in zip(out, (y0, theta, ts))
        )

    def pullback(self, res, w):
        if isinstance(self.solver.rhs, TangentRhs):
            raise TypeError(_THIRD_ORDER)
        count = len(self.signature.split("->")[0].split("),("))
        args = res[:count]
        y0, theta, ts, g = args[0], args[1], args[2], args[-1]
        second, jw = second_order(self.solver, y0, theta, ts, g, *w)
        return (*second, *([None] * (count - 4)), jw)


class SavedOdeGradient(OdeGradient):
    """``OdeGradient`` for ``sensitivity="forward"``: its saved sensitivities ``sens`` (a
    residual, passed to this bridged call alone; not read by the rules, as ``ys``) come
    after ``ys``."""

    signature = "(n),(p),(k),(k,n),(k,n,m),(k,n)->(n),(p),(k)"

    def forward(self, y0, theta, ts, ys, sens, g):  # pyright: ignore[reportIncompatibleMethodOverride]
        with named_backward("OdeSolve"):
            return tuple(self.solver.backward((y0, theta, ts, ys, sens), g))


def second_order(solver, y0, theta, ts, g, dy0, dtheta, dts):
    """``(∇ₓ⟨g, J v⟩, J v)`` for the direction ``v = (dy0, dtheta, dts)`` (None: zero), in
    JAX, over the call's batch axes: ``J v`` from one ``OdeSolve`` of ``TangentRhs``, its
    gradient by that solve's own first-order rule. ``x`` entries that are not floating get
    None."""
    n, p, k = y0.shape[-1], theta.shape[-1], ts.shape[-1]
    dtype = jb.result_dtype(y0, theta, ts)
    moves_ts = dts is not None and _floating(ts)
    augmented = kept_on(
        solver, "_augmented", lambda: dataclasses.replace(solver, rhs=TangentRhs(solver.rhs))
    )

    def one(y0, theta, ts, g, dy0, dtheta, dts):
        def inner(y0, theta, ts):
            start = dy0
            if moves_ts:  # moving t0 moves the trajectory after it: ẏ(t0) = ẏ0 - f0 ṫ0
                start = dy0 - solver.rhs(ts[0], y0, theta) * dts[0]
            zs = augmented(jnp.concatenate([y0, start]), jnp.concatenate([theta, dtheta]), ts)
            later = zs[1:, n:]
            if moves_ts:  # y(t_i) moves with t_i by f(t_i, y_i)
                later = later + solver.rhs(ts[1:], zs[1:, :n], theta) * dts[1:, None]
            return jnp.sum(g[1:] * later), jnp.concatenate([dy0[None], later])

        if k <= 1:  # (nothing is integrated: y_0 is y0, or there are no output times)
            zero = (jnp.zeros_like(y0), jnp.zeros_like(theta), jnp.zeros_like(ts))
            return (*zero, dy0[None][:k])
        _, pull, jv = jax.vjp(inner, y0, theta, ts, has_aux=True)
        return (*pull(jnp.ones((), g.dtype)), jv)

    filled = [
        jnp.zeros(shape, dtype) if t is None else jnp.asarray(t, dtype)
        for t, shape in ((dy0, (n,)), (dtheta, (p,)), (dts, (k,)))
    ]
    vectorized = jnp.vectorize(one, signature="(n),(p),(k),(k,n),(n),(p),(k)->(n),(p),(k),(k,n)")
    cy0, ctheta, cts, jv = vectorized(
        jnp.asarray(y0, dtype), jnp.asarray(theta, dtype), jnp.asarray(ts, dtype), g, *filled
    )
    return (cy0, ctheta, cts if _floating(ts) else None), jv


class OdeTangent(jb.Adapter):
    """``J v = OdeTangent(solver)(y0, theta, ts, ys, dy0, dtheta, dts)``: ``solver.jvp``
    (the same host work), as a bridged call whose rules refuse, naming ``OdeSolve``: its
    second derivatives are taken reverse mode first (``OdeGradient``)."""

    solver: Any  # (an OdeSolve)

    signature = "(n),(p),(k),(k,n),(n),(p),(k)->(k,n)"
    blas_threads = 1  # (as OdeSolve's: the same host loops)

    def output_specs(self, y0, theta, ts, ys, *rest):
        return jax.ShapeDtypeStruct(ys.shape, ys.dtype)

    def forward(self, y0, theta, ts, ys, dy0, dtheta, dts):
        return self.solver.jvp((y0, theta, ts, ys), (dy0, dtheta, dts))

    def pushforward(self, res, tangents):
        raise TypeError(self._refusal())

    def pullback(self, res, g):
        raise TypeError(self._refusal())

    def _refusal(self) -> str:
        return _THIRD_ORDER if isinstance(self.solver.rhs, TangentRhs) else _FORWARD_TWICE


class SavedOdeTangent(OdeTangent):
    """``OdeTangent`` for ``sensitivity="forward"``: the saved sensitivities after ``ys``."""

    signature = "(n),(p),(k),(k,n),(k,n,m),(n),(p),(k)->(k,n)"

    def forward(self, y0, theta, ts, ys, sens, dy0, dtheta, dts):  # pyright: ignore[reportIncompatibleMethodOverride]
        return self.solver.jvp((y0, theta, ts, ys, sens), (dy0, dtheta, dts))
