"""``Pdist``: SciPy's ``pdist``, differentiable in the points."""

import jax
import numpy as np
import scipy.spatial.distance

import jaxbridge as jb

from .._rules import compiled
from ._distances import Distances, aligned


class Pdist(Distances):
    """The distances between every pair of rows of one point set, condensed as SciPy's:
    ``Pdist("euclidean")(X)``, as ``scipy.spatial.distance.pdist(X, metric)``.

    ``X`` is (m, n); the result is (m (m - 1) / 2,), the pairs ``i < j`` row by row
    (``scipy.spatial.distance.squareform`` makes it a matrix). Leading axes are batch
    axes. ``metric`` and ``p``, the derivatives and their kinks: as ``Cdist``'s.
    """

    signature = "(m,n)->(c)"

    def output_specs(self, X):  # noqa: N803
        m = X.shape[-2]
        return jax.ShapeDtypeStruct((*X.shape[:-2], m * (m - 1) // 2), jb.result_dtype(X))

    def check(self, X):  # noqa: N803
        self._refuse_zero_rows("X", X)

    def forward(self, X):  # noqa: N803
        distances = self.scipy_distances(scipy.spatial.distance.pdist, X)
        return distances.astype(jb.result_dtype(X))

    def _pairs(self, x: jax.Array) -> jax.Array:
        rows, cols = np.triu_indices(x.shape[-2], 1)
        return self._distances(x, x)[..., rows, cols]

    @compiled
    def pullback(self, res, g):
        return jax.vjp(self._pairs, res[0])[1](g)

    @compiled
    def pushforward(self, res, tangents):
        primals, tangents = aligned(res[:1], tangents)
        return jax.jvp(self._pairs, primals, tangents)[1]
