"""``Linear``: the affine layer ``x @ w + b`` of the seed article, its derivatives in JAX."""

import jax.numpy as jnp

import jaxbridge as jb

from ._shared._rules import total


class Linear(jb.Adapter):
    """``x @ w + b`` for a batch of rows ``x`` (k, n), weights ``w`` (n, m), bias ``b`` (m).

    The forward runs on the host; the derivative rules are the seed article's hand-written
    backward and its forward-mode twin, written in JAX from the inputs, so derivatives of
    every order work in both modes.
    """

    signature = "(k,n),(n,m),(m)->(k,m)"
    vectorized = True

    def forward(self, x, w, b):
        return x @ w + b[..., None, :]

    def pushforward(self, res, tangents):
        x, w, _, _ = res
        dx, dw, db = tangents
        return total(
            (
                None if dx is None else dx @ w,
                None if dw is None else x @ dw,
                # (b's tangent is the same in every row: broadcast to the output's k rows)
                None if db is None else jnp.repeat(db[..., None, :], x.shape[-2], axis=-2),
            )
        )

    def pullback(self, res, g):
        x, w, _, _ = res
        return g @ jnp.swapaxes(w, -1, -2), jnp.swapaxes(x, -1, -2) @ g, g.sum(axis=-2)
