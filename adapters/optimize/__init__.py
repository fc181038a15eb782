"""``scipy.optimize`` as adapters: solvers with implicit gradients.

The residual, objective or constraints are jaxbridge Adapters whose host ``forward`` and
``backward`` SciPy calls directly; the solution is checked and refined, and differentiated
by the implicit function theorem at the returned point.

SciPy's call forms, with SciPy's arguments: ``minimize``, ``root``, ``least_squares`` and
``curve_fit`` with the function written in JAX (no ``backward`` to write; results as
``OptimizeResult`` pytrees), ``linprog`` (every form of ``bounds``),
``nnls``, ``lsq_linear`` (``bounds=(lb, ub)``), ``linear_sum_assignment``,
``isotonic_regression`` and ``milp`` (``Bounds``, ``LinearConstraint`` objects or their
tuples).

A batch (``vmap``) is solved element by element in one host call. The loop stays on one
thread: SciPy's optimizers call back into Python at every iteration, holding the GIL, so
threads would not overlap them.
"""

from .._shared._result import OptimizeResult as OptimizeResult
from ._implicit import OptimizeError as OptimizeError
from ._minimize_call import minimize as minimize
from ._residual_calls import curve_fit as curve_fit
from ._residual_calls import least_squares as least_squares
from ._residual_calls import root as root
from ._root_scalar_call import root_scalar as root_scalar
from .isotonic_regression import IsotonicRegression as IsotonicRegression
from .isotonic_regression import isotonic_regression as isotonic_regression
from .least_squares import LeastSquares as LeastSquares
from .linear_sum_assignment import LinearSumAssignment as LinearSumAssignment
from .linear_sum_assignment import linear_sum_assignment as linear_sum_assignment
from .linprog import Linprog as Linprog
from .linprog import linprog as linprog
from .lsq_linear import LsqLinear as LsqLinear
from .lsq_linear import lsq_linear as lsq_linear
from .milp import Milp as Milp
from .milp import milp as milp
from .minimize import Minimize as Minimize
from .minimize_bounded import MinimizeBounded as MinimizeBounded
from .minimize_constrained import MinimizeConstrained as MinimizeConstrained
from .nnls import Nnls as Nnls
from .nnls import nnls as nnls
from .root import Root as Root

__all__ = [
    "IsotonicRegression",
    "LeastSquares",
    "LinearSumAssignment",
    "Linprog",
    "LsqLinear",
    "Milp",
    "Minimize",
    "MinimizeBounded",
    "MinimizeConstrained",
    "Nnls",
    "OptimizeError",
    "OptimizeResult",
    "Root",
    "curve_fit",
    "isotonic_regression",
    "linear_sum_assignment",
    "linprog",
    "least_squares",
    "lsq_linear",
    "milp",
    "minimize",
    "nnls",
    "root",
    "root_scalar",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.optimize"
_catalogue_adapters = (
    "SciPy's `minimize`, `root`, `root_scalar`, `least_squares`, `curve_fit` with a JAX "
    "`fun`; "
    "`Minimize`, `MinimizeBounded`, `MinimizeConstrained` (SLSQP, trust-constr), `Root`, "
    "`LeastSquares`, `Linprog`, `Milp`, `Nnls`, `LsqLinear`, `LinearSumAssignment`, "
    "`IsotonicRegression`"
)
_catalogue_derivatives = (
    "second order through the nonlinear solvers (implicit function theorem, KKT); first "
    "for `Linprog`, `Nnls`, `LsqLinear`; every order for `Milp`'s value in `c`, "
    "`IsotonicRegression` and the assignment's cost"
)
