"""Quick derivative checks, in both modes, of the linalg adapters whose other derivative
tests are slow-marked (a dropped term in a rule must fail the quick suite): small inputs,
``check_adapter``'s "grad" and "jvp" checks against central differences in float64."""

import jax
import numpy as np
import pytest

from jaxbridge.adapters.linalg import (
    ContinuousRiccatiSolve,
    DiscreteLyapunovSolve,
    DiscreteRiccatiSolve,
    LinearSolve,
    LyapunovSolve,
    SylvesterSolve,
)
from jaxbridge.testing import check_adapter

# stable (eigenvalues -1 and -2, no two summing to 0), nonsymmetric so that aᵀ ≠ a
STABLE = np.array([[-1.0, 0.3], [0.1, -2.0]])
Q = np.array([[1.0, 0.2], [0.4, 2.0]])
B = np.array([[1.0], [0.5]])
BOTH = ("grad", "jvp")

CASES = {
    "LyapunovSolve": (LyapunovSolve(), (STABLE, Q), BOTH),
    "SylvesterSolve": (SylvesterSolve(), (STABLE, np.array([[-1.5]]), B), BOTH),
    "DiscreteLyapunovSolve": (DiscreteLyapunovSolve(), (STABLE / 4, Q), BOTH),
    "LinearSolve-pos": (LinearSolve(assume_a="pos"), (Q @ Q.T, np.array([1.0, 2.0])), BOTH),
    # (their gradients have quick tests in test_linalg_functions.py)
    "ContinuousRiccatiSolve": (
        ContinuousRiccatiSolve(),
        (STABLE, B, np.eye(2), np.eye(1)),
        ("jvp",),
    ),
    "DiscreteRiccatiSolve": (
        DiscreteRiccatiSolve(),
        (STABLE / 4, B, np.eye(2), np.eye(1)),
        ("jvp",),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_derivatives_match_finite_differences(case):
    adapter, args, checks = case
    with jax.enable_x64(True):
        check_adapter(adapter, *args, checks=checks)
