"""``scipy.linalg`` as adapters: linear solvers whose rules reuse the forward's factors, and
matrix functions and matrix equations whose rules are other bridged calls.

Ready to call, with SciPy's names and argument order: ``solve(a, b, assume_a=...)``,
``solve_sylvester(a, b, q)``, ``solve_continuous_lyapunov(a, q)``, ``sqrtm(a)``,
``logm(a)``, ``solve_continuous_are(a, b, q, r)``, ``solve_discrete_are(a, b, q, r)``,
``solve_discrete_lyapunov(a, q)``, ``eig(a)`` and ``eigvals(a)``; the classes behind them
take parameters (``MatrixSqrt(on_failure="nan")``).
"""

from .._shared._failure import SolveFailure as SolveFailure
from .continuous_riccati_solve import ContinuousRiccatiSolve as ContinuousRiccatiSolve
from .continuous_riccati_solve import solve_continuous_are as solve_continuous_are
from .discrete_lyapunov_solve import DiscreteLyapunovSolve as DiscreteLyapunovSolve
from .discrete_lyapunov_solve import solve_discrete_lyapunov as solve_discrete_lyapunov
from .discrete_riccati_solve import DiscreteRiccatiSolve as DiscreteRiccatiSolve
from .discrete_riccati_solve import solve_discrete_are as solve_discrete_are
from .eig import Eig as Eig
from .eig import eig as eig
from .eig import eigvals as eigvals
from .linear_solve import LinearSolve as LinearSolve
from .linear_solve import solve as solve
from .lyapunov_solve import LyapunovSolve as LyapunovSolve
from .lyapunov_solve import solve_continuous_lyapunov as solve_continuous_lyapunov
from .matrix_log import MatrixLog as MatrixLog
from .matrix_log import logm as logm
from .matrix_sqrt import MatrixSqrt as MatrixSqrt
from .matrix_sqrt import sqrtm as sqrtm
from .sparse_solve import SparseSolve as SparseSolve
from .sylvester_solve import SylvesterSolve as SylvesterSolve
from .sylvester_solve import solve_sylvester as solve_sylvester

__all__ = [
    "ContinuousRiccatiSolve",
    "DiscreteLyapunovSolve",
    "DiscreteRiccatiSolve",
    "Eig",
    "LinearSolve",
    "LyapunovSolve",
    "MatrixLog",
    "MatrixSqrt",
    "SolveFailure",
    "SparseSolve",
    "SylvesterSolve",
    "eig",
    "eigvals",
    "logm",
    "solve",
    "solve_continuous_are",
    "solve_discrete_are",
    "solve_continuous_lyapunov",
    "solve_discrete_lyapunov",
    "solve_sylvester",
    "sqrtm",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.linalg"
_catalogue_adapters = (
    "`LinearSolve`, `SparseSolve`, `SylvesterSolve`, `LyapunovSolve`, `DiscreteLyapunovSolve`, "
    "`ContinuousRiccatiSolve`, `DiscreteRiccatiSolve`, `sqrtm`, `logm`, `eig`, `eigvals`"
)
_catalogue_derivatives = "every order; first for `eig` (on every backend, the TPU included)"
