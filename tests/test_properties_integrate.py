"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.integrate``: rules
on the host (first order). With forward sensitivities the two modes' rules are exact
transposes; the adjoint's jvp and backward agree to the solver's tolerance, which its
"transpose" check is given."""

from _integrate_cases import Damped, GaussianCosine
from _properties import HOST_RULES, Case, property_tests

from jaxbridge.adapters.integrate import OdeSolve, Quad

CASES = [
    Case(
        OdeSolve(Damped(), method="LSODA", rtol=1e-12, atol=1e-14, sensitivity="forward"),
        skipped=HOST_RULES,
        float32=False,
        label="forward",
    ),
    Case(
        OdeSolve(Damped(), method="LSODA", rtol=1e-12, atol=1e-14),
        skipped=HOST_RULES,
        float32=False,
        rtol={"transpose": 1e-8},
        label="adjoint",
    ),
    Case(Quad(GaussianCosine(), epsabs=1e-12, epsrel=1e-12), skipped=HOST_RULES),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES, quick={"Quad"})
