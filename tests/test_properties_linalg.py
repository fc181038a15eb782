"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.linalg``: the
solves' rules are solves again, the matrix functions' and equations' rules are bridged
calls, so every order works. SparseSolve draws diagonally dominant values on its pattern
(which holds the diagonal)."""

import numpy as np
import scipy.sparse
from _properties import HOST_RULES, NOT_LINEAR, Case, property_tests

from jaxbridge.adapters.linalg import (
    ContinuousRiccatiSolve,
    DiscreteLyapunovSolve,
    DiscreteRiccatiSolve,
    Eig,
    LinearSolve,
    LyapunovSolve,
    MatrixLog,
    MatrixSqrt,
    SparseSolve,
    SylvesterSolve,
)

# A 5x5 pattern with fill-in under LU: a tridiagonal band and a corner entry each way.
_PATTERN = scipy.sparse.csr_array(
    np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1) + np.eye(5, k=4) + np.eye(5, k=-4)
)

CASES = [
    Case(LinearSolve()),
    Case(LinearSolve(assume_a="pos")),
    Case(SylvesterSolve()),
    Case(LyapunovSolve()),
    Case(
        SparseSolve(_PATTERN.indices, _PATTERN.indptr, _PATTERN.shape),
        sizes={"k": _PATTERN.nnz, "n": 5},
    ),
    Case(MatrixSqrt(), skipped=NOT_LINEAR),
    Case(MatrixLog(), skipped=NOT_LINEAR),
    Case(DiscreteLyapunovSolve()),
    Case(ContinuousRiccatiSolve(), skipped=NOT_LINEAR, float32=False),
    Case(DiscreteRiccatiSolve(), skipped=NOT_LINEAR, float32=False),
    # host rules (first order); drawn matrices have distinct eigenvalues almost surely
    Case(Eig(), sizes={"n": 3}, skipped=HOST_RULES),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"LinearSolve-gen"}
)
