"""Quick derivative checks of the Bessel adapters (``test_special_bessel.py`` is slow-marked
as a whole): every adapter in both modes against central differences, and ``ive``, ``iv``
and ``jv`` at negative ``x``, which their domains (``x > 0``) never draw, against mpmath."""

import jax
import mpmath
import numpy as np
import pytest
from _special_references import EPS, mp_derivative

from jaxbridge.adapters.special import Iv, Ive, Kv, KvDerivative, Kve, Yv, iv, ive, jv
from jaxbridge.testing import check_adapter

ORDER, X = np.array([1.0, 2.0]), np.array([0.7, 1.6])
ADAPTERS = {
    "yv": (Yv(), ORDER.astype(int)),
    "iv": (Iv(), ORDER.astype(int)),
    "ive": (Ive(), ORDER.astype(int)),
    "kv": (Kv(), ORDER - 0.5),
    "kve": (Kve(), ORDER - 0.5),
    "kv_derivative": (KvDerivative(m=1, k=1), ORDER - 0.5),
}


@pytest.mark.parametrize("case", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_derivatives_in_both_modes_match_finite_differences(case):
    adapter, v = case
    with jax.enable_x64(True):
        check_adapter(adapter, v, X, checks=("grad", "jvp"))


NEGATIVE = {
    # ive(v, x) = I_v(x) e^{-|x|}: for x < 0 the slope's scaling term changes sign
    "ive": (ive, lambda v, x: mpmath.besseli(v, x) * mpmath.exp(-abs(x))),
    "iv": (iv, mpmath.besseli),
    "jv": (jv, mpmath.besselj),
}


@pytest.mark.parametrize("name", NEGATIVE)
@pytest.mark.parametrize("v", [0, 1, 2])
def test_x_derivative_at_negative_x_matches_mpmath(name, v):
    adapter, reference = NEGATIVE[name]
    x = -1.3
    expected = mp_derivative(lambda t: reference(v, t), x, 1)
    with jax.enable_x64(True):
        f = jax.jit(jax.grad(lambda x: adapter(v, x)))
        jvp = jax.jit(lambda x: jax.jvp(lambda x: adapter(v, x), (x,), (1.0,))[1])
        for got in (f(x), jvp(x)):
            np.testing.assert_allclose(got, expected, rtol=64 * EPS, atol=64 * EPS)
