"""``scipy.spatial`` as adapters: distance matrices, nearest neighbours, convex hulls and
Delaunay triangulations, differentiable in the points.

``Cdist(metric)(XA, XB)`` and ``Pdist(metric)(X)``, with SciPy's metric names (and ``w``,
``V``, ``VI``); ``KDTreeQuery(k)(data, x)``; ``KDTreeBallCount()(data, x, r)``;
``ConvexHull()(points)``, the hull's volume and area; ``Delaunay()(points)``, the
simplices and their volumes.

SciPy's call forms, with SciPy's arguments: ``distance.cdist`` and ``distance.pdist``
(also as ``cdist`` and ``pdist``), and ``KDTree(data)`` with ``query(x, k, eps, p,
distance_upper_bound)`` and ``query_ball_point(x, r, return_length=True)``."""

from . import distance as distance
from .cdist import Cdist as Cdist
from .convex_hull import ConvexHull as ConvexHull
from .delaunay import Delaunay as Delaunay
from .distance import cdist as cdist
from .distance import pdist as pdist
from .kdtree import KDTree as KDTree
from .kdtree_ball_count import KDTreeBallCount as KDTreeBallCount
from .kdtree_query import KDTreeQuery as KDTreeQuery
from .pdist import Pdist as Pdist

__all__ = [
    "Cdist",
    "ConvexHull",
    "Delaunay",
    "KDTree",
    "KDTreeBallCount",
    "KDTreeQuery",
    "Pdist",
    "cdist",
    "distance",
    "pdist",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.spatial"
_catalogue_adapters = (
    "`Cdist`, `Pdist` (`distance.cdist`, `distance.pdist`), `KDTreeQuery`, "
    "`KDTreeBallCount`, `ConvexHull`, `Delaunay`"
)
_catalogue_derivatives = "every order (subgradient 0 at kinks)"
