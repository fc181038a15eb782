"""Forward values of the ready adapters, eager and jitted, against native JAX."""

import jax
import numpy as np
import pytest
from _cases import CASES, IDS, assert_close


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_matches_reference(case, dtype):
    with jax.enable_x64(dtype == np.float64):
        args = case.args(dtype)
        out = case.adapter(*args)
        assert out.dtype == dtype
        assert_close(out, case.reference(*args), dtype)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jit_matches_reference(case, dtype):
    with jax.enable_x64(dtype == np.float64):
        args = case.args(dtype)
        out = jax.jit(case.adapter)(*args)
        assert out.dtype == dtype
        assert_close(out, case.reference(*args), dtype)


def test_float64_inputs_with_x64_off_compute_in_float32():
    from jaxbridge.adapters import Doubling

    with jax.enable_x64(False):
        out = Doubling()(np.array([1.5, 2.5], np.float64))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [3.0, 5.0])


def test_sigmoid_is_finite_at_large_magnitudes():
    from jaxbridge.adapters import Sigmoid

    with jax.enable_x64(True):
        x = np.array([-100.0, -30.0, 0.0, 30.0, 100.0])
        y = Sigmoid()(x)
        g = jax.grad(lambda x: Sigmoid()(x).sum())(x)
    assert np.all(np.isfinite(y)) and np.all(np.isfinite(g))
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-x)), rtol=1e-15)
    np.testing.assert_allclose(g, np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))) ** 2, rtol=1e-12)
