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

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.sparse.linalg"
_catalogue_adapters = "`Eigsh`, `OperatorEigsh` (matrix-free), `Svds`, `ExpmMultiply`"
_catalogue_derivatives = "every order; `ExpmMultiply` in `data` first order in reverse mode"
