"""``scipy.linalg`` as adapters: linear solvers whose rules reuse the forward's factors."""

from .linear_solve import LinearSolve as LinearSolve
from .lyapunov_solve import LyapunovSolve as LyapunovSolve
from .sparse_solve import SparseSolve as SparseSolve
from .sylvester_solve import SylvesterSolve as SylvesterSolve

__all__ = ["LinearSolve", "LyapunovSolve", "SparseSolve", "SylvesterSolve"]
