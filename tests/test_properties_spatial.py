"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.spatial``: rules
in JAX, to every order. Drawn point sets keep their rows apart (no kink at zero distance)
and away from the origin (cosine's distance is undefined at a zero row)."""

import numpy as np
from _properties import Case, property_tests

from jaxbridge.adapters.spatial import (
    Cdist,
    ConvexHull,
    Delaunay,
    KDTreeBallCount,
    KDTreeQuery,
    Pdist,
)
from jaxbridge.adapters.spatial.cdist import MahalanobisCdist, WeightedCdist
from jaxbridge.adapters.spatial.pdist import SeuclideanPdist

NOT_LINEAR = frozenset({"linear_transpose"})


def _rows_at(first: float):
    """Points within 1/2 of ``first + 3 i + j (1.3 i + 0.7 / first)`` in coordinate ``j`` of
    row ``i``: two sets drawn with ``first`` 1 and 2 have rows at least 1/2 apart in every
    coordinate (no kink of cityblock's, chebyshev's or minkowski's), none near the origin
    or parallel to another (cosine's distance is undefined, and at its minimum, there)."""

    def build(raw: np.ndarray) -> np.ndarray:
        i, j = np.indices(raw.shape[-2:])
        return first + 3 * i + j * (1.3 * i + 0.7 / first) + raw / 4

    return build


class ApartCdist(Cdist):
    domains = {"XA": _rows_at(1.0), "XB": _rows_at(2.0)}


class ApartPdist(Pdist):
    domains = {"X": _rows_at(1.0)}


class ApartWeightedCdist(WeightedCdist):
    domains = {"XA": _rows_at(1.0), "XB": _rows_at(2.0), "w": "positive"}


class ApartMahalanobisCdist(MahalanobisCdist):
    domains = {"XA": _rows_at(1.0), "XB": _rows_at(2.0), "VI": "spd"}


class ApartSeuclideanPdist(SeuclideanPdist):
    domains = {"X": _rows_at(1.0), "V": "positive"}


class ApartKDTreeQuery(KDTreeQuery):
    """Query points between data points, nearer one than the others by a margin: no tie
    between candidates, where the chosen neighbour and so the derivative would jump."""

    domains = {"data": _rows_at(1.0), "x": _rows_at(2.5)}


def _triangle_and_inner_point(raw: np.ndarray) -> np.ndarray:
    """Within 0.1 of a triangle ``(0, 0), (4, 0), (0, 4)`` and the point ``(1, 1)`` inside:
    the hull is the triangle and the Delaunay triangulation the fan from the inner point,
    whatever is drawn."""
    return np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [1.0, 1.0]]) + 0.1 * raw


class MarginConvexHull(ConvexHull):
    domains = {"points": _triangle_and_inner_point}


class MarginDelaunay(Delaunay):
    domains = {"points": _triangle_and_inner_point}


CASES = [
    Case(ApartCdist("euclidean"), sizes={"m": 3, "k": 2, "n": 2}, skipped=NOT_LINEAR),
    Case(ApartCdist("cosine"), sizes={"m": 2, "k": 2, "n": 3}, skipped=NOT_LINEAR, label="cosine"),
    Case(ApartPdist("minkowski", p=3.0), sizes={"m": 3, "n": 2}, skipped=NOT_LINEAR),
    Case(ApartWeightedCdist("braycurtis"), sizes={"m": 2, "k": 2, "n": 3}, skipped=NOT_LINEAR),
    Case(ApartMahalanobisCdist("mahalanobis"), sizes={"m": 2, "k": 2, "n": 2}, skipped=NOT_LINEAR),
    Case(ApartSeuclideanPdist("seuclidean"), sizes={"m": 3, "n": 2}, skipped=NOT_LINEAR),
    # SciPy's default V, from the points (their variances): derivatives through it
    Case(ApartCdist("seuclidean"), sizes={"m": 2, "k": 2, "n": 2}, skipped=NOT_LINEAR, label="V"),
    Case(MarginConvexHull(), sizes={"n": 4, "d": 2}, skipped=NOT_LINEAR),
    Case(MarginDelaunay(), sizes={"n": 4, "d": 2}, skipped=NOT_LINEAR),
    # integers out: no derivative checks apply
    Case(
        KDTreeBallCount(),
        sizes={"n": 5, "d": 2, "q": 2},
        skipped=frozenset({"grad", "jvp", "transpose", "hessian", "linear_transpose"}),
    ),
    Case(ApartKDTreeQuery(k=2), sizes={"n": 5, "d": 2, "q": 2}, skipped=NOT_LINEAR),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"ApartCdist"}
)
