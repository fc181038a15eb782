"""Ready adapters: ``from jaxbridge.adapters import Doubling, Linear, ...``."""

from .doubling import Doubling as Doubling
from .linear import Linear as Linear
from .linear_solve import LinearSolve as LinearSolve
from .lyapunov_solve import LyapunovSolve as LyapunovSolve
from .relu import ReLU as ReLU
from .sigmoid import Sigmoid as Sigmoid
from .sparse_solve import SparseSolve as SparseSolve
from .sylvester_solve import SylvesterSolve as SylvesterSolve

__all__ = [
    "Doubling",
    "Linear",
    "LinearSolve",
    "LyapunovSolve",
    "ReLU",
    "Sigmoid",
    "SparseSolve",
    "SylvesterSolve",
]
