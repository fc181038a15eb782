"""Ready adapters: ``from jaxbridge.adapters import Doubling, Linear, LinearSolve, ...``.

The SciPy ones live in subpackages that mirror SciPy's modules (``jaxbridge.adapters.linalg``
for ``scipy.linalg``, ...); the classes are re-exported here.
"""

from .doubling import Doubling as Doubling
from .integrate import OdeSolve as OdeSolve
from .integrate import Quad as Quad
from .linalg import LinearSolve as LinearSolve
from .linalg import LyapunovSolve as LyapunovSolve
from .linalg import SparseSolve as SparseSolve
from .linalg import SylvesterSolve as SylvesterSolve
from .linear import Linear as Linear
from .relu import ReLU as ReLU
from .sigmoid import Sigmoid as Sigmoid

__all__ = [
    "Doubling",
    "Linear",
    "LinearSolve",
    "LyapunovSolve",
    "OdeSolve",
    "Quad",
    "ReLU",
    "Sigmoid",
    "SparseSolve",
    "SylvesterSolve",
]
