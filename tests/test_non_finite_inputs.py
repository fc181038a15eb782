"""One policy for NaN and inf inputs, on every adapter that is not elementwise: where the
routine cannot give a meaningful result, an error whose message names the adapter (the
bridge starts it with ``<Adapter>.forward``, or ``<Adapter>.check`` where the adapter refuses
in ``check``) and the argument, or, with
``on_failure="nan"`` where the adapter has it, NaN for that batch element alone (its
neighbour in the batch keeps its own answer).

Before, ``LyapunovSolve``, ``SylvesterSolve``, ``LinearSolve`` and ``SparseSolve`` with a NaN
in their right-hand side returned NaN silently, ``solve_discrete_lyapunov`` raised SciPy's
``ValueError`` naming no argument, ``lfilter`` and ``sosfilt`` filtered NaN, and
``OdeSolve``/``Quad`` named several arguments at once.

The elementwise special functions (``jv``, ``kv``, ``lambertw``, ``gammaincinv``, ...)
are the documented exception: they propagate NaN as SciPy does (tested with them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import numpy as np
import pytest
import scipy.sparse
from _integrate_cases import Decay, Exponential
from _optimize_problems import (
    Distance,
    Growth,
    Kepler,
    Nonnegative,
    Rosenbrock,
    SimplexDistance,
    SumToOne,
)

from jaxbridge.adapters import (
    LeastSquares,
    LinearSolve,
    LyapunovSolve,
    Minimize,
    MinimizeBounded,
    MinimizeConstrained,
    OdeSolve,
    Quad,
    Root,
    SparseSolve,
    SylvesterSolve,
)
from jaxbridge.adapters.linalg import (
    ContinuousRiccatiSolve,
    DiscreteLyapunovSolve,
    DiscreteRiccatiSolve,
    MatrixLog,
    MatrixSqrt,
)
from jaxbridge.adapters.signal import LinearFilter, SosFilter

STABLE = np.array([[-2.0, 0.5], [0.3, -1.5]])
SPD = np.array([[2.0, 0.5], [0.5, 1.0]])
PATTERN = scipy.sparse.csr_array(np.array([[4.0, 1.0], [0.0, 3.0]]))


@dataclass(frozen=True)
class Case:
    make: Callable[..., object]  # make(**parameters) -> the adapter
    args: tuple  # valid arguments, one call
    # the arguments to poison and with what; inf is meaningful where left out
    poison: dict[str, tuple[float, ...]] = field(default_factory=dict)
    on_failure: bool = True  # the adapter has on_failure="nan"


NAN_INF = (np.nan, np.inf)
CASES = {
    "LinearSolve": Case(LinearSolve, (SPD, np.ones(2)), {"a": NAN_INF, "b": NAN_INF}),
    "LinearSolve(pos)": Case(
        lambda **kw: LinearSolve(assume_a="pos", **kw),
        (SPD, np.ones(2)),
        {"a": NAN_INF, "b": NAN_INF},
    ),
    "LyapunovSolve": Case(LyapunovSolve, (STABLE, SPD), {"a": NAN_INF, "q": NAN_INF}),
    "SylvesterSolve": Case(
        SylvesterSolve, (STABLE, STABLE, SPD), {"a": NAN_INF, "b": NAN_INF, "q": NAN_INF}
    ),
    "SparseSolve": Case(
        lambda **kw: SparseSolve(tuple(PATTERN.indices), tuple(PATTERN.indptr), (2, 2), **kw),
        (PATTERN.data, np.ones(2)),
        {"data": NAN_INF, "b": NAN_INF},
    ),
    "DiscreteLyapunovSolve": Case(
        DiscreteLyapunovSolve, (STABLE / 4, SPD), {"a": NAN_INF, "q": NAN_INF}
    ),
    "MatrixSqrt": Case(MatrixSqrt, (SPD,), {"a": NAN_INF}),
    "MatrixLog": Case(MatrixLog, (SPD,), {"a": NAN_INF}),
    "ContinuousRiccatiSolve": Case(
        ContinuousRiccatiSolve,
        (STABLE, np.eye(2), SPD, SPD),
        {name: NAN_INF for name in "abqr"},
    ),
    "DiscreteRiccatiSolve": Case(
        DiscreteRiccatiSolve,
        (STABLE / 4, np.eye(2), SPD, SPD),
        {name: NAN_INF for name in "abqr"},
    ),
    "LinearFilter": Case(
        LinearFilter,
        (np.array([0.5, 0.2]), np.array([1.0, -0.3]), np.arange(5.0)),
        {"b": NAN_INF, "a": NAN_INF, "x": NAN_INF},
        on_failure=False,
    ),
    "SosFilter": Case(
        SosFilter,
        (np.array([[1.0, 0.4, 0.1, 1.0, -0.2, 0.05]]), np.arange(5.0)),
        {"sos": NAN_INF, "x": NAN_INF},
        on_failure=False,
    ),
    "Root": Case(
        lambda **kw: Root(Kepler(), **kw),
        (np.array([0.5]), np.array([0.4, 1.0])),
        {"x0": NAN_INF, "theta": NAN_INF},
    ),
    "Minimize": Case(
        lambda **kw: Minimize(Rosenbrock(), **kw),
        (np.zeros(2), np.array([1.0, 5.0])),
        {"x0": NAN_INF, "theta": NAN_INF},
    ),
    "MinimizeBounded": Case(
        lambda **kw: MinimizeBounded(Distance(), **kw),
        (np.zeros(2), np.array([0.3, -0.2]), -1.5 * np.ones(2), 1.5 * np.ones(2)),
        {"x0": NAN_INF, "theta": NAN_INF, "lower": (np.nan,), "upper": (np.nan,)},
    ),
    "MinimizeConstrained": Case(
        lambda **kw: MinimizeConstrained(
            SimplexDistance(), eq=SumToOne(), ineq=Nonnegative(), **kw
        ),
        (np.full(3, 1 / 3), np.array([0.6, 0.3, -1.0])),
        {"x0": NAN_INF, "theta": NAN_INF},
    ),
    "LeastSquares": Case(
        lambda **kw: LeastSquares(Growth(), **kw),
        (np.array([2.0, 0.8]), 2.0 * np.exp(0.8 * np.linspace(0, 1, 4))),
        {"x0": NAN_INF, "theta": NAN_INF},
    ),
    "OdeSolve": Case(
        lambda **kw: OdeSolve(Decay(), **kw),
        (np.ones(2), np.array([0.5]), np.array([0.0, 0.5, 1.0])),
        {"y0": NAN_INF, "theta": NAN_INF, "ts": NAN_INF},
    ),
    "Quad": Case(
        lambda **kw: Quad(Exponential(), **kw),
        (np.array([-1.0]), np.array(0.0), np.array(1.0)),
        {"theta": NAN_INF, "a": (np.nan,), "b": (np.nan,)},  # infinite limits are integrals
    ),
}

POISONED = [
    pytest.param(name, argument, value, id=f"{name}-{argument}-{value}")
    for name, case in CASES.items()
    for argument, values in case.poison.items()
    for value in values
]


def _names(adapter) -> list[str]:
    import inspect

    return list(inspect.signature(type(adapter).forward).parameters)[1:]


def _poisoned(case: Case, adapter, argument: str, value: float) -> tuple:
    index = _names(adapter).index(argument)
    bad = np.array(case.args[index], np.float64, copy=True)
    bad.reshape(-1)[-1] = value
    return tuple(bad if i == index else a for i, a in enumerate(case.args))


@pytest.mark.parametrize(("name", "argument", "value"), POISONED)
def test_non_finite_input_is_an_error_naming_the_adapter_and_the_argument(name, argument, value):
    case = CASES[name]
    adapter = case.make()
    args = _poisoned(case, adapter, argument, value)
    owner = type(adapter).__name__
    with jax.enable_x64(True), pytest.raises(Exception) as caught:
        adapter(*args)
    message = str(caught.value)
    assert re.search(rf"^{owner}\.(forward|check) raised", message), message
    assert f"'{argument}'" in message, message


@pytest.mark.parametrize(
    ("name", "argument", "value"),
    [p for p in POISONED if CASES[p.values[0]].on_failure],
)
def test_on_failure_nan_gives_nan_for_that_batch_element_alone(name, argument, value):
    """A batch of two: the poisoned element is all NaN, its neighbour is what it is alone."""
    case = CASES[name]
    adapter = case.make(on_failure="nan")
    args = _poisoned(case, adapter, argument, value)
    index = _names(adapter).index(argument)
    batch = tuple(np.stack([a, case.args[i]]) if i == index else a for i, a in enumerate(args))
    with jax.enable_x64(True):
        got = np.asarray(adapter(*batch))
        alone = np.asarray(adapter(*case.args))
    assert np.isnan(got[0]).all(), got[0]
    np.testing.assert_allclose(got[1], alone, rtol=1e-12, atol=0)
