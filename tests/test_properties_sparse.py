"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.sparse``: the
eigensolver's rules are bridged bordered solves whose rules are solves again, so every
order works; data drawn with well-separated spectra (``Eigsh.separated_spectrum``)."""

import scipy.sparse
from _properties import NOT_LINEAR, Case, property_tests

from jaxbridge.adapters.sparse import Eigsh

# A 6x6 symmetric pattern: the diagonal, a band, and a corner entry each way.
_PATTERN = scipy.sparse.csr_array(
    scipy.sparse.eye(6) + scipy.sparse.eye(6, k=1) + scipy.sparse.eye(6, k=-1)
    + scipy.sparse.eye(6, k=5) + scipy.sparse.eye(6, k=-5)
)

CASES = [
    Case(
        Eigsh(_PATTERN.indices, _PATTERN.indptr, _PATTERN.shape, k=2, which="SA"),
        sizes={"m": _PATTERN.nnz},
        skipped=NOT_LINEAR,
        float32=False,
    ),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"Eigsh"}
)
