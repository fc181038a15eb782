"""``Linear``: the affine layer ``x @ w + b`` with the hand-written backward of the seed article."""

import numpy as np

import jaxbridge as jb


class Linear(jb.Adapter):
    """``x @ w + b`` for a batch of rows ``x`` (k, n), weights ``w`` (n, m), bias ``b`` (m)."""

    signature = "(k,n),(n,m),(m)->(k,m)"
    vectorized = True

    def forward(self, x, w, b):
        return x @ w + b[..., None, :]

    def backward(self, res, g):
        x, w, _, _ = res
        dx = g @ np.swapaxes(w, -1, -2)
        dw = np.swapaxes(x, -1, -2) @ g
        db = g.sum(axis=-2)
        return dx, dw, db
