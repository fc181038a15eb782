"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.sparse``: the
eigensolver's rules are bridged bordered solves whose rules are solves again, so every
order works; data drawn with well-separated spectra (``Eigsh.separated_spectrum``).
``ExpmMultiply`` is checked in ``b`` and ``t`` (every order) with ``data`` held: its data
cotangent is a host quadrature, first order, which the hessian check would differentiate
again; ``tests/test_sparse_expm_multiply.py`` checks the data derivatives."""

import numpy as np
import scipy.sparse
from _chain import Chain
from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters.sparse import Eigsh, ExpmMultiply, OperatorEigsh, Svds


class _OperatorEigsh(OperatorEigsh):
    @property
    def domains(self):
        return {"theta": self.weak_springs}

    def weak_springs(self, raw: np.ndarray) -> np.ndarray:
        """Stiffnesses in [0, 0.1]: with ``Chain``'s on-site potential 1, 2, ..., n the
        eigenvalues stay within 0.4 of those (Gershgorin), at least 0.2 apart."""
        return 0.05 + 0.05 * raw


# A 6x6 symmetric pattern: the diagonal, a band, and a corner entry each way.
_PATTERN = scipy.sparse.csr_array(
    scipy.sparse.eye(6)
    + scipy.sparse.eye(6, k=1)
    + scipy.sparse.eye(6, k=-1)
    + scipy.sparse.eye(6, k=5)
    + scipy.sparse.eye(6, k=-5)
)
# A 4x6 pattern: the diagonal, a band above it, and a far corner entry.
_WIDE = scipy.sparse.csr_array(
    scipy.sparse.eye(4, 6) + scipy.sparse.eye(4, 6, k=1) + scipy.sparse.eye(4, 6, k=5)
)

CASES = [
    Case(
        Eigsh(_PATTERN.indices, _PATTERN.indptr, _PATTERN.shape, k=2, which="SA"),
        sizes={"m": _PATTERN.nnz},
        skipped=NOT_LINEAR,
    ),
    Case(
        Svds(_WIDE.indices, _WIDE.indptr, _WIDE.shape, k=2),
        sizes={"e": _WIDE.nnz},
        skipped=NOT_LINEAR,
    ),
    Case(
        _OperatorEigsh(Chain(5, onsite=1.0), k=2, which="SA"),
        sizes={"p": 6},
        skipped=NOT_LINEAR,
    ),
    Case(
        ExpmMultiply(_PATTERN.indices, _PATTERN.indptr, _PATTERN.shape),
        sizes={"m": _PATTERN.nnz, "n": 6},
        held=("data",),
    ),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"Eigsh"}
)
