"""``solve``, ``inv`` and ``det`` for code written in JAX that must run on every backend:
XLA's TPU backend has no float64 LU ("Only F32 and C64 types are implemented in
LuDecomposition"), so ``jnp.linalg.solve``, ``inv`` and ``det`` fail to compile there in
float64. There, and only there, a solve runs on the host through ``LinearSolve`` (a bridged
call, differentiable to every order) and a determinant by cofactor expansion (elementwise
arithmetic, which the TPU emulates in float64); elsewhere, and in float32, they are
``jnp.linalg``'s. The choice is made when the program is lowered for its backend
(``jax.lax.platform_dependent``), so a program traced once runs right on either."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """``jnp.linalg.solve(a, b)``: ``a`` (..., n, n), ``b`` (..., n, k), or (n,)."""
    if b.ndim == 1:
        return solve(a, b[:, None])[..., 0]
    if a.dtype != jnp.float64:
        return jnp.linalg.solve(a, b)
    return jax.lax.platform_dependent(a, b, tpu=_host_solve, default=jnp.linalg.solve)


def inv(a: jax.Array) -> jax.Array:
    """``jnp.linalg.inv(a)``."""
    eye = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return solve(a, eye)


def det(a: jax.Array) -> jax.Array:
    """``jnp.linalg.det(a)``, for the small matrices of geometry (cofactors on a TPU: n!
    terms)."""
    if a.dtype != jnp.float64:
        return jnp.linalg.det(a)
    return jax.lax.platform_dependent(a, tpu=_cofactor_det, default=jnp.linalg.det)


def _host_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    from ..linalg.linear_solve import LinearSolve  # (linalg's rules import this module)

    solve_one = LinearSolve(on_failure="nan")  # NaN where singular, as jnp.linalg.solve's
    columns = jax.vmap(solve_one, in_axes=(None, -1), out_axes=-1)
    return jnp.vectorize(columns, signature="(n,n),(n,k)->(n,k)")(a, b)


def _cofactor_det(a: jax.Array) -> jax.Array:
    n = a.shape[-1]
    if n == 1:
        return a[..., 0, 0]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    total = jnp.zeros(a.shape[:-2], a.dtype)
    for j in range(n):  # along the first row
        minor = jnp.delete(jnp.delete(a, 0, axis=-2), j, axis=-1)
        total = total + (-1) ** j * a[..., 0, j] * _cofactor_det(minor)
    return total
