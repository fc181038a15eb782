"""``scipy.sparse.linalg`` as adapters, on sparse matrices of fixed pattern (CSR values are
the differentiable argument): ``Eigsh`` (``eigsh``), and ``SparseSolve`` (``spsolve``, also in
``jaxbridge.adapters.linalg``)."""

from ..linalg.sparse_solve import SparseSolve as SparseSolve
from .eigsh import Eigsh as Eigsh

__all__ = ["Eigsh", "SparseSolve"]
