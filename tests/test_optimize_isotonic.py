"""``IsotonicRegression``: SciPy's fit; derivatives with the blocks held fixed against
central differences of ``scipy.optimize.isotonic_regression`` and the block means' closed
form, to second order; bad input; a SciPy without the routine (before 1.12)."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxbridge.adapters.optimize import IsotonicRegression
from jaxbridge.testing import check_adapter

pytestmark = pytest.mark.skipif(
    not hasattr(scipy.optimize, "isotonic_regression"),
    reason=f"SciPy {scipy.__version__} has no isotonic_regression (new in 1.12)",
)

Y = np.array([3.0, 1.0, 2.0, 5.0, 4.0, 6.0, 0.5, 7.0])
W = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 1.0, 2.0])


def scipy_fit(y, w, increasing=True):
    return scipy.optimize.isotonic_regression(y, weights=w, increasing=increasing)


def central(fun, x, h=1e-6):
    columns = []
    for i in range(len(x)):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((fun(x + step) - fun(x - step)) / (2 * h))
    return np.stack(columns, -1)


@pytest.mark.parametrize("increasing", [True, False])
def test_values_are_scipys_bitwise(increasing):
    y = Y if increasing else -Y
    with jax.enable_x64(True):
        x = IsotonicRegression(increasing)(y, W)
        unweighted = IsotonicRegression(increasing)(y)
    np.testing.assert_array_equal(x, scipy_fit(y, W, increasing).x)
    np.testing.assert_array_equal(unweighted, scipy_fit(y, None, increasing).x)
    assert len(scipy_fit(y, W, increasing).blocks) == 5  # (blocks of 3, 1, 3 and 1 entries)


@pytest.mark.parametrize("increasing", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_derivatives_match_central_differences_of_scipy(increasing):
    y = Y if increasing else -Y
    fit = IsotonicRegression(increasing)
    with jax.enable_x64(True):
        in_y = jax.jacrev(fit)(jnp.asarray(y), W)
        in_w = jax.jacfwd(fit, argnums=1)(y, jnp.asarray(W))
    np.testing.assert_allclose(in_y, central(lambda v: scipy_fit(v, W, increasing).x, y), atol=1e-9)
    np.testing.assert_allclose(in_w, central(lambda v: scipy_fit(y, v, increasing).x, W), atol=1e-9)
    assert np.abs(in_w).max() > 0.1


def test_closed_form_of_one_block_to_second_order():
    """``y = (3, 1)``, ``w = (1, 2)``: one block, ``x = (3 w0 + w1) / (w0 + w1)``, so
    ``∂x/∂w0 = 2 w1 / W² = 4/9`` and ``∂²x/∂w0² = -4 w1 / W³ = -8/27``. (The property
    suite checks every composition of modes.)"""
    fit = IsotonicRegression()
    with jax.enable_x64(True):
        first = jax.grad(lambda w: fit(jnp.array([3.0, 1.0]), w)[0])(jnp.array([1.0, 2.0]))
        second = jax.hessian(lambda w: fit(jnp.array([3.0, 1.0]), w)[0])(jnp.array([1.0, 2.0]))
    np.testing.assert_allclose(first, [4 / 9, -2 / 9], rtol=1e-15)
    np.testing.assert_allclose(second[0, 0], -8 / 27, rtol=1e-15)


def test_check_adapter_and_vmap():
    ys = np.stack([Y, Y[::-1], 2 * Y])
    with jax.enable_x64(True):
        check_adapter(IsotonicRegression(), Y, W, seed=0, checks=("specs", "grad", "jvp"))
        xs = jax.jit(jax.vmap(IsotonicRegression(), (0, None)))(ys, W)
    for y, x in zip(ys, xs):
        np.testing.assert_array_equal(x, scipy_fit(y, W).x)


def test_bad_input_is_named():
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="IsotonicRegression.*'weights'.*positive"):
            IsotonicRegression()(Y, -W)
        with pytest.raises(ValueError, match="IsotonicRegression.*'y'.*non-finite"):
            IsotonicRegression()(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="IsotonicRegression.*'increasing'"):
        IsotonicRegression(increasing="yes")


def test_a_scipy_without_the_routine_refuses_the_adapter(monkeypatch):
    # (the module: the package's name isotonic_regression is SciPy's call form)
    module = importlib.import_module("jaxbridge.adapters.optimize.isotonic_regression")
    monkeypatch.setattr(module, "_SCIPYS", None)
    with pytest.raises(ValueError, match="IsotonicRegression needs .* SciPy 1.12"):
        IsotonicRegression()


@pytest.mark.slow
def test_check_adapter_every_check():
    with jax.enable_x64(True):
        check_adapter(IsotonicRegression(), Y, W, seed=1)
