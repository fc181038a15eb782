"""Ready adapters: ``from jaxbridge.adapters import Doubling, Linear, LinearSolve, ...``.

The SciPy ones live in subpackages that mirror SciPy's modules (``jaxbridge.adapters.linalg``
for ``scipy.linalg``, ...); the classes are re-exported here, with ``Failure``, the base of
the errors an adapter with ``on_failure`` raises where it has no trustworthy result
(``SolveFailure``, ``IntegrationFailure``, ``OptimizeError``, ``InterpolationFailure``).
"""

from ._shared._failure import Failure as Failure
from ._shared._failure import IntegrationFailure as IntegrationFailure
from ._shared._failure import InterpolationFailure as InterpolationFailure
from ._shared._failure import OptimizeError as OptimizeError
from ._shared._failure import SolveFailure as SolveFailure
from .doubling import Doubling as Doubling
from .integrate import OdeSolve as OdeSolve
from .integrate import Quad as Quad
from .linalg import LinearSolve as LinearSolve
from .linalg import LyapunovSolve as LyapunovSolve
from .linalg import SparseSolve as SparseSolve
from .linalg import SylvesterSolve as SylvesterSolve
from .linear import Linear as Linear
from .optimize import LeastSquares as LeastSquares
from .optimize import Minimize as Minimize
from .optimize import MinimizeBounded as MinimizeBounded
from .optimize import MinimizeConstrained as MinimizeConstrained
from .optimize import Root as Root
from .relu import ReLU as ReLU
from .sigmoid import Sigmoid as Sigmoid
from .sparse import Eigsh as Eigsh
from .sparse import ExpmMultiply as ExpmMultiply
from .sparse import OperatorEigsh as OperatorEigsh
from .sparse import Svds as Svds

__all__ = [
    "Doubling",
    "Eigsh",
    "ExpmMultiply",
    "Failure",
    "IntegrationFailure",
    "InterpolationFailure",
    "LeastSquares",
    "Linear",
    "LinearSolve",
    "LyapunovSolve",
    "Minimize",
    "MinimizeBounded",
    "MinimizeConstrained",
    "OdeSolve",
    "OperatorEigsh",
    "OptimizeError",
    "Quad",
    "ReLU",
    "Root",
    "Sigmoid",
    "SolveFailure",
    "SparseSolve",
    "Svds",
    "SylvesterSolve",
]
