"""What ``Cdist`` and ``Pdist`` share: the metric, its checks, and its formula in JAX for
the rules."""

from __future__ import annotations

from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb

from ._metrics import METRICS

Metric = Literal[
    "euclidean",
    "sqeuclidean",
    "cityblock",
    "chebyshev",
    "minkowski",
    "cosine",
    "correlation",
    "braycurtis",
    "canberra",
]


class Distances(jb.Adapter):
    """What ``Cdist`` and ``Pdist`` share: the metric, its checks and its rules."""

    metric: Metric = "euclidean"
    p: float = 2.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.metric not in METRICS:
            raise ValueError(
                f"{owner}: parameter 'metric' must be one of {', '.join(METRICS)}; got "
                f"{self.metric!r}."
            )
        if self.metric == "minkowski" and not (
            isinstance(self.p, (int, float)) and not isinstance(self.p, bool) and self.p >= 1
        ):
            raise ValueError(
                f"{owner}: parameter 'p' must be a number of at least 1 (below 1 the "
                f"derivative at a zero difference is infinite); got {self.p!r}."
            )

    def scipy_distances(self, routine: Any, *points: np.ndarray) -> np.ndarray:
        """SciPy's ``routine`` (``cdist``, ``pdist``) of ``points`` with this metric."""
        options = {"p": float(self.p)} if self.metric == "minkowski" else {}
        return routine(*points, self.metric, **options)

    def _refuse_zero_rows(self, name: str, x: np.ndarray) -> None:
        if self.metric in ("cosine", "correlation"):
            centred = x - x.mean(-1, keepdims=True) if self.metric == "correlation" else x
            if (np.abs(centred).max(-1, initial=0) == 0).any():
                what = "constant" if self.metric == "correlation" else "zero"
                raise ValueError(
                    f"argument {name!r} has a {what} row, whose {self.metric} distance to "
                    "anything is undefined."
                )

    def _distances(self, xa: jax.Array, xb: jax.Array) -> jax.Array:
        return METRICS[self.metric](xa, xb, float(self.p))


def aligned(primals, tangents):
    """Primals and tangents of the same shapes, for ``jax.jvp``: a primal that the batch
    broadcasts (a size-1 batch axis) broadcast to its tangent's shape, zeros for a tangent
    that is ``None``."""
    primals = [x if t is None else jnp.broadcast_to(x, t.shape) for x, t in zip(primals, tangents)]
    tangents = [jnp.zeros_like(x) if t is None else t for x, t in zip(primals, tangents)]
    return tuple(primals), tuple(tangents)
