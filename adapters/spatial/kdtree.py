"""``KDTree``: SciPy's ``KDTree(data)`` call form, its ``query`` on ``KDTreeQuery`` and its
``query_ball_point(..., return_length=True)`` on ``KDTreeBallCount``, with SciPy's
arguments and shapes."""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from .kdtree_ball_count import KDTreeBallCount
from .kdtree_query import KDTreeQuery

# SciPy's arguments that change how the tree is built or the query is run, not the answer


class KDTree:
    """``scipy.spatial.KDTree(data)``: ``distances, indices = KDTree(data).query(x, k)``, as
    SciPy's, with ``data`` differentiable (the tree is built by SciPy on the host at each
    query, from ``data`` as it is then: ``data`` may be traced).

    ``data`` is (n, m). SciPy's ``leafsize``, ``compact_nodes``, ``copy_data`` and
    ``balanced_tree`` are accepted and change nothing (they shape SciPy's tree, not its
    distances; the tree is built with SciPy's defaults at each query, so equidistant
    neighbours come in that tree's order), and ``boxsize`` (a periodic space) is refused: a
    ``TypeError`` names the argument.

    Examples:
        >>> import numpy as np
        >>> from jaxbridge.adapters.spatial import KDTree
        >>> tree = KDTree(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]))
        >>> distances, indices = tree.query(np.array([[0.75, 0.0], [0.0, 1.5]]))
        >>> np.asarray(indices).tolist(), np.asarray(distances).tolist()
        ([1, 2], [0.25, 0.5])
    """

    def __init__(
        self,
        data: Any,
        leafsize: int = 10,
        compact_nodes: bool = True,
        copy_data: bool = False,
        balanced_tree: bool = True,
        boxsize: Any = None,
    ) -> None:
        # (SciPy's tree options, accepted: they shape SciPy's tree, not its answer)
        del leafsize, compact_nodes, copy_data, balanced_tree
        if boxsize is not None:
            raise TypeError(
                "KDTree: argument 'boxsize' (a periodic space) is not supported: the "
                "distances are differentiated as plain Minkowski distances."
            )
        self.data = jnp.asarray(data)
        if self.data.ndim != 2:
            raise ValueError(
                f"KDTree: argument 'data' must be (n, m), n points in m dimensions; got shape "
                f"{self.data.shape}."
            )
        self.n, self.m = self.data.shape

    def query(
        self,
        x: Any,
        k: int | Any = 1,
        eps: float = 0.0,
        p: float = 2.0,
        distance_upper_bound: float = math.inf,
        workers: int = 1,
    ) -> tuple[Any, Any]:
        """``KDTree(data).query(x, k, eps, p, distance_upper_bound)`` as SciPy's: the ``k``
        nearest neighbours of each point of ``x`` (..., m), as ``(distances, indices)``.

        ``k`` an integer: the ``k`` nearest, nearest first, shaped (..., k); ``k = 1``
        gives (...) (no neighbour axis), as SciPy's. ``k`` a sequence of ranks (from 1):
        those neighbours, (..., len(k)), ``[1]`` keeping the axis. A neighbour beyond
        ``distance_upper_bound`` is missing: distance ``inf``, index ``n``. The indices are
        int32; the distances are differentiable in ``x`` and ``data`` (see
        ``KDTreeQuery``). ``workers`` is accepted and changes nothing (a query set, and
        ``vmap`` over query sets, is one host call)."""
        del workers  # (accepted: a query set is one host call; the answer is the same)
        ranks = _ranks(k)
        x = jnp.asarray(x)
        if x.ndim == 0 or x.shape[-1] != self.m:
            raise ValueError(
                f"KDTree.query: argument 'x' must have {self.m} coordinates in its last axis "
                f"(the data's); got shape {x.shape}."
            )
        query = KDTreeQuery(k=max(ranks), p=p, distance_upper_bound=distance_upper_bound, eps=eps)
        distances, indices = query(self.data, x.reshape(-1, self.m))
        if not isinstance(k, (int, np.integer)):  # (SciPy's ranks: those columns only)
            columns = np.asarray(ranks) - 1
            distances, indices = distances[:, columns], indices[:, columns]
        shape = x.shape[:-1] if isinstance(k, (int, np.integer)) and k == 1 else (*x.shape[:-1], -1)
        return distances.reshape(shape), indices.reshape(shape)

    def query_ball_point(
        self,
        x: Any,
        r: Any,
        p: float = 2.0,
        eps: float = 0.0,
        workers: int = 1,
        return_sorted: bool | None = None,
        return_length: bool = False,
    ) -> Any:
        """``KDTree(data).query_ball_point(x, r, p, eps, return_length=True)`` as SciPy's:
        how many data points lie within ``r`` of each point of ``x`` (..., m), int32,
        shaped ``x``'s leading axes (one point (m,) gives a scalar); ``r`` a number or one
        radius per point, broadcast against them (see ``KDTreeBallCount``). SciPy's lists
        of indices (``return_length=False``) have no fixed shape, so ``return_length=True``
        must be passed."""
        if not return_length:
            raise TypeError(
                "KDTree.query_ball_point: argument 'return_length' must be True: SciPy's "
                "lists of indices differ in length from point to point and are no JAX array; "
                "the counts are (use query(x, k) for neighbours' indices)."
            )
        del workers  # (accepted: a query set is one host call; the answer is the same)
        x = jnp.asarray(x)
        if x.ndim == 0 or x.shape[-1] != self.m:
            raise ValueError(
                "KDTree.query_ball_point: argument 'x' must have "
                f"{self.m} coordinates in its last axis (the data's); got shape {x.shape}."
            )
        points = x.shape[:-1]
        try:
            r = jnp.broadcast_to(jnp.asarray(r), points)
        except ValueError:
            raise ValueError(
                "KDTree.query_ball_point: argument 'r' must be a number or one radius per "
                f"point of 'x' (shape {points}); got shape {jnp.shape(r)}."
            ) from None
        counts = KDTreeBallCount(p=p, eps=eps)(self.data, x.reshape(-1, self.m), r.reshape(-1))
        return counts.reshape(points)


def _ranks(k: Any) -> list[int]:
    """The neighbours' ranks (from 1) that ``k`` asks for: ``1..k`` for an integer,
    SciPy's sequence of ranks as it is; else a ``TypeError`` naming ``k``."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        if k < 1:
            raise ValueError(f"KDTree.query: argument 'k' must be at least 1; got {k!r}.")
        return list(range(1, int(k) + 1))
    ranks = np.asarray(k)
    if (
        ranks.ndim != 1
        or len(ranks) == 0
        or not np.issubdtype(ranks.dtype, np.integer)
        or (ranks < 1).any()
    ):
        raise TypeError(
            "KDTree.query: argument 'k' must be an integer of at least 1 or a sequence of "
            f"ranks (integers from 1, as SciPy's); got {k!r}."
        )
    return [int(r) for r in ranks]
