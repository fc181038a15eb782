"""``jaxbridge.testing.inputs``: shapes consistent with the signature, values inside the
declared domains, and errors that say what is wrong with a declaration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import find, given
from hypothesis import strategies as st

import jaxbridge as jb
from jaxbridge.adapters import Linear
from jaxbridge.testing import inputs


def _adapter(core: str, kind: object = None, name: str = "x") -> jb.Adapter:
    """An adapter with one argument ``x`` of core shape ``core``, whose domain declaration
    gives argument ``name`` the kind ``kind``."""

    class OneArgument(jb.Adapter):
        signature = f"{core}->()"
        domains = {} if kind is None else {name: kind}

        def forward(self, x):
            return x.sum()

    return OneArgument()


def _check(kind: str, x: np.ndarray) -> None:
    """``x`` is in domain ``kind`` (up to float32 rounding of the bounds)."""
    slack = 1e-5
    if kind == "real":
        assert np.all(np.abs(x) <= 2)
    elif kind == "positive":
        assert np.all((x >= 0.25) & (x <= 4))
    elif kind == "away_from_zero":
        assert np.all((np.abs(x) >= 0.25) & (np.abs(x) <= 2))
    elif kind == "integer":
        assert x.dtype == np.int32 and np.all((x >= 0) & (x <= 7))
    elif kind == "well_conditioned":
        singular = np.linalg.svd(x.astype(np.float64), compute_uv=False)
        assert np.all(singular >= 0.5 - slack) and np.all(singular <= 1.5 + slack)
    elif kind == "spd":
        assert np.array_equal(x, np.swapaxes(x, -1, -2))
        eigenvalues = np.linalg.eigvalsh(x.astype(np.float64))
        assert np.all(eigenvalues >= 0.5 - slack) and np.all(eigenvalues <= 1 + slack)
    elif kind == "stable":
        assert np.all(np.linalg.eigvals(x.astype(np.float64)).real <= -0.5 + slack)


ELEMENTWISE = ["real", "positive", "away_from_zero", "integer"]
MATRICES = ["well_conditioned", "spd", "stable"]


@pytest.mark.parametrize(
    "core,kind", [("(n)", k) for k in ELEMENTWISE] + [("(n,n)", k) for k in MATRICES]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@given(data=st.data())
def test_values_are_in_the_declared_domain(core, kind, dtype, data):
    batch = data.draw(st.sampled_from([(), (2,), (2, 3)]), label="batch")
    (x,) = data.draw(inputs(_adapter(core, kind), dtype=dtype, batch=batch, max_size=4))
    assert x.dtype == (np.int32 if kind == "integer" else dtype)
    assert x.shape[: len(batch)] == batch
    assert 1 <= x.shape[-1] <= 4 and (core == "(n)" or x.shape[-1] == x.shape[-2])
    _check(kind, x)


@given(data=st.data())
def test_dimensions_are_shared_between_arguments(data):
    x, w, b = data.draw(inputs(Linear(), batch=(2,), max_size=3))
    (_, k, n), (_, n_w, m), (_, m_b) = x.shape, w.shape, b.shape
    assert (n, m) == (n_w, m_b) and all(1 <= d <= 3 for d in (k, n, m))


@given(data=st.data())
def test_sizes_fix_dimensions(data):
    x, w, b = data.draw(inputs(Linear(), sizes={"n": 5, "m": 1}))
    assert w.shape == (5, 1) and b.shape == (1,) and x.shape[1] == 5


@given(data=st.data())
def test_sizes_stay_within_min_size_and_max_size(data):
    low = data.draw(st.integers(0, 3), label="min_size")
    high = data.draw(st.integers(max(low, 1), 5), label="max_size")
    x, w, b = data.draw(inputs(Linear(), min_size=low, max_size=high))
    assert all(low <= d <= high for d in (*x.shape, *w.shape, *b.shape))


def test_min_size_gives_room_to_an_adapter_that_needs_it():
    """An eigensolver for the ``k`` largest eigenvalues needs ``n > k``: with ``min_size=k + 1``
    every draw has room, and the smallest draw (where Hypothesis shrinks to) is ``n = k + 1``."""

    class LargestEigenvalues(jb.Adapter):
        signature = "(n,n)->(k)"
        domains = {"a": "spd"}
        k = 2

        def forward(self, a):
            return np.linalg.eigvalsh(a)[-self.k :]

    adapter = LargestEigenvalues()
    (a,) = find(inputs(adapter, min_size=3, max_size=4), lambda args: True)
    assert a.shape == (3, 3)
    (a,) = find(inputs(adapter, min_size=3, max_size=4), lambda args: args[0].shape[-1] > 3)
    assert a.shape == (4, 4)
    (a,) = find(inputs(adapter, min_size=0), lambda args: True)
    assert a.shape == (0, 0)  # empty inputs, when asked for


@pytest.mark.slow
def test_raw_zeros_give_the_simplest_inputs():
    """Hypothesis shrinks towards them: the minimal example of each kind."""
    simplest = {"real": 0.0, "positive": 1.0, "away_from_zero": 0.25, "integer": 4}
    for kind, value in simplest.items():
        (x,) = find(inputs(_adapter("(n)", kind)), lambda args: True)
        np.testing.assert_array_equal(x, [value])
    (a,) = find(inputs(_adapter("(n,n)", "spd")), lambda args: True)
    np.testing.assert_array_equal(a, [[0.5]])


def test_a_callable_builds_the_input():
    def odd(raw):
        return 2 * np.round(raw * 3) + 1

    (x,) = find(inputs(_adapter("(n)", odd), max_size=4), lambda args: args[0].size == 4)
    assert np.all(x % 2 == 1)


@pytest.mark.slow
def test_values_near_underflow_are_flushed_to_zero():
    """No product of two drawn entries is subnormal (XLA would flush it to 0, NumPy not)."""
    adapter = _adapter("(n)", lambda raw: np.full(raw.shape, 1e-30))
    for dtype, expected in [(np.float32, 0.0), (np.float64, 1e-30)]:
        (x,) = find(inputs(adapter, dtype=dtype), lambda args: True)
        np.testing.assert_array_equal(x, [expected])


def test_declarations_that_cannot_work_are_errors():
    with pytest.raises(ValueError, match=r"names argument 'y', but forward's arguments"):
        inputs(_adapter("(n)", "real", name="y"))
    with pytest.raises(
        ValueError, match=r"the domain 'complex'; a domain is one of real, positive"
    ):
        inputs(_adapter("(n)", "complex"))
    with pytest.raises(ValueError, match=r"'spd', which needs a square core.*\(m,n\)"):
        inputs(_adapter("(m,n)", "spd"))
    with pytest.raises(ValueError, match=r"`sizes` names \['q'\]"):
        inputs(Linear(), sizes={"q": 2})
    with pytest.raises(TypeError, match="floating dtype"):
        inputs(Linear(), dtype=np.int32)
    with pytest.raises(ValueError, match=r"`min_size` must be an integer of at least 0, got -1"):
        inputs(Linear(), min_size=-1)
    with pytest.raises(ValueError, match=r"`max_size` must be .* at least `min_size` \(4\)"):
        inputs(Linear(), min_size=4, max_size=3)
    with pytest.raises(ValueError, match=r"`max_size` must be .* got 0"):
        inputs(Linear(), max_size=0)
