"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.optimize``: no
linear_in; the solvers compute in float64 whatever the input. The implicit solvers' second
derivatives come from differences (``SECOND_ORDER``: their compositions of modes agree to
about 1e-10); the linear programs' rules are on the host (first order)."""

from _optimize_linear_problems import MarginIsotonicRegression, MarginLsqLinear, MarginMilp
from _optimize_problems import (
    JAX_GROWTH,
    JAX_KEPLER,
    JAX_ROSENBROCK,
    KEPLER_EQUATION,
    SECOND_ORDER,
    Distance,
    Growth,
    Kepler,
    KeplerCurvature,
    KeplerRootScalar,
    KeplerSlopes,
    NondegenerateLinprog,
    NondegenerateLinprogMarginals,
    NondegenerateNnls,
    Nonnegative,
    Rosenbrock,
    SimplexDistance,
    SumToOne,
)
from _properties import HOST_RULES, NOT_LINEAR, Case, property_tests

from jaxbridge.adapters.optimize import (
    LeastSquares,
    LinearSumAssignment,
    Minimize,
    MinimizeBounded,
    MinimizeConstrained,
    Root,
)

SECOND = {"hessian": SECOND_ORDER}  # (the implicit solvers' second order: see above)
# root_scalar's root is exact to SciPy's tolerance, not to the bit: differences in the
# bracket see that noise against the exact 0 of its derivative there; the root's
# derivatives in theta are 0.6-3 here, so a rule 1% off misses by far more than this
ROOT_NOISE = {"grad": 1e-10, "jvp": 1e-10}

CASES = [
    Case(Root(Kepler()), sizes={"n": 1, "p": 2}, skipped=NOT_LINEAR, float32=False, rtol=SECOND),
    Case(
        Minimize(Rosenbrock(), method="trust-exact"),
        sizes={"n": 2, "p": 2},
        skipped=NOT_LINEAR,
        float32=False,
        rtol=SECOND,
    ),
    Case(
        MinimizeBounded(Distance()),
        sizes={"n": 2, "p": 2},
        skipped=NOT_LINEAR,
        float32=False,
        rtol=SECOND,
    ),
    Case(
        MinimizeConstrained(SimplexDistance(), eq=SumToOne(), ineq=Nonnegative()),
        sizes={"n": 3, "p": 3},
        skipped=NOT_LINEAR,
        float32=False,
        rtol=SECOND,
    ),
    Case(
        LeastSquares(Growth()),
        sizes={"n": 2, "p": 4},
        skipped=NOT_LINEAR,
        float32=False,
        rtol=SECOND,
    ),
    # SciPy's call forms (minimize, root, least_squares): the same solvers on functions
    # written in JAX, evaluated and differentiated by JAX on the host
    Case(
        Minimize(JAX_ROSENBROCK, method="BFGS"),
        sizes={"n": 2, "p": 2},
        skipped=NOT_LINEAR,
        float32=False,
        rtol=SECOND,
        label="jax",
    ),
    Case(
        Root(JAX_KEPLER),
        sizes={"n": 1, "p": 2},
        skipped=NOT_LINEAR,
        float32=False,
        rtol=SECOND,
        label="jax",
    ),
    Case(
        LeastSquares(JAX_GROWTH),
        sizes={"n": 2, "p": 4},
        skipped=NOT_LINEAR,
        float32=False,
        rtol=SECOND,
        label="jax",
    ),
    # root_scalar's solve: SciPy's brentq (bracketing) and newton (from a start) on f in
    # JAX; the root's rules are the implicit function theorem, its slopes from the host
    *(
        Case(
            KeplerRootScalar(KEPLER_EQUATION, method, **given),
            sizes={"p": 2},
            skipped=NOT_LINEAR,
            float32=False,
            rtol=SECOND,
            atol=ROOT_NOISE,
            label=method,
        )
        for method, given in (("brentq", {"xtol": 1e-15}), ("newton", {}))
    ),
    Case(KeplerSlopes(KEPLER_EQUATION), sizes={"p": 2}, skipped=NOT_LINEAR, float32=False),
    Case(KeplerCurvature(KEPLER_EQUATION), sizes={"p": 2}, skipped=NOT_LINEAR, float32=False),
    Case(NondegenerateLinprog(), sizes={"n": 2, "p": 2, "q": 0}, skipped=HOST_RULES),
    Case(NondegenerateLinprogMarginals(), sizes={"n": 2, "p": 2, "q": 0}, skipped=HOST_RULES),
    Case(NondegenerateNnls(), sizes={"m": 3, "n": 2}, skipped=HOST_RULES),
    Case(MarginLsqLinear(), sizes={"m": 3, "n": 2}, skipped=HOST_RULES),
    # differentiable in c alone, to every order (the rest held fixed, as integers here)
    Case(
        MarginMilp(),
        sizes={"n": 2, "m": 1},
        skipped=frozenset({"linear_transpose"}),
        held=("integrality", "A", "b_l", "b_u", "lower", "upper"),
    ),
    Case(MarginIsotonicRegression(), sizes={"n": 5}, skipped=frozenset({"linear_transpose"})),
    # integers out: no derivative checks apply (tests/test_optimize_assignment.py checks the
    # optimal cost's, written in JAX from the matching, against SciPy's)
    Case(
        LinearSumAssignment(),
        sizes={"n": 3, "m": 4},
        skipped=frozenset({"grad", "jvp", "transpose", "hessian", "linear_transpose"}),
    ),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(CASES, quick={"Root"})
