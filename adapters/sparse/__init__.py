"""``scipy.sparse.linalg`` as adapters. A sparse matrix has a fixed CSR pattern, given when
the adapter is made, and its values ``data``, the differentiable argument:

- ``Eigsh``: ``eigsh``, some eigenpairs of a symmetric matrix;
- ``OperatorEigsh``: ``eigsh`` of a matrix-free operator (a bridged ``matvec``);
- ``Svds``: ``svds``, the largest singular triplets;
- ``ExpmMultiply``: ``expm_multiply``, ``expm(t a) @ b``;
- ``SparseSolve``: ``splu`` solves (also in ``jaxbridge.adapters.linalg``);

and SciPy's own calls, ``eigsh``, ``svds``, ``expm_multiply`` and ``spsolve``, on a
``scipy.sparse`` matrix, a ``jax.experimental.sparse.BCOO`` one (its ``data``
differentiable) or a dense array.
"""

from ..linalg.sparse_solve import SparseSolve as SparseSolve
from ._scipy_calls import eigsh as eigsh
from ._scipy_calls import expm_multiply as expm_multiply
from ._scipy_calls import spsolve as spsolve
from ._scipy_calls import svds as svds
from .eigsh import Eigsh as Eigsh
from .expm_multiply import ExpmMultiply as ExpmMultiply
from .operator_eigsh import OperatorEigsh as OperatorEigsh
from .svds import Svds as Svds

__all__ = [
    "Eigsh",
    "ExpmMultiply",
    "OperatorEigsh",
    "SparseSolve",
    "Svds",
    "eigsh",
    "expm_multiply",
    "spsolve",
    "svds",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.sparse.linalg"
_catalogue_adapters = (
    "SciPy's `eigsh`, `svds`, `expm_multiply`, `spsolve` on a `scipy.sparse` or BCOO matrix; "
    "`Eigsh`, `OperatorEigsh` (matrix-free), `Svds`, `ExpmMultiply`"
)
_catalogue_derivatives = "every order; `ExpmMultiply` in `data` first order in reverse mode"
