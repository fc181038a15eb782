"""``scipy.sparse.linalg`` as adapters, on sparse matrices of fixed pattern (CSR values are
the differentiable argument): ``Eigsh`` (``eigsh``), ``OperatorEigsh`` (``eigsh`` of a matrix-free
``LinearOperator``), ``Svds`` (``svds``),
``ExpmMultiply`` (``expm_multiply``), and ``SparseSolve`` (``spsolve``, also in
``jaxbridge.adapters.linalg``)."""

from ..linalg.sparse_solve import SparseSolve as SparseSolve
from .eigsh import Eigsh as Eigsh
from .expm_multiply import ExpmMultiply as ExpmMultiply
from .operator_eigsh import OperatorEigsh as OperatorEigsh
from .svds import Svds as Svds

__all__ = ["Eigsh", "ExpmMultiply", "OperatorEigsh", "SparseSolve", "Svds"]
