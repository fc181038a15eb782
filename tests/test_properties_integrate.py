"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.integrate``: rules
on the host (first order). The adjoint's jvp and backward agree to the solver's tolerance
only, so the exact "transpose" check runs on forward sensitivities."""

from _integrate_cases import Damped, GaussianCosine
from _properties import HOST_RULES, Case, property_tests

from jaxbridge.adapters.integrate import OdeSolve, Quad

CASES = [
    Case(
        OdeSolve(Damped(), method="LSODA", rtol=1e-12, atol=1e-14, sensitivity="forward"),
        skipped=HOST_RULES,
        float32=False,
    ),
    Case(Quad(GaussianCosine(), epsabs=1e-12, epsrel=1e-12), skipped=HOST_RULES),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES, quick={"Quad"})
