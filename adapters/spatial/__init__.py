"""``scipy.spatial`` as adapters: distance matrices and nearest neighbours, differentiable
in the points.

``Cdist(metric)(XA, XB)`` and ``Pdist(metric)(X)``, with SciPy's metric names;
``KDTreeQuery(k)(data, x)``, ``KDTree(data).query(x, k)``."""

from .cdist import Cdist as Cdist
from .kdtree_query import KDTreeQuery as KDTreeQuery
from .pdist import Pdist as Pdist

__all__ = ["Cdist", "KDTreeQuery", "Pdist"]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.spatial"
_catalogue_adapters = "`Cdist`, `Pdist` (`distance.cdist`, `distance.pdist`), `KDTreeQuery`"
_catalogue_derivatives = "every order (subgradient 0 at kinks)"
