"""``scipy.integrate`` as adapters: stiff ODEs with adjoint gradients, and quadrature."""

from .._failure import IntegrationFailure as IntegrationFailure
from .ode_solve import OdeSolve as OdeSolve
from .quad import Quad as Quad

__all__ = ["IntegrationFailure", "OdeSolve", "Quad"]
