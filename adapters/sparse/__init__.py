"""``scipy.sparse.linalg`` as adapters. A sparse matrix has a fixed CSR pattern, given when
the adapter is made, and its values ``data``, the differentiable argument:

- ``Eigsh``: ``eigsh``, some eigenpairs of a symmetric matrix;
- ``OperatorEigsh``: ``eigsh`` of a matrix-free operator (a bridged ``matvec``);
- ``Svds``: ``svds``, the largest singular triplets;
- ``ExpmMultiply``: ``expm_multiply``, ``expm(t a) @ b``;
- ``SparseSolve``: ``splu`` solves (also in ``jaxbridge.adapters.linalg``).
"""

from ..linalg.sparse_solve import SparseSolve as SparseSolve
from .eigsh import Eigsh as Eigsh
from .expm_multiply import ExpmMultiply as ExpmMultiply
from .operator_eigsh import OperatorEigsh as OperatorEigsh
from .svds import Svds as Svds

__all__ = ["Eigsh", "ExpmMultiply", "OperatorEigsh", "SparseSolve", "Svds"]
