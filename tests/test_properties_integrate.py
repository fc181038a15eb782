"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.integrate``: rules
on the host for the first order, and second derivatives (the "hessian" check: forward and
reverse over the gradient) from the gradient's own rules (``_ode_gradient``,
``_quad_gradient``), here by differences of the rhs's and the integrand's ``backward``. With
forward sensitivities, and through the steps of RK45 and of BDF, the two modes' rules are
exact transposes; the adjoint's jvp and backward agree to the solver's tolerance, which its
"transpose" check is given."""

from _integrate_cases import Damped, GaussianCosine
from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters.integrate import OdeSolve, Quad

# The solves hold y to atol = 1e-14 in absolute terms: where y stays near 0 (y0 = 0 and
# theta = 0 keep it at 0) central differences with steps of ~6e-6 are off by ~1e-9 (the
# forward sensitivities are exact there to 2e-15 against the closed form, the differences
# 3e-6 relative off); a 1% wrong rule is off by more than 1e-8 wherever derivatives
# exceed 1e-6 (they are ~0.1 here).
DIFFERENCES = {"grad": 1e-8, "jvp": 1e-8}
CASES = [
    Case(
        OdeSolve(Damped(), method="LSODA", rtol=1e-12, atol=1e-14, sensitivity="forward"),
        skipped=NOT_LINEAR,
        float32=False,
        atol=DIFFERENCES,
        label="forward",
    ),
    Case(
        OdeSolve(Damped(), method="LSODA", rtol=1e-12, atol=1e-14),
        skipped=NOT_LINEAR,
        float32=False,
        # the adjoint and the tangent are integrations of their own, also held to atol:
        # below it (y0 = 2e-15 makes them ~1e-16) they agree to ~atol alone
        rtol={"transpose": 1e-8},
        atol={**DIFFERENCES, "transpose": 1e-12},
        label="adjoint",
    ),
    Case(
        # derivatives through RK45's steps: the two modes exact transposes, the finite
        # differences (which take other steps) agree to the tolerance
        OdeSolve(Damped(), method="RK45", rtol=1e-12, atol=1e-14, sensitivity="steps"),
        skipped=NOT_LINEAR,
        float32=False,
        atol=DIFFERENCES,
        label="steps",
    ),
    Case(
        # and through BDF's (its differences respaced, its corrector by the implicit
        # function theorem)
        OdeSolve(Damped(), method="BDF", rtol=1e-12, atol=1e-14, sensitivity="steps"),
        skipped=NOT_LINEAR,
        float32=False,
        atol=DIFFERENCES,
        label="bdf-steps",
    ),
    Case(Quad(GaussianCosine(), epsabs=1e-12, epsrel=1e-12), skipped=NOT_LINEAR),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES, quick={"Quad"})
