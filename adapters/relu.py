"""``ReLU``: ``max(0, x)`` with the subgradient 0 at 0."""

import numpy as np

import jaxbridge as jb


class ReLU(jb.Adapter):
    """``max(0, x)`` elementwise; its derivative at exactly 0 is taken to be 0.

    The forward runs on the host; both derivative rules are a mask of the input in JAX, so
    derivatives of every order work (all zero past the first).
    """

    signature = "()->()"
    vectorized = True
    domains = {"x": "away_from_zero"}  # finite differences across the kink average 0 and 1

    def forward(self, x):
        return np.maximum(x, 0)

    def pushforward(self, res, tangents):
        x, _ = res
        (dx,) = tangents
        return dx * (x > 0)

    def pullback(self, res, g):
        x, _ = res
        return (g * (x > 0),)
