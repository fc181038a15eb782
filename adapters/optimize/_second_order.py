"""The solvers' derivative rules as bridged calls whose own rules are second order.

An ``ImplicitSolver``'s ``pullback`` and ``pushforward`` (written in JAX) hand the work to
two helper adapters, ``ImplicitAdjoint`` and ``ImplicitTangent``, whose host ``forward`` is
the first-order rule (what the solver's host ``backward`` and ``jvp`` were: one solve with
the saved ``J_z``) and whose ``pushforward`` and ``pullback`` are bridged calls of the
second order, so that ``jax.hessian``, ``jvp`` of ``grad``, ``grad`` of ``grad`` and
``jacfwd`` of ``jacfwd`` all work. Those last calls refuse to be differentiated again,
naming the solver (a third derivative would need the optimality system's third
derivatives). With ``M(q) = -J_z⁻¹ J_q`` the solution's derivative (``z`` the unknowns, ``q``
the parameters), the adjoint is ``Mᵀ g`` and the tangent ``M q̇``; moving ``q`` along ``e``
moves them through ``M``, whose derivative needs the optimality system's second
derivatives ``F''`` along two directions ``(ż, q̇)``:

    Ṁ[e] q̇ = -J_z⁻¹ F''[(M e, e), (M q̇, q̇)]       (tangent, its jvp)
    Ṁ[e]ᵀ g = -(Mᵀ D_z + D_q),  D = F''[λ; (M e, e), ·],  λ = J_z⁻ᵀ g

(Blondel et al., "Efficient and modular implicit differentiation", 2022). ``D``, the
second derivatives contracted with ``λ`` and one direction, serves the adjoint's ``jvp``
and ``backward`` and the tangent's ``backward``; the tangent's ``jvp`` needs ``F''`` of two
directions. Each solver says how to compute them from what its user's adapters provide
(``ImplicitSolver._second_order``).

The derivative in ``x`` itself (not through ``q``) is never asked for: ``x`` is the
solver's output, so its tangent is always ``M q̇`` (0 in ``x0``), which the rules use,
and a cotangent of ``x`` is left to the solver's own pullback. Host code in the rules,
JAX in ``rules_in_jax``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb

from .._shared._failure import OptimizeError
from ._differences import RoughDifferences

failure = OptimizeError.because


class SecondOrder(Protocol):
    """The optimality system's second derivatives at a solution: directions ``d`` are
    ``(ż, q̇)``, in the unknowns then the parameters."""

    def contracted(self, lam: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``D = ∇_{(z,q)} (λ · F'[d])``: ``(k + q,)``."""
        ...

    def bilinear(self, d1: np.ndarray, d2: np.ndarray) -> np.ndarray:
        """``F''[d1, d2]``: ``(k,)``."""
        ...


class Solver(Protocol):
    """What the rules ask of the solver they serve (``ImplicitSolver``, which imports this
    module: named here by what it does, not by import)."""

    def _second_order(
        self, q: np.ndarray, z: np.ndarray, flags: np.ndarray, n: int
    ) -> SecondOrder: ...

    def _users(self) -> tuple[jb.Adapter, ...]: ...

    nan_on_failure: Callable[..., Any]  # MayFail's


class _Rules:
    """What one element's rules share: solves with the saved ``J_z`` and ``J_q`` (``M``
    and its transpose), and the second derivatives, asked for once they are needed."""

    def __init__(self, solver: Solver, q, x, jz, jq, state):
        self.solver = solver
        self.q, self.x, self.n = np.asarray(q, np.float64), np.asarray(x, np.float64), x.shape[-1]
        self.jz, self.jq = np.asarray(jz, np.float64), np.asarray(jq, np.float64)
        self.k = self.jz.shape[0]
        self.state = np.asarray(state, np.float64)
        self.ok = bool(np.isfinite(self.jz).all() and np.isfinite(self.jq).all())
        self.fixed = np.isinf(self.q)  # an infinite bound does not move
        self._second: SecondOrder | None = None

    def padded(self, g: np.ndarray) -> np.ndarray:
        gz = np.zeros(self.k)
        gz[: self.n] = g
        return gz

    def tangent(self, dq: np.ndarray) -> np.ndarray:
        """``ż = M q̇``, whole (in every unknown)."""
        dq = np.where(self.fixed, 0.0, dq)
        return -np.linalg.solve(self.jz, self.jq @ dq)

    def adjoint(self, gz: np.ndarray) -> np.ndarray:
        """``λ = J_z⁻ᵀ g``."""
        return np.linalg.solve(self.jz.T, gz)

    def direction(self, dq: np.ndarray) -> np.ndarray:
        """``(M q̇, q̇)``."""
        dq = np.where(self.fixed, 0.0, dq)
        return np.concatenate([self.tangent(dq), dq])

    @property
    def second(self) -> SecondOrder:
        if self._second is None:
            z, flags = self.state[: self.k], self.state[self.k :]
            self._second = self.solver._second_order(self.q, z, flags, self.n)
        return self._second

    def through(self, dz: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """A cotangent ``(dz, dq)`` of ``(z, q)`` as one of ``q`` alone: ``Mᵀ dz + dq``."""
        return np.where(self.fixed, 0.0, dq - self.jq.T @ self.adjoint(dz))

    def moved_adjoint(self, lam: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``Ṁ[e]ᵀ g`` for ``λ = J_z⁻ᵀ g`` and ``d = (M e, e)``: ``-(Mᵀ D_z + D_q)``."""
        D = self._smooth(lambda: self.second.contracted(lam, d))
        return -self.through(D[: self.k], D[self.k :])

    def moved_tangent(self, e: np.ndarray, d: np.ndarray) -> np.ndarray:
        """``Ṁ[e] q̇`` for ``d = (M q̇, q̇)``: ``-J_z⁻¹ F''[(M e, e), d]``, in ``x``."""
        bent = self._smooth(lambda: self.second.bilinear(self.direction(e), d))
        return -np.linalg.solve(self.jz, bent)[: self.n]

    def _smooth(self, compute: Callable[[], np.ndarray]) -> np.ndarray:
        try:
            return compute()
        except RoughDifferences as error:
            owner = type(self.solver).__name__
            users = " and ".join(type(u).__name__ for u in self.solver._users())
            raise failure(
                f"{owner}: the second derivatives of its solution are differences of the "
                f"exact first derivatives of {users} near the solution, and these are not "
                f"smooth there ({error}): second derivatives need a function three times "
                "differentiable near the solution (an exact `hessian` hook on an objective "
                "makes them differences of the hook instead)"
            ) from None


def _nan(shape) -> np.ndarray:
    return np.full(shape, np.nan)


def _filled(value, like):
    return jnp.zeros(like.shape, jb.result_dtype(like)) if value is None else value


class ImplicitAdjoint(jb.Adapter):
    """The solver's reverse-mode rule: ``(q, x, g) -> (x̄₀, q̄)`` with ``q̄ = Mᵀ g`` and
    ``x̄₀ = 0`` (NaN, both, for a failed solve); the residuals ``J_z, J_q`` and the state
    after them are the solver's. Its rules are the second order (``_AdjointJvp``,
    ``_AdjointBackward``)."""

    solver: Solver
    signature = "(q),(n),(n),(k,k),(k,q),(s)->(n),(q)"
    blas_threads = 1

    def forward(self, q, x, g, jz, jq, state):
        rules = _Rules(self.solver, q, x, jz, jq, state)
        if not rules.ok:
            return _nan(x.shape), _nan(q.shape)
        return np.zeros(x.shape), -(rules.jq.T @ rules.adjoint(rules.padded(g)))

    def pushforward(self, res, tangents):
        q, _, g = res[:3]
        dq, dg = _filled(tangents[0], q), _filled(tangents[2], g)
        # (x̄₀ is 0, or NaN for a failed solve: its tangent is too)
        return 0 * res[6], _AdjointJvp(self.solver)(*res[:6], dq, dg)

    def pullback(self, res, cts):
        w = cts[1]  # (x̄₀ is 0 whatever the inputs: its cotangent moves nothing)
        if w is None:
            return (None,) * 6
        gq, gg = _AdjointBackward(self.solver)(*res[:6], w)
        return gq, None, gg, None, None, None


class ImplicitTangent(jb.Adapter):
    """The solver's forward-mode rule: ``(q, x, q̇) -> ẋ = (M q̇)ₓ`` (NaN for a failed
    solve). Its rules are the second order (``_TangentJvp``, ``_TangentBackward``)."""

    solver: Solver
    signature = "(q),(n),(q),(k,k),(k,q),(s)->(n)"
    blas_threads = 1

    def forward(self, q, x, dq, jz, jq, state):
        rules = _Rules(self.solver, q, x, jz, jq, state)
        if not rules.ok:
            return _nan(x.shape)
        return rules.tangent(np.asarray(dq, np.float64))[: rules.n]

    def pushforward(self, res, tangents):
        q, _, dq = res[:3]
        de, ddq = _filled(tangents[0], q), _filled(tangents[2], dq)
        return _TangentJvp(self.solver)(*res[:6], de, ddq)

    def pullback(self, res, ct):
        gq, gdq = _TangentBackward(self.solver)(*res[:6], ct)
        return gq, None, gdq, None, None, None


class _SecondOrderRule(jb.Adapter):
    """A second-order rule of the solver's: its host ``forward`` is the rule, and it is
    not differentiated again (that would take the optimality system's third derivatives)."""

    solver: Solver
    blas_threads = 1

    def pushforward(self, res, tangents):
        raise TypeError(_third_order(self.solver))

    def pullback(self, res, g):
        raise TypeError(_third_order(self.solver))


def _third_order(solver: Solver) -> str:
    owner = type(solver).__name__
    return (
        f"{owner} differentiates to second order at most; a third derivative (jacfwd or "
        f"grad of jax.hessian, of a Hessian-vector product, ...) would need the optimality "
        f"system's third derivatives, which {owner} does not take. Second derivatives of "
        "every composition are supported: jax.hessian, jacfwd/jacrev of grad, jacfwd of "
        "jacfwd, jacrev of jacrev and Hessian-vector products (jax.jvp of jax.grad)."
    )


class _AdjointJvp(_SecondOrderRule):
    """``ImplicitAdjoint``'s ``q̄`` moved along ``(q̇, ġ)``: ``Mᵀ ġ + Ṁ[q̇]ᵀ g``."""

    signature = "(q),(n),(n),(k,k),(k,q),(s),(q),(n)->(q)"

    def forward(self, q, x, g, jz, jq, state, dq, dg):
        rules = _Rules(self.solver, q, x, jz, jq, state)
        if not rules.ok:
            return _nan(q.shape)
        out = np.zeros(q.shape)
        if np.any(dg != 0):
            out -= rules.jq.T @ rules.adjoint(rules.padded(dg))
        lam = rules.adjoint(rules.padded(g))
        if np.any(dq[~rules.fixed] != 0) and np.any(lam != 0):
            try:
                out += rules.moved_adjoint(lam, rules.direction(dq))
            except OptimizeError as error:
                return self.solver.nan_on_failure(error, q.shape)
        return out


class _AdjointBackward(_SecondOrderRule):
    """``ImplicitAdjoint``'s pullback of ``w`` (the cotangent of ``q̄``): ``(q, g)``'s."""

    signature = "(q),(n),(n),(k,k),(k,q),(s),(q)->(q),(n)"

    def forward(self, q, x, g, jz, jq, state, w):
        rules = _Rules(self.solver, q, x, jz, jq, state)
        if not rules.ok:
            return _nan(q.shape), _nan(x.shape)
        d = rules.direction(w)
        # q̄ = Mᵀ g is linear in g: g's cotangent is M w; through M, Ṁ[e]ᵀ g · w is
        # -(Mᵀ D_z + D_q) · e with D along (M w, w), by the symmetry of F''
        lam = rules.adjoint(rules.padded(g))
        try:
            gq = rules.moved_adjoint(lam, d) if np.any(d != 0) and np.any(lam != 0) else None
        except OptimizeError as error:
            return self.solver.nan_on_failure(error, q.shape, x.shape)
        return np.zeros(q.shape) if gq is None else gq, d[: rules.n]


class _TangentJvp(_SecondOrderRule):
    """``ImplicitTangent``'s ``ẋ`` moved along ``(e, q̈)``: ``M q̈ + Ṁ[e] q̇``."""

    signature = "(q),(n),(q),(k,k),(k,q),(s),(q),(q)->(n)"

    def forward(self, q, x, dq, jz, jq, state, de, ddq):
        rules = _Rules(self.solver, q, x, jz, jq, state)
        if not rules.ok:
            return _nan(x.shape)
        out = np.zeros(x.shape)
        if np.any(ddq != 0):
            out += rules.tangent(ddq)[: rules.n]
        if np.any(de[~rules.fixed] != 0) and rules.n:
            d = rules.direction(np.asarray(dq, np.float64))
            if np.any(d != 0):
                try:
                    out += rules.moved_tangent(de, d)
                except OptimizeError as error:
                    return self.solver.nan_on_failure(error, x.shape)
        return out


class _TangentBackward(_SecondOrderRule):
    """``ImplicitTangent``'s pullback of ``ct`` (the cotangent of ``ẋ``): ``(q, q̇)``'s."""

    signature = "(q),(n),(q),(k,k),(k,q),(s),(n)->(q),(q)"

    def forward(self, q, x, dq, jz, jq, state, ct):
        rules = _Rules(self.solver, q, x, jz, jq, state)
        if not rules.ok:
            return _nan(q.shape), _nan(q.shape)
        lam = rules.adjoint(rules.padded(ct))
        ddq = np.where(rules.fixed, 0.0, -(rules.jq.T @ lam))
        d = rules.direction(np.asarray(dq, np.float64))
        try:
            gq = rules.moved_adjoint(lam, d) if np.any(d != 0) and np.any(lam != 0) else None
        except OptimizeError as error:
            return self.solver.nan_on_failure(error, q.shape, q.shape)
        return np.zeros(q.shape) if gq is None else gq, ddq


def rules_in_jax(solver: Solver):
    """The solver's ``pullback`` and ``pushforward``: its parameters joined into ``q``, then
    the helpers above."""

    def pullback(res, g):
        count = len(res) - 4
        args, (x, jz, jq, state) = res[:count], res[count:]
        q, sizes = _joined(args[1:])
        g0, gq = ImplicitAdjoint(solver)(q, x, g, jz, jq, state)
        return (g0, *_split(gq, sizes))

    def pushforward(res, tangents):
        count = len(res) - 4
        args, (x, jz, jq, state) = res[:count], res[count:]
        q, _ = _joined(args[1:])
        filled = [jnp.zeros_like(a) if t is None else t for a, t in zip(args[1:], tangents[1:])]
        dq, _ = _joined(filled)
        return ImplicitTangent(solver)(q, x, dq, jz, jq, state)

    return pullback, pushforward


def _joined(parts) -> tuple[jax.Array, list[int]]:
    """The arrays ``parts`` joined along their last axis, their batch axes broadcast."""
    sizes = [p.shape[-1] for p in parts]
    if len(parts) == 1:
        return parts[0], sizes
    batch = jnp.broadcast_shapes(*(p.shape[:-1] for p in parts))
    return jnp.concatenate([jnp.broadcast_to(p, batch + p.shape[-1:]) for p in parts], -1), sizes


def _split(joined: jax.Array, sizes: list[int]) -> list[jax.Array]:
    if len(sizes) == 1:
        return [joined]
    return list(jnp.split(joined, np.cumsum(sizes)[:-1], axis=-1))
