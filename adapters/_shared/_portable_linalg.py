"""``solve``, ``inv`` and ``det`` for code written in JAX that must run on every backend:
XLA's TPU backend has no float64 LU ("Only F32 and C64 types are implemented in
LuDecomposition"), so ``jnp.linalg.solve``, ``inv`` and ``det`` fail to compile there in
float64. There, and only there, a solve runs on the host through ``LinearSolve`` (a bridged
call, differentiable to every order); elsewhere, and in float32, it is ``jnp.linalg``'s. The
choice is made when the program is lowered for its backend (``jax.lax.platform_dependent``),
so a program traced once runs right on either. A determinant is Gaussian elimination
written elementwise, on every backend (see ``det``)."""

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
    """``jnp.linalg.det(a)`` for the small (..., n, n) matrices of geometry, on every backend
    and in every dtype: Gaussian elimination with partial pivoting (LU's arithmetic, so as
    exact), written as n steps of elementwise operations, differentiated by JAX to every
    order. Not XLA's LU, which a TPU lacks in float64 and whose batched form, 62,000 rows of
    6 x 6 in a second derivative of ``ConvexHull``, blocked XLA's threads on the CPU; nor a
    cofactor expansion, whose n! terms took 55 s to trace for a second derivative at n = 6."""
    n = a.shape[-1]
    if n == 0:
        return jnp.ones(a.shape[:-2], a.dtype)
    rows = jnp.arange(n)
    total = jnp.ones(a.shape[:-2], a.dtype)
    for k in range(n):
        below = rows >= k
        # the pivot: the largest entry of column k on or below the diagonal, swapped to row k
        size = jnp.where(below, jnp.abs(a[..., :, k]), -1)
        chosen = jax.nn.one_hot(jnp.argmax(size, -1), n, dtype=a.dtype)  # (..., n)
        at_k = jax.nn.one_hot(k, n, dtype=a.dtype)
        swapped = chosen[..., k] == 0  # (a different row: the sign flips)
        # (a sum of products, not a matrix product: a TPU's are bf16-pass by default)
        pivot_row = jnp.sum(chosen[..., :, None] * a, -2)
        row_k = a[..., k, :]
        move = (at_k - chosen)[..., :, None] * (pivot_row - row_k)[..., None, :]
        a = a + move  # rows k and the pivot's exchanged
        pivot = a[..., k, k]
        total = total * jnp.where(swapped, -pivot, pivot)
        # eliminate below the pivot; a zero pivot (a singular matrix) eliminates nothing
        safe = jnp.where(pivot == 0, 1, pivot)
        factors = jnp.where(rows > k, a[..., :, k] / safe[..., None], 0)
        a = a - factors[..., :, None] * a[..., k, None, :]
    return total


def _host_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    from ..linalg.linear_solve import LinearSolve  # (linalg's rules import this module)

    solve_one = LinearSolve(on_failure="nan")  # NaN where singular, as jnp.linalg.solve's
    columns = jax.vmap(solve_one, in_axes=(None, -1), out_axes=-1)
    return jnp.vectorize(columns, signature="(n,n),(n,k)->(n,k)")(a, b)
