"""``scipy.integrate`` as adapters: stiff ODEs with adjoint gradients, and quadrature.

SciPy's calls ``solve_ivp(fun, t_span, y0, t_eval=..., args=...)`` and ``quad(func, a, b,
args)`` take the function written in JAX (no ``backward`` to write); ``OdeSolve`` and
``Quad`` take it as an adapter."""

from .._shared._failure import IntegrationFailure as IntegrationFailure
from ._quad_call import quad as quad
from ._solve_ivp_call import OdeResult as OdeResult
from ._solve_ivp_call import solve_ivp as solve_ivp
from .ode_solve import OdeSolve as OdeSolve
from .quad import Quad as Quad

__all__ = ["IntegrationFailure", "OdeResult", "OdeSolve", "Quad", "quad", "solve_ivp"]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.integrate"
_catalogue_adapters = (
    "SciPy's `solve_ivp` and `quad` with a JAX function; `OdeSolve` (BDF, Radau, LSODA, "
    "RK45, ...), `Quad` (QUADPACK)"
)
_catalogue_derivatives = (
    "second order (first: through the steps, by the adjoint, or by forward sensitivities; "
    "second: forward over them)"
)
