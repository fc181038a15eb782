"""``ReLU``: ``max(0, x)`` with the subgradient 0 at 0."""

import numpy as np

import jaxbridge as jb


class ReLU(jb.Adapter):
    """``max(0, x)`` elementwise; its derivative at exactly 0 is taken to be 0."""

    signature = "()->()"
    vectorized = True
    domains = {"x": "away_from_zero"}  # finite differences across the kink average 0 and 1

    def forward(self, x):
        return np.maximum(x, 0)

    def backward(self, res, g):
        x, _ = res
        return (g * (x > 0),)
