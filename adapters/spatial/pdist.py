"""``Pdist``: SciPy's ``pdist``, differentiable in the points (and in ``w``, ``V``, ``VI``,
through the adapters of its parameterized calls)."""

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import scipy.spatial.distance

import jaxbridge as jb

from .._shared._rules import compiled
from ._distances import (
    PARAMETERS,
    Distances,
    aligned,
    check_parameter,
    floating,
    isolating_nan_rows,
)
from ._metrics import SQUARED, pairwise_cotangents, squared_cotangents


def _pairs(distances: jax.Array) -> jax.Array:
    """The condensed pairs ``i < j`` of (..., m, m) distances."""
    rows, cols = np.triu_indices(distances.shape[-1], 1)
    return distances[..., rows, cols]


def _square(condensed: jax.Array, m: int) -> jax.Array:
    """(..., m, m), symmetric, zeros on the diagonal, from the condensed pairs (..., c): a
    gather (XLA's scatter is the slower)."""
    index = np.full((m, m), m * (m - 1) // 2)  # (the zero appended)
    rows, cols = np.triu_indices(m, 1)
    index[rows, cols] = index[cols, rows] = np.arange(rows.size)
    zero = jnp.zeros((*condensed.shape[:-1], 1), condensed.dtype)  # (one row: no pairs)
    padded = jnp.concatenate([condensed, zero], -1)
    return padded[..., index]


@isolating_nan_rows(1)
class Pdist(Distances):
    """The distances between every pair of rows of one point set, condensed as SciPy's:
    ``Pdist("euclidean")(X)``, as ``scipy.spatial.distance.pdist(X, metric)``;
    ``Pdist(metric)(X, w=w)``, ``Pdist("seuclidean")(X, V=V)``,
    ``Pdist("mahalanobis")(X, VI=VI)`` as SciPy's keywords.

    ``X`` is (m, n); the result is (m (m - 1) / 2,), the pairs ``i < j`` row by row
    (``scipy.spatial.distance.squareform`` makes it a matrix). Leading axes are batch
    axes. ``metric``, ``p``, ``w``, ``V``, ``VI`` (without them, SciPy's defaults from
    ``X``'s rows), the derivatives and their kinks: as ``Cdist``'s.
    """

    signature = "(m,n)->(c)"

    def __call__(  # type: ignore[override]
        self,
        X: Any,  # noqa: N803 (SciPy's names)
        *,
        w: Any = None,
        V: Any = None,  # noqa: N803
        VI: Any = None,  # noqa: N803
    ) -> Any:
        name = self.parameter_name(w, V, VI)
        if name is None:
            return super().__call__(X)
        parameterized = _PARAMETERIZED[name](self.metric, self.p)
        return parameterized(X, {"w": w, "V": V, "VI": VI}[name])

    def output_specs(self, X):  # noqa: N803
        m = X.shape[-2]
        return jax.ShapeDtypeStruct((*X.shape[:-2], m * (m - 1) // 2), jb.result_dtype(X))

    def check(self, X):  # noqa: N803
        if X.shape[-2] < 2:
            return  # no pairs: SciPy's empty answer (and under jit nothing asks the host)
        self._refuse_zero_rows("X", X)
        if self.metric in PARAMETERS:
            self._refuse_default_parameter(X, "'X'")

    def forward(self, X, *, out: Any = None):  # noqa: N803
        if X.shape[-2] < 2:  # no pairs (SciPy's seuclidean warns of its V's degrees of freedom)
            return np.zeros((0,), jb.result_dtype(X))
        return self.scipy_distances(scipy.spatial.distance.pdist, X, out=out)

    def _of(self, x: jax.Array) -> jax.Array:
        return _pairs(self._distances(x, x, None, x))

    @compiled
    def pullback(self, res, g):
        x, distances = res
        if self.metric in SQUARED and floating(x):  # (no (m, m, n) differences)
            c = _square(squared_cotangents(self.metric, distances, g), x.shape[-2])
            return (pairwise_cotangents(x, x, c)[0],)
        return jax.vjp(self._of, res[0])[1](g)

    @compiled
    def pushforward(self, res, tangents):
        primals, tangents = aligned(res[:1], tangents)
        return jax.jvp(self._of, primals, tangents)[1]


@isolating_nan_rows(1)
class _PdistOf(Distances):
    """``Pdist`` with the metric's parameter array (``w``, ``V`` or ``VI``: ``parameter``)
    as a second argument, differentiable in it too: what ``Pdist(metric)(X, w=w)``
    calls."""

    parameter: ClassVar[str]  # "w", "V" or "VI"

    def output_specs(self, X, parameter):  # noqa: N803
        m = X.shape[-2]
        shape = (*X.shape[:-2], m * (m - 1) // 2)
        return jax.ShapeDtypeStruct(shape, jb.result_dtype(X, parameter))

    def check(self, *args):
        X, parameter = args  # noqa: N806
        if X.shape[-2] < 2:
            return  # no pairs: as Pdist's
        check_parameter(self.parameter, parameter)
        self._refuse_zero_rows("X", X, parameter if self.parameter == "w" else None)

    def forward(self, *args: Any, out: Any = None):
        X, parameter = args  # noqa: N806
        routine = scipy.spatial.distance.pdist
        return self.scipy_distances(routine, X, out=out, **{self.parameter: parameter})

    def _of(self, x, parameter):
        return _pairs(self._distances(x, x, parameter, None))

    @compiled
    def pullback(self, res, g):
        return jax.vjp(self._of, *res[:2])[1](g)

    @compiled
    def pushforward(self, res, tangents):
        primals, tangents = aligned(res[:2], tangents)
        return jax.jvp(self._of, primals, tangents)[1]


class WeightedPdist(_PdistOf):
    """``Pdist(metric)(X, w=w)``."""

    signature = "(m,n),(n)->(c)"
    parameter = "w"
    argument_names = ("X", "w")
    domains = {"w": "positive"}


class SeuclideanPdist(_PdistOf):
    """``Pdist("seuclidean")(X, V=V)``."""

    signature = "(m,n),(n)->(c)"
    parameter = "V"
    argument_names = ("X", "V")
    domains = {"V": "positive"}


class MahalanobisPdist(_PdistOf):
    """``Pdist("mahalanobis")(X, VI=VI)``."""

    signature = "(m,n),(n,n)->(c)"
    parameter = "VI"
    argument_names = ("X", "VI")
    domains = {"VI": "spd"}


_PARAMETERIZED = {"w": WeightedPdist, "V": SeuclideanPdist, "VI": MahalanobisPdist}
