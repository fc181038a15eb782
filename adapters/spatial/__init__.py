"""``scipy.spatial`` as adapters: distance matrices, nearest neighbours, convex hulls and
Delaunay triangulations, differentiable in the points.

``Cdist(metric)(XA, XB)`` and ``Pdist(metric)(X)``, with SciPy's metric names (and ``w``,
``V``, ``VI``); ``KDTreeQuery(k)(data, x)``, ``KDTree(data).query(x, k)``;
``KDTreeBallCount()(data, x, r)``, ``query_ball_point(x, r, return_length=True)``;
``ConvexHull()(points)``, the hull's volume and area; ``Delaunay()(points)``, the
simplices and their volumes."""

from .cdist import Cdist as Cdist
from .convex_hull import ConvexHull as ConvexHull
from .delaunay import Delaunay as Delaunay
from .kdtree_ball_count import KDTreeBallCount as KDTreeBallCount
from .kdtree_query import KDTreeQuery as KDTreeQuery
from .pdist import Pdist as Pdist

__all__ = ["Cdist", "ConvexHull", "Delaunay", "KDTreeBallCount", "KDTreeQuery", "Pdist"]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.spatial"
_catalogue_adapters = (
    "`Cdist`, `Pdist` (`distance.cdist`, `distance.pdist`), `KDTreeQuery`, "
    "`KDTreeBallCount`, `ConvexHull`, `Delaunay`"
)
_catalogue_derivatives = "every order (subgradient 0 at kinks)"
