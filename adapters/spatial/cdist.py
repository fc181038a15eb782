"""``Cdist``: SciPy's ``cdist``, differentiable in both point sets."""

import jax
import scipy.spatial.distance

import jaxbridge as jb

from .._rules import compiled
from ._distances import Distances, aligned


class Cdist(Distances):
    """The distances between the rows of two point sets, with SciPy on the host:
    ``Cdist("euclidean")(XA, XB)``, as ``scipy.spatial.distance.cdist(XA, XB, metric)``.

    ``XA`` is (m, n) and ``XB`` (k, n); the result is (m, k). Leading axes are batch axes.

    Parameters:
        metric: one of SciPy's continuous metrics: ``"euclidean"`` (the default),
            ``"sqeuclidean"``, ``"cityblock"``, ``"chebyshev"``, ``"minkowski"``,
            ``"cosine"``, ``"correlation"``, ``"braycurtis"``, ``"canberra"``.
        p: the Minkowski order, at least 1.

    The values are SciPy's; the derivatives, in both point sets and to every order, are
    the metric's formula's in JAX. Where a metric has a kink they take the subgradient 0:
    at zero distance (euclidean, minkowski), at a zero difference in one coordinate
    (cityblock, chebyshev, braycurtis, canberra); chebyshev's derivative at a tie between
    coordinates is JAX's ``max``'s (shared between them). A zero row (cosine) or a constant
    one (correlation), where the distance is undefined, is an error naming the argument.
    """

    signature = "(m,n),(k,n)->(m,k)"

    def check(self, XA, XB):  # noqa: N803 (SciPy's names)
        self._refuse_zero_rows("XA", XA)
        self._refuse_zero_rows("XB", XB)

    def forward(self, XA, XB):  # noqa: N803
        distances = self.scipy_distances(scipy.spatial.distance.cdist, XA, XB)
        return distances.astype(jb.result_dtype(XA, XB))

    @compiled
    def pullback(self, res, g):
        xa, xb, _ = res
        return jax.vjp(self._distances, xa, xb)[1](g)

    @compiled
    def pushforward(self, res, tangents):
        primals, tangents = aligned(res[:2], tangents)
        return jax.jvp(self._distances, primals, tangents)[1]
