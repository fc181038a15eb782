"""``scipy.integrate`` as adapters: stiff ODEs with adjoint gradients, and quadrature."""

from .._shared._failure import IntegrationFailure as IntegrationFailure
from .ode_solve import OdeSolve as OdeSolve
from .quad import Quad as Quad

__all__ = ["IntegrationFailure", "OdeSolve", "Quad"]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.integrate"
_catalogue_adapters = "`OdeSolve` (BDF, Radau, LSODA, RK45, ...), `Quad` (QUADPACK)"
_catalogue_derivatives = (
    "second order (first: through the steps, by the adjoint, or by forward sensitivities; "
    "second: forward over them)"
)
