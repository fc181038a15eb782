"""``Cdist``: SciPy's ``cdist``, differentiable in both point sets (and in ``w``, ``V``,
``VI``, through the adapters of its parameterized calls)."""

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


@isolating_nan_rows(2)
class Cdist(Distances):
    """The distances between the rows of two point sets, with SciPy on the host:
    ``Cdist("euclidean")(XA, XB)``, as ``scipy.spatial.distance.cdist(XA, XB, metric)``;
    ``Cdist("euclidean")(XA, XB, w=w)`` weighted, ``Cdist("seuclidean")(XA, XB, V=V)``,
    ``Cdist("mahalanobis")(XA, XB, VI=VI)``, as SciPy's keywords.

    ``XA`` is (m, n) and ``XB`` (k, n); the result is (m, k). ``w`` (n,) nonnegative
    weights, for every metric but ``seuclidean`` and ``mahalanobis``; ``V`` (n,) positive
    variances, for ``seuclidean``; ``VI`` (n, n), for ``mahalanobis``, the inverse
    covariance (symmetric positive semi-definite, as SciPy assumes). Without ``V`` or
    ``VI``, SciPy's defaults: the variances, or the inverse covariance, of ``XA``'s and
    ``XB``'s rows together (``ddof = 1``). Leading axes are batch axes.

    Parameters:
        metric: one of SciPy's continuous metrics: ``"euclidean"`` (the default),
            ``"sqeuclidean"``, ``"cityblock"``, ``"chebyshev"``, ``"minkowski"``,
            ``"cosine"``, ``"correlation"``, ``"braycurtis"``, ``"canberra"``,
            ``"seuclidean"``, ``"mahalanobis"``.
        p: the Minkowski order, greater than 0 (below 1, as SciPy's, no metric).

    The values are SciPy's; the derivatives, in both point sets and in ``w``, ``V`` and
    ``VI``, to every order, are the metric's formula's in JAX; SciPy's default ``V`` or
    ``VI`` moves with the points, and so do the derivatives. Where a metric has a kink they
    take the subgradient 0: at zero distance (euclidean, minkowski, seuclidean,
    mahalanobis), at a zero difference in one coordinate (cityblock, chebyshev,
    braycurtis, canberra, and minkowski below p = 1, where the one-sided derivatives are
    infinite and 0 is the symmetric one, which central differences give); chebyshev's
    derivative at a tie between coordinates is JAX's ``max``'s (shared between them), and
    its weights only choose coordinates (those above 0): their derivative is 0. A zero row
    (cosine) or a constant one (correlation), where the distance is undefined, is an error
    naming the argument.
    """

    signature = "(m,n),(k,n)->(m,k)"

    def __call__(  # type: ignore[override]
        self,
        XA: Any,  # noqa: N803 (SciPy's names)
        XB: Any,  # noqa: N803
        *,
        w: Any = None,
        V: Any = None,  # noqa: N803
        VI: Any = None,  # noqa: N803
    ) -> Any:
        name = self.parameter_name(w, V, VI)
        if name is None:
            return super().__call__(XA, XB)
        parameterized = _PARAMETERIZED[name](self.metric, self.p)
        return parameterized(XA, XB, {"w": w, "V": V, "VI": VI}[name])

    def output_specs(self, XA, XB):  # noqa: N803 (SciPy's names)
        return _floating(super().output_specs(XA, XB), XA, XB)

    def check(self, XA, XB):  # noqa: N803
        if not (XA.shape[-2] and XB.shape[-2]):
            return  # no distances: SciPy's empty answer (and under jit nothing asks the host)
        self._refuse_zero_rows("XA", XA)
        self._refuse_zero_rows("XB", XB)
        if self.metric in PARAMETERS:
            self._refuse_default_parameter(np.concatenate([XA, XB], -2), "'XA' and 'XB'")

    def forward(self, XA, XB, *, out: Any = None):  # noqa: N803
        return self.scipy_distances(scipy.spatial.distance.cdist, XA, XB, out=out)

    def _of(self, xa: jax.Array, xb: jax.Array) -> jax.Array:
        batch = jnp.broadcast_shapes(xa.shape[:-2], xb.shape[:-2])
        points = jnp.concatenate(
            [jnp.broadcast_to(x, (*batch, *x.shape[-2:])) for x in (xa, xb)], -2
        )
        return self._distances(xa, xb, None, points)

    @compiled
    def pullback(self, res, g):
        xa, xb, distances = res
        if self.metric in SQUARED:  # (from the distances: no (m, k, n) differences)
            cotangents = pairwise_cotangents(xa, xb, squared_cotangents(self.metric, distances, g))
            return tuple(c if floating(x) else None for c, x in zip(cotangents, (xa, xb)))
        return jax.vjp(self._of, xa, xb)[1](g)

    @compiled
    def pushforward(self, res, tangents):
        primals, tangents = aligned(res[:2], tangents)
        return jax.jvp(self._of, primals, tangents)[1]


@isolating_nan_rows(2)
class _CdistOf(Distances):
    """``Cdist`` with the metric's parameter array (``w``, ``V`` or ``VI``: ``parameter``)
    as a third argument, differentiable in it too: what
    ``Cdist(metric)(XA, XB, w=w)`` calls."""

    parameter: ClassVar[str]  # "w", "V" or "VI"

    def output_specs(self, *args):
        return _floating(super().output_specs(*args), *args)

    def check(self, *args):
        XA, XB, parameter = args  # noqa: N806
        if not (XA.shape[-2] and XB.shape[-2]):
            return  # no distances: as Cdist's
        check_parameter(self.parameter, parameter)
        weights = parameter if self.parameter == "w" else None
        self._refuse_zero_rows("XA", XA, weights)
        self._refuse_zero_rows("XB", XB, weights)

    def forward(self, *args: Any, out: Any = None):
        XA, XB, parameter = args  # noqa: N806
        routine = scipy.spatial.distance.cdist
        return self.scipy_distances(routine, XA, XB, out=out, **{self.parameter: parameter})

    def _of(self, xa, xb, parameter):
        return self._distances(xa, xb, parameter, None)

    @compiled
    def pullback(self, res, g):
        return jax.vjp(self._of, *res[:3])[1](g)

    @compiled
    def pushforward(self, res, tangents):
        primals, tangents = aligned(res[:3], tangents)
        return jax.jvp(self._of, primals, tangents)[1]


class WeightedCdist(_CdistOf):
    """``Cdist(metric)(XA, XB, w=w)``."""

    signature = "(m,n),(k,n),(n)->(m,k)"
    parameter = "w"
    argument_names = ("XA", "XB", "w")
    domains = {"w": "positive"}


class SeuclideanCdist(_CdistOf):
    """``Cdist("seuclidean")(XA, XB, V=V)``."""

    signature = "(m,n),(k,n),(n)->(m,k)"
    parameter = "V"
    argument_names = ("XA", "XB", "V")
    domains = {"V": "positive"}


class MahalanobisCdist(_CdistOf):
    """``Cdist("mahalanobis")(XA, XB, VI=VI)``."""

    signature = "(m,n),(k,n),(n,n)->(m,k)"
    parameter = "VI"
    argument_names = ("XA", "XB", "VI")
    domains = {"VI": "spd"}


def _floating(specs: tuple[jax.ShapeDtypeStruct], *args: Any) -> jax.ShapeDtypeStruct:
    """The signature's distances (checked by the default ``output_specs``) in the points'
    floating dtype, float64 for integer points (as SciPy's)."""
    return jax.ShapeDtypeStruct(specs[0].shape, jb.result_dtype(*args))


_PARAMETERIZED = {"w": WeightedCdist, "V": SeuclideanCdist, "VI": MahalanobisCdist}
