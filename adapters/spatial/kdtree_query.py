"""``KDTreeQuery``: SciPy's ``KDTree.query``, the neighbours' distances differentiable."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial

import jaxbridge as jb

from .._shared._rules import compiled


class KDTreeQuery(jb.Adapter):
    """The ``k`` nearest neighbours among ``data``'s rows of each query point, with SciPy's
    k-d tree on the host: ``distances, indices = KDTreeQuery(k=3)(data, x)``, as
    ``scipy.spatial.KDTree(data).query(x, k=3)``.

    ``data`` is (n, d) and ``x`` (q, d); ``distances`` (float) and ``indices`` (int32) are
    (q, k), nearest first. Leading axes are batch axes (one tree per batch element's
    ``data``; ``vmap`` over query sets is one host call).

    Parameters:
        k: how many neighbours, at least 1.
        p: the Minkowski norm, at least 1 (``inf``: the largest coordinate difference).
        distance_upper_bound: neighbours farther than this are missing: distance ``inf``,
            index ``n``, as SciPy's.
        eps: SciPy's approximation: the ``i``-th neighbour returned is within ``1 + eps``
            of the true ``i``-th neighbour's distance.

    The indices are integers (derivative zero). The distances are differentiable in ``x``
    and ``data``, to every order, with the neighbours held fixed, as they are wherever no
    two candidates tie: ``‖x - data[i]‖_p`` in JAX for the chosen ``i``, its derivative
    the subgradient 0 at zero distance (a query point on a data point). A missing
    neighbour's distance has derivative 0.
    """

    k: int = 1
    p: float = 2.0
    distance_upper_bound: float = math.inf
    eps: float = 0.0

    signature = "(n,d),(q,d)->(q,j),(q,j)"

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise ValueError(f"KDTreeQuery: parameter 'k' must be an integer >= 1; got {self.k!r}.")
        for name, value, least in (("p", self.p, 1), ("eps", self.eps, 0)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= least:
                raise ValueError(
                    f"KDTreeQuery: parameter {name!r} must be a number of at least {least}; "
                    f"got {value!r}."
                )
        bound = self.distance_upper_bound
        if not isinstance(bound, (int, float)) or isinstance(bound, bool) or not bound > 0:
            raise ValueError(
                "KDTreeQuery: parameter 'distance_upper_bound' must be a positive number (inf "
                f"for none); got {bound!r}."
            )

    def output_specs(self, data, x):
        shape = (*x.shape[:-1], self.k)
        return (
            jax.ShapeDtypeStruct(shape, jb.result_dtype(data, x)),
            jax.ShapeDtypeStruct(shape, np.int32),
        )

    def check(self, data, x):
        for name, value in (("data", data), ("x", x)):
            if not np.isfinite(value).all():
                raise ValueError(f"argument {name!r} has non-finite entries (NaN or inf).")
        if data.shape[0] == 0:
            raise ValueError("argument 'data' has no points.")
        if data.shape[-1] == 0:  # (SciPy's KDTree fails with an IndexError)
            raise ValueError("arguments 'data' and 'x' have points of no coordinates (d = 0).")

    def forward(self, data, x):
        tree = scipy.spatial.KDTree(data)
        distances, indices = tree.query(
            x, self.k, eps=self.eps, p=self.p, distance_upper_bound=self.distance_upper_bound
        )
        shape = (len(x), self.k)  # (SciPy drops the k axis for k = 1)
        return (
            np.reshape(distances, shape).astype(jb.result_dtype(data, x)),
            np.reshape(indices, shape).astype(np.int32),
        )

    def _distances(self, data, x, indices):
        """``‖x - data[i]‖_p`` for each chosen ``i``; 0 where the neighbour is missing."""
        found = indices < data.shape[-2]
        neighbours = jnp.take_along_axis(
            data[..., None, :, :], jnp.where(found, indices, 0)[..., None], axis=-2
        )
        differences = x[..., :, None, :] - neighbours
        if self.p == math.inf:
            distances = jnp.max(jnp.where(differences != 0, jnp.abs(differences), 0), -1)
        else:
            powers = jnp.sum(jnp.where(differences != 0, jnp.abs(differences), 0) ** self.p, -1)
            positive = powers > 0
            distances = jnp.where(positive, jnp.where(positive, powers, 1) ** (1 / self.p), 0)
        return jnp.where(found, distances, 0)

    @compiled
    def pullback(self, res, g):
        data, x, _, indices = res
        g_distances = g[0]
        return jax.vjp(lambda d, q: self._distances(d, q, indices), data, x)[1](g_distances)

    @compiled
    def pushforward(self, res, tangents):
        data, x, _, indices = res
        t_data, t_x = (
            jnp.zeros_like(v)
            if t is None
            else jnp.broadcast_to(t, jnp.broadcast_shapes(t.shape, v.shape))
            for t, v in zip(tangents, (data, x))
        )
        data, x = jnp.broadcast_to(data, t_data.shape), jnp.broadcast_to(x, t_x.shape)
        _, tangent = jax.jvp(lambda d, q: self._distances(d, q, indices), (data, x), (t_data, t_x))
        return tangent, None
