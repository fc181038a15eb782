"""``check_adapter`` on every ready adapter, on inputs that Hypothesis draws from its domains:
all its checks, the forward-mode ones (jvp, transpose, hessian, linear_transpose) included.

The Hypothesis profile (``quick`` by default, ``thorough`` on demand) is set in ``conftest.py``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field

import jax
import numpy as np
import pytest
import scipy.sparse
from _integrate_cases import Damped, GaussianCosine
from _optimize_problems import (
    Distance,
    Growth,
    Kepler,
    Nonnegative,
    Rosenbrock,
    SimplexDistance,
    SumToOne,
)
from hypothesis import find, given
from hypothesis import strategies as st

import jaxbridge as jb
import jaxbridge.adapters
from jaxbridge._plan import arg_names
from jaxbridge.adapters import (
    Doubling,
    LeastSquares,
    Linear,
    LinearSolve,
    LyapunovSolve,
    Minimize,
    MinimizeBounded,
    MinimizeConstrained,
    OdeSolve,
    Quad,
    ReLU,
    Root,
    Sigmoid,
    SparseSolve,
    SylvesterSolve,
    special,
    stats,
)
from jaxbridge.adapters.interpolate import (
    Akima1DInterpolator,
    CubicSpline,
    PchipInterpolator,
    make_interp_spline,
)
from jaxbridge.adapters.linalg import (
    ContinuousRiccatiSolve,
    DiscreteLyapunovSolve,
    DiscreteRiccatiSolve,
    MatrixLog,
    MatrixSqrt,
)
from jaxbridge.adapters.signal import LinearFilter, SosFilter
from jaxbridge.testing import check_adapter, inputs
from jaxbridge.testing._subject import CHECKS, Subject

# --- Domains that the adapters' own files do not declare (yet). Each subclass here adds
# only `domains`; once the adapter's file declares them, list the adapter itself instead.


class _SparseSolve(SparseSolve):
    @property
    def domains(self):
        return {"data": self.diagonally_dominant}

    def diagonally_dominant(self, raw: np.ndarray) -> np.ndarray:
        """Values on the pattern (which must hold the diagonal) that make every row strictly
        diagonally dominant, hence the matrix nonsingular: off the diagonal |v| <= 1/2 per row
        in all, on it v in [1/2, 3/2]."""
        counts = np.diff(self.indptr)
        rows = np.repeat(np.arange(len(counts)), counts)
        on_diagonal = rows == np.asarray(self.indices)
        return np.where(on_diagonal, 1.0 + raw / 2, raw / (2 * counts.max()))


# A 5x5 pattern with fill-in under LU: a tridiagonal band and a corner entry each way.
_PATTERN = scipy.sparse.csr_array(
    np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1) + np.eye(5, k=4) + np.eye(5, k=-4)
)


@dataclass(frozen=True)
class Case:
    adapter: jb.Adapter
    sizes: Mapping[str, int] = field(default_factory=dict)  # dimensions a parameter fixes
    # the checks that do not apply: "hessian" without rules in JAX, "linear_transpose"
    # without linear_in
    skipped: frozenset[str] = frozenset()
    # arguments with no derivative (a quantile's shapes): drawn from their domain, then
    # rounded up to integers, which the checks hold fixed
    held: tuple[str, ...] = ()
    # False for the costliest cases (host solvers that compute in float64 whatever the
    # input, and the Riccati solvers' second-order programs): their own tests check float32
    # inputs; the suite runs them in float64 alone
    float32: bool = True

    def hold(self, args):
        names = arg_names(type(self.adapter))
        return tuple(
            np.ceil(a).astype(np.int32) if name in self.held else a for name, a in zip(names, args)
        )


_NOT_LINEAR = frozenset({"linear_transpose"})
_HOST_RULES = frozenset({"hessian", "linear_transpose"})  # host rules, no linear_in

# The one place to list the adapters to check: every class that `jaxbridge.adapters`
# exports needs an instance here (`test_every_exported_adapter_is_listed` says which not).
CASES = [
    # host rules, but linear in its argument: every rule is forward itself, every order works
    Case(Doubling()),
    Case(Linear(), skipped=_NOT_LINEAR),
    Case(ReLU(), skipped=_NOT_LINEAR),
    Case(Sigmoid(), skipped=_NOT_LINEAR),
    Case(LinearSolve()),
    Case(LinearSolve(assume_a="pos")),
    Case(SylvesterSolve()),
    Case(LyapunovSolve()),
    Case(
        _SparseSolve(_PATTERN.indices, _PATTERN.indptr, _PATTERN.shape),
        sizes={"k": _PATTERN.nnz, "n": 5},
    ),
    # scipy.linalg's matrix functions and equations, scipy.signal's filters: rules of
    # bridged calls, every order
    Case(MatrixSqrt(), skipped=_NOT_LINEAR),
    Case(MatrixLog(), skipped=_NOT_LINEAR),
    Case(DiscreteLyapunovSolve()),
    Case(ContinuousRiccatiSolve(), skipped=_NOT_LINEAR, float32=False),
    Case(DiscreteRiccatiSolve(), skipped=_NOT_LINEAR, float32=False),
    Case(LinearFilter()),
    Case(SosFilter()),
    # scipy.optimize: rules on the host (first order), no linear_in
    Case(Root(Kepler()), sizes={"n": 1, "p": 2}, skipped=_HOST_RULES, float32=False),
    Case(
        Minimize(Rosenbrock(), method="trust-exact"),
        sizes={"n": 2, "p": 2},
        skipped=_HOST_RULES,
        float32=False,
    ),
    Case(MinimizeBounded(Distance()), sizes={"n": 2, "p": 2}, skipped=_HOST_RULES, float32=False),
    Case(
        MinimizeConstrained(SimplexDistance(), eq=SumToOne(), ineq=Nonnegative()),
        sizes={"n": 3, "p": 3},
        skipped=_HOST_RULES,
        float32=False,
    ),
    Case(LeastSquares(Growth()), sizes={"n": 2, "p": 4}, skipped=_HOST_RULES, float32=False),
    # scipy.integrate: the adjoint's jvp and backward agree to the solver's tolerance only,
    # so the exact "transpose" check runs on forward sensitivities
    Case(
        OdeSolve(Damped(), method="LSODA", rtol=1e-10, atol=1e-12, sensitivity="forward"),
        skipped=_HOST_RULES,
        float32=False,
    ),
    Case(Quad(GaussianCosine(), epsabs=1e-12, epsrel=1e-12), skipped=_HOST_RULES),
    # scipy.special: the orders' domain is "integer", so they are held fixed
    Case(special.jv, skipped=_NOT_LINEAR),
    Case(special.yv, skipped=_NOT_LINEAR),
    Case(special.iv, skipped=_NOT_LINEAR),
    Case(special.ive, skipped=_NOT_LINEAR),
    Case(special.kv, skipped=_NOT_LINEAR),
    Case(special.kve, skipped=_NOT_LINEAR),
    Case(special.KvDerivative(1, 1, scaled=True), skipped=_NOT_LINEAR),
    Case(special.gammaincinv, skipped=_NOT_LINEAR, held=("a",)),
    Case(special.betaincinv, skipped=_NOT_LINEAR, held=("a", "b")),
    Case(special.lambertw, skipped=_NOT_LINEAR),
    # scipy.interpolate, 1-D: six points on sorted sites held fixed (as integers), queries
    # away from the knots; rules of bridged calls, every order
    Case(make_interp_spline, sizes={"n": 6}, held=("x",)),
    Case(CubicSpline(), sizes={"n": 6}, held=("x",)),
    Case(PchipInterpolator(), sizes={"n": 6}, held=("x",), skipped=_NOT_LINEAR),
    Case(Akima1DInterpolator(), sizes={"n": 6}, held=("x",), skipped=_NOT_LINEAR),
    # the incomplete gamma and beta functions and scipy.stats' distributions: every order in
    # x, first order in the shapes (their second derivative is NaN), so the shapes are held
    # fixed here; tests/test_stats.py and test_special_incomplete.py check them free
    Case(special.gammainc, skipped=_NOT_LINEAR, held=("a",)),
    Case(special.gammaincc, skipped=_NOT_LINEAR, held=("a",)),
    Case(special.betainc, skipped=_NOT_LINEAR, held=("a", "b")),
    *(
        Case(getattr(stats, name).adapters[kind], skipped=_NOT_LINEAR, held=("a", "b")[:shapes])
        for name, kind, shapes in [
            ("t", "ppf", 1),
            ("gamma", "isf", 1),
            ("chi2", "logcdf", 1),
            ("invgamma", "sf", 1),
            ("beta", "logsf", 2),
            ("f", "cdf", 2),
        ]
    ),
]


def _id(case: Case) -> str:
    name = type(case.adapter).__name__.lstrip("_")
    if hasattr(case.adapter, "routine"):
        return case.adapter.routine
    return f"{name}-{case.adapter.assume_a}" if isinstance(case.adapter, LinearSolve) else name


# The quick subset (`pytest -m "not slow"`, with the smoke Hypothesis profile) checks one
# adapter of each family in float64; each case costs seconds of compiling per example, so
# the rest, and float32, are marked slow (plain `pytest` runs them all).
_QUICK = {"Doubling", "LinearSolve-gen", "SosFilter", "Root", "Quad", "Jv"}


def _exported_adapters():
    """``(where, class)`` for every adapter that ``jaxbridge.adapters`` or one of its
    subpackages (``linalg``, ``special``, ...) exports, as a class or as a ready instance."""
    packages = [jaxbridge.adapters] + [
        importlib.import_module(f"jaxbridge.adapters.{module.name}")
        for module in pkgutil.iter_modules(jaxbridge.adapters.__path__)
        if module.ispkg
    ]
    for package in packages:
        for name in getattr(package, "__all__", ()):
            value = getattr(package, name)
            cls = value if isinstance(value, type) else type(value)
            if issubclass(cls, jb.Adapter):
                yield f"{package.__name__}.{name}", cls


def test_every_exported_adapter_is_listed():
    missing = [
        where
        for where, cls in _exported_adapters()
        if not any(isinstance(case.adapter, cls) for case in CASES)
    ]
    assert not missing, (
        f"{missing} are exported but {__name__}.CASES does not list them: add an instance of "
        "each (with the sizes of any dimensions its parameters fix)."
    )


@pytest.mark.slow  # seconds of compiling per case; test_check_adapter_passes runs the checks
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_every_check_runs_that_should(case):
    """The checks that do not apply to an adapter are skipped quietly: make sure that those
    of the ready adapters are exactly the ones the table expects, so that none goes unrun."""
    args = case.hold(find(inputs(case.adapter, sizes=case.sizes), lambda _: True))
    subject = Subject.make(case.adapter, args, CHECKS, 2, 0, None, None)
    assert subject.checks == set(CHECKS) - case.skipped


@pytest.mark.parametrize(
    ("case", "dtype"),
    [
        pytest.param(
            case,
            dtype,
            id=f"{_id(case)}-{np.dtype(dtype).name}",
            marks=() if _id(case) in _QUICK and dtype == np.float64 else pytest.mark.slow,
        )
        for dtype in (np.float32, np.float64)
        for case in CASES
        if dtype == np.float64 or case.float32
    ],
)
@given(data=st.data())
def test_check_adapter_passes(case, dtype, input_limits, data):
    with jax.enable_x64(dtype == np.float64):
        strategy = inputs(
            case.adapter,
            dtype=dtype,
            batch=st.sampled_from(input_limits.batches),
            sizes=case.sizes,
            max_size=input_limits.max_size,
        )
        args = case.hold(data.draw(strategy, label="args"))
        seed = data.draw(st.integers(0, 2**16 - 1), label="seed")
        check_adapter(case.adapter, *args, seed=seed, checks=_CHECKS[np.dtype(dtype)])


# The Hessian check compiles second-order programs for every new shape, the costliest check
# here; its rules are the same code in both precisions, and against finite differences in
# float32 it is the looser test, so float32 leaves it to float64 (and to the float32 runs
# of tests/test_check_adapter_catches.py).
_CHECKS = {
    np.dtype(np.float32): tuple(c for c in CHECKS if c != "hessian"),
    np.dtype(np.float64): tuple(CHECKS),
}
