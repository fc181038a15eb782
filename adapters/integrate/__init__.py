"""``scipy.integrate`` as adapters: stiff ODEs with adjoint gradients, and quadrature.

SciPy's call ``solve_ivp(fun, t_span, y0, t_eval=..., args=...)`` takes ``fun`` written in
JAX (no ``backward`` to write); ``OdeSolve`` takes the right-hand side as an adapter."""

from .._shared._failure import IntegrationFailure as IntegrationFailure
from ._solve_ivp_call import OdeResult as OdeResult
from ._solve_ivp_call import solve_ivp as solve_ivp
from .ode_solve import OdeSolve as OdeSolve
from .quad import Quad as Quad

__all__ = ["IntegrationFailure", "OdeResult", "OdeSolve", "Quad", "solve_ivp"]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.integrate"
_catalogue_adapters = (
    "SciPy's `solve_ivp` with a JAX `fun`; `OdeSolve` (BDF, Radau, LSODA, RK45, ...), `Quad` "
    "(QUADPACK)"
)
_catalogue_derivatives = (
    "second order (first: through the steps, by the adjoint, or by forward sensitivities; "
    "second: forward over them)"
)
