"""The Bessel adapters (``jaxbridge.adapters.special``): values against Boost's tables and
mpmath, derivatives in ``x`` against SciPy's ``jvp``/``yvp``/``ivp``/``kvp`` and mpmath,
``kv``'s derivatives in its order against mpmath, large arguments, the error for an order
that has no derivative, NaN outside the real domain, and ``check_adapter``."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.special
from _special_references import (
    EPS,
    assert_rounding_close,
    boost,
    finite_and_normal,
    mp_derivative,
    mp_float,
)

from jaxbridge.adapters.special import (
    Iv,
    Ive,
    Jv,
    Kv,
    KvDerivative,
    Kve,
    Yv,
    iv,
    ive,
    jv,
    kv,
    kve,
    yv,
)
from jaxbridge.testing import check_adapter

pytestmark = pytest.mark.slow  # mpmath references and a compile per order and argument


def _ive(v, x):
    return mpmath.besseli(v, x) * mpmath.exp(-abs(x))


def _kve(v, x):
    return mpmath.besselk(v, x) * mpmath.exp(x)


# name, adapter, SciPy's function, SciPy's x-derivative (None: built from SciPy below), mpmath
FUNCTIONS = {
    "jv": (jv, scipy.special.jv, scipy.special.jvp, mpmath.besselj),
    "yv": (yv, scipy.special.yv, scipy.special.yvp, mpmath.bessely),
    "iv": (iv, scipy.special.iv, scipy.special.ivp, mpmath.besseli),
    "ive": (ive, scipy.special.ive, None, _ive),
    "kv": (kv, scipy.special.kv, scipy.special.kvp, mpmath.besselk),
    "kve": (kve, scipy.special.kve, None, _kve),
}

# Real orders (negative too) and x > 0, away from zeros of the functions and their slopes.
V = np.array([0.0, 1.0, 2.5, -1.3, 10.2, 0.5, 40.5, 3.0])
X = np.array([0.5, 2.0, 6.3, 3.0, 12.0, 30.0, 10.0, 0.05])


def _x_derivative(name, v, x, n):
    """SciPy's n-th derivative in x (``jvp`` and kin; for the scaled ones, from ``ivp`` and
    ``kvp`` by the product rule)."""
    _, _, derivative, _ = FUNCTIONS[name]
    if name == "ive":  # d^n/dx^n [I_v(x) e^{-x}] for x > 0
        terms = [
            scipy.special.comb(n, k) * scipy.special.ivp(v, x, k) * (-1) ** (n - k)
            for k in range(n + 1)
        ]
        return sum(terms) * np.exp(-x)
    if name == "kve":
        terms = [scipy.special.comb(n, k) * scipy.special.kvp(v, x, k) for k in range(n + 1)]
        return sum(terms) * np.exp(x)
    return derivative(v, x, n)


# ---------------------------------------------------------------- values


BOOST_TABLES = [
    # table, function, the largest relative error allowed: SciPy's own test tolerance for
    # the table (special/tests/test_data.py); measured: jv 1.9e-14 (bessel_j_data), yv
    # 2.5e-11 (bessel_yv_data, orders up to 1000), iv 1.5e-13, kv 7.1e-14
    ("bessel_j_data", "jv", 1e-12),
    ("bessel_j_int_data", "jv", 1e-12),
    ("bessel_y01_data", "yv", 1e-12),
    ("bessel_yn_data", "yv", 1e-12),
    ("bessel_yv_data", "yv", 1e-10),
    ("bessel_i_data", "iv", 1e-12),
    ("bessel_i_int_data", "iv", 1e-12),
    ("bessel_k_data", "kv", 1e-12),
    ("bessel_k_int_data", "kv", 1e-12),
]


@pytest.mark.parametrize(("table", "name", "rtol"), BOOST_TABLES, ids=lambda p: str(p))
def test_values_match_boost_tables(table, name, rtol):
    """Every row of Boost's table, in one jitted vmapped call: the bridge gives SciPy's
    values bit for bit (but for subnormal ones, which XLA flushes to 0 under jit), and those
    are within SciPy's tolerance of Boost's."""
    v, x, expected = boost(table).T
    adapter, function, _, _ = FUNCTIONS[name]
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(jax.vmap(adapter))(v, x))
    scipy_values = function(v, x)
    flushed = np.abs(scipy_values) < np.finfo(np.float64).tiny
    np.testing.assert_array_equal(got, np.where(flushed, 0.0, scipy_values))
    kept = finite_and_normal(expected)
    assert kept.sum() > 0.4 * len(expected)  # the others are beyond float64's range
    np.testing.assert_allclose(got[kept], expected[kept], rtol=rtol, atol=0)
    assert np.all(got[expected == 0] == 0)  # underflow, as in SciPy


@pytest.mark.parametrize("name", FUNCTIONS)
def test_values_match_mpmath(name):
    """At real orders, 30-digit references: SciPy's accuracy, which the bridge keeps (the
    largest measured error is 105 ulps, ive at v = 10.2, x = 12; most are 0 to 2 ulps)."""
    adapter, _, _, reference = FUNCTIONS[name]
    expected = np.array([mp_float(reference(v, x)) for v, x in zip(V, X)])
    with jax.enable_x64(True):
        got = np.asarray(adapter(V, X))
    np.testing.assert_allclose(got, expected, rtol=128 * EPS, atol=0)


def test_negative_x_with_integer_order():
    """Integer orders are real for x < 0 (J_n(-x) = (-1)^n J_n(x), I_n likewise)."""
    with jax.enable_x64(True):
        np.testing.assert_allclose(jv(3, -4.0), -mp_float(mpmath.besselj(3, 4)), rtol=4 * EPS)
        np.testing.assert_allclose(iv(2, -1.5), mp_float(mpmath.besseli(2, 1.5)), rtol=4 * EPS)


def test_outside_the_real_domain_is_nan_as_in_scipy():
    """Complex values (x < 0 with a non-integer order, or any x < 0 for Y and K) are NaN,
    as SciPy's real functions give; Y and K at x = 0 are -inf and inf."""
    with jax.enable_x64(True):
        for adapter in (jv, iv, ive):
            assert np.isnan(adapter(0.5, -1.0))
        for adapter in (yv, kv, kve):
            assert np.isnan(adapter(1.0, -1.0))
        assert yv(1.0, 0.0) == -np.inf
        assert kv(1.0, 0.0) == np.inf and kve(1.0, 0.0) == np.inf
        assert np.isnan(jv(1.5, np.nan))


def test_dtypes():
    """float32 stays float32, an integer order takes x's dtype, integers alone give float."""
    with jax.enable_x64(False):
        assert jv(np.float32(1.5), np.float32(2.0)).dtype == jnp.float32
        assert kv(np.int32(1), np.float32(2.0)).dtype == jnp.float32
        assert jv(1, 2).dtype == jnp.float32
    with jax.enable_x64(True):
        assert iv(1, 2.0).dtype == jnp.float64
        np.testing.assert_allclose(jv(np.float32(1.5), np.float32(2.0)), 0.49129378, rtol=1e-6)


def test_broadcasting_and_keywords():
    """Arguments broadcast like SciPy's ufuncs, and a broadcast argument's gradient sums
    over the axes it was broadcast along; SciPy's names work as keywords."""
    v = np.array([0.5, 1.5])[:, None]
    x = np.linspace(0.5, 3.0, 4)[None, :]
    with jax.enable_x64(True):
        np.testing.assert_array_equal(kv(v, x), scipy.special.kv(v, x))
        gx, gv = jax.grad(lambda x, v: kv(v, x).sum(), argnums=(0, 1))(x, v)
        assert jv(v=1.5, x=2.0) == scipy.special.jv(1.5, 2.0)
    np.testing.assert_allclose(gx, scipy.special.kvp(v, x).sum(0, keepdims=True), rtol=1e-14)
    expected = [
        [sum(mp_derivative(lambda u: mpmath.besselk(u, t), a, 1) for t in x[0])] for a in v[:, 0]
    ]
    np.testing.assert_allclose(gv, expected, rtol=1e-13)


# ---------------------------------------------------------------- large arguments


def test_scaled_forms_stay_finite_where_the_unscaled_ones_overflow():
    """At x = 800, 1e4 and 1e5, iv overflows and kv underflows (as SciPy's do); ive and kve
    stay finite and match the 30-digit values, and so do their derivatives."""
    x = np.array([800.0, 1e4, 1e5])
    with jax.enable_x64(True):
        assert np.all(np.isinf(iv(1.5, x))) and np.all(kv(1.5, x) == 0)
        for adapter, reference in ((ive, _ive), (kve, _kve)):
            expected = [mp_float(reference(1.5, t)) for t in x]
            np.testing.assert_allclose(adapter(1.5, x), expected, rtol=8 * EPS)
            slope = jax.vmap(jax.grad(adapter, argnums=1), (None, 0))(1.5, x)
            expected = [mp_derivative(lambda t: reference(1.5, t), t, 1) for t in x]
            # (f(v-1) + f(v+1)) / 2 - f, for f of size 1/sqrt(2 pi x): rounding of the terms
            assert_rounding_close(slope, expected, adapter(1.5, x), 8, f"{adapter} slope")
        # kve in its order too: the integral is evaluated in logs, and its slope in x has
        # no cancellation
        slope = jax.vmap(jax.grad(kve), (None, 0))(1.5, x)
        expected = [mp_derivative(lambda v: _kve(v, t), 1.5, 1) for t in x]
        np.testing.assert_allclose(slope, expected, rtol=1e-12)


# ---------------------------------------------------------------- derivatives in x


@pytest.mark.parametrize("name", FUNCTIONS)
def test_x_derivatives_match_scipy_and_mpmath(name):
    """First and second derivatives in x, reverse over reverse (grad of grad) and forward
    over forward (jacfwd of jacfwd), under jit and vmap, against SciPy's derivatives and
    mpmath's; the third (jacfwd of grad of grad) against mpmath."""
    adapter, _, _, reference = FUNCTIONS[name]
    first = jax.grad(adapter, argnums=1)
    second_rev = jax.grad(first, argnums=1)
    second_fwd = jax.jacfwd(jax.jacfwd(adapter, argnums=1), argnums=1)
    third = jax.jacfwd(second_rev, argnums=1)
    with jax.enable_x64(True):
        run = [jax.jit(jax.vmap(f)) for f in (first, second_rev, second_fwd, third)]
        d1, d2_rev, d2_fwd, d3 = (np.asarray(f(V, X)) for f in run)
    # the n-th derivative combines f(v - n), ..., f(v + n): rounding is relative to those
    terms = [np.abs(FUNCTIONS[name][1](V + j, X)) for j in range(-3, 4)]
    scale = np.max(terms, axis=0)
    for n, got in ((1, d1), (2, d2_rev), (2, d2_fwd)):
        expected = _x_derivative(name, V, X, n)
        assert_rounding_close(got, expected, scale, 32, f"{name}: derivative {n} against SciPy")
    for n, got in ((1, d1), (2, d2_rev), (3, d3)):
        expected = [mp_derivative(lambda t: reference(v, t), x, n) for v, x in zip(V, X)]
        assert_rounding_close(got, expected, scale, 32, f"{name}: derivative {n} against mpmath")


# ---------------------------------------------------------------- kv in its order


ORDER_POINTS = [(0.0, 1.0), (1.3, 2.2), (-2.7, 0.3), (7.5, 5.0), (25.0, 3.0), (0.4, 40.0)]


@pytest.mark.parametrize("scaled", [False, True], ids=["kv", "kve"])
def test_order_derivatives_match_mpmath(scaled):
    """d/dv, d²/dv², d³/dv³ (grad, hessian = jacfwd of jacrev, jacfwd of jacfwd of grad)
    and the mixed d²/dv dx of kv and kve against mpmath.diff at 30 digits."""
    adapter, reference = (kve, _kve) if scaled else (kv, mpmath.besselk)
    v, x = np.array(ORDER_POINTS).T
    d1 = jax.grad(adapter)
    derivatives = (d1, jax.hessian(adapter), jax.jacfwd(jax.jacfwd(d1)))
    mixed = jax.jacrev(jax.grad(adapter, argnums=1))
    with jax.enable_x64(True):
        got = jax.jit(jax.vmap(lambda a, b: [f(a, b) for f in (*derivatives, mixed)]))(v, x)
        value = np.abs(adapter(v, x))  # the scale where odd derivatives vanish (v = 0)
    for n in (1, 2, 3):
        expected = [mp_derivative(lambda u: reference(u, b), a, n) for a, b in ORDER_POINTS]
        # 450 ulps: 1e-13 relative
        assert_rounding_close(got[n - 1], expected, np.abs(expected) + value, 450, f"d{n}/dv")
    expected = [
        mp_float(mpmath.diff(lambda u, t: reference(u, t), (a, b), (1, 1))) for a, b in ORDER_POINTS
    ]
    assert_rounding_close(got[3], expected, np.abs(expected) + value, 450, "d2/dv dx")


def test_derivative_integrals_match_mpmath_widely():
    """KvDerivative(m, k) on the host, for orders from 1e-30 to 60 and x from 1e-20 to 1e4,
    unscaled and scaled: within 2e-13 of mpmath (1e-15 typical; the large orders lose a few
    digits to the size of the exponent in the integrand), and exactly 0 for odd m at v = 0.
    At v = 1e-30, where the recurrence -(T(v-1) + T(v+1)) / 2 would cancel to rounding
    noise, the integrals keep full relative accuracy."""
    v = np.array([1e-30, -1.7, 10.0, 60.0])
    x = np.array([1e-20, 1e-3, 1.0, 600.0, 1e4])
    vv, xx = (a.ravel() for a in np.meshgrid(v, x))
    for m, k, scaled in [(1, 0, False), (2, 0, True), (0, 1, False), (1, 1, True), (0, 2, True)]:
        got = KvDerivative(m, k, scaled).forward(vv, xx)
        f = _kve if scaled else mpmath.besselk
        with mpmath.workdps(60):  # at v = 1e-30, 30 digits leave mpmath.diff too few
            expected = np.array(
                [(-1) ** k * mp_float(mpmath.diff(f, (a, b), (m, k))) for a, b in zip(vv, xx)]
            )
        kept = finite_and_normal(expected) & (np.abs(expected) < 1e300)
        np.testing.assert_allclose(got[kept], expected[kept], rtol=2e-13, err_msg=f"{m, k}")
        assert np.all((got[~kept] == 0) | np.isinf(got[~kept]))  # beyond float64's range
    assert KvDerivative(1).forward(np.array(0.0), np.array(2.0)) == 0


def test_derivative_integral_edges():
    """x = 0 gives ±inf (0 for odd m at v = 0), x = inf gives 0, x < 0 and NaN give NaN."""
    v = np.array([1.0, -1.0, 0.0, 1.0, 1.0, np.nan])
    x = np.array([0.0, 0.0, 0.0, np.inf, -1.0, 1.0])
    got = KvDerivative(1).forward(v, x)
    np.testing.assert_array_equal(got, [np.inf, -np.inf, 0.0, 0.0, np.nan, np.nan])
    with pytest.raises(ValueError, match="KvDerivative: parameters 'm' and 'k'"):
        KvDerivative(0, 0)


# ---------------------------------------------------------------- no derivative in the order


@pytest.mark.parametrize("adapter", [kv, kve], ids=["kv", "kve"])
def test_a_batch_element_does_not_depend_on_its_neighbours(adapter):
    """Values and derivatives (in v and x, first and second order) of each element are
    bitwise those it has alone, next to extreme neighbours: x = 1e-300 (whose integral
    needs ~7,000 nodes), 0, inf, NaN, v = 1e6. The derivatives integrated the whole batch
    on its worst element's node count: x = 1e-300 beside it turned kve's x-derivative at
    (0.5, 1e-300), inf alone, into NaN."""
    v = np.array([0.5, 3.0, 0.5, 40.0, -2.5, 1e6, 1.0, 0.0, 2.0])
    x = np.array([1e-300, 1e-300, 2.0, 1e-3, 700.0, 1e-300, 0.0, np.inf, np.nan])

    def derivatives(v, x):
        first = jax.grad(adapter, argnums=(0, 1))
        second = jax.grad(lambda v, x: sum(first(v, x)), argnums=(0, 1))
        return adapter(v, x), *first(v, x), *second(v, x)

    with jax.enable_x64(True):
        batch = np.array(jax.vmap(derivatives)(v, x))
        alone = np.array([derivatives(*pair) for pair in zip(v, x)]).T
    np.testing.assert_array_equal(batch, alone)
    assert np.isinf(alone[2, 0])  # kv's (and kve's) x-derivative at x = 1e-300


@pytest.mark.parametrize("adapter", [jv, yv, iv, ive], ids=lambda a: type(a).__name__)
def test_differentiating_in_the_order_raises(adapter):
    """In reverse and forward mode, eager and under jit, with the order alone or with x:
    a TypeError naming the function and 'v', and never a number."""
    name = type(adapter).__name__.lower()
    message = f"{name} is not differentiable in its argument 'v'"
    with jax.enable_x64(True):
        for attempt in (
            lambda: jax.grad(adapter)(1.5, 2.0),
            lambda: jax.jit(jax.grad(adapter, argnums=(0, 1)))(1.5, 2.0),
            lambda: jax.jvp(adapter, (1.5, 2.0), (1.0, 0.0)),
            lambda: jax.jacfwd(lambda v: adapter(v, jnp.array([1.0, 2.0])))(1.5),
            lambda: jax.grad(lambda p: adapter(p[0], p[1]))(jnp.array([1.5, 2.0])),
        ):
            with pytest.raises(TypeError, match=message):
                attempt()
        # in x alone, with a traced order: fine
        got = jax.jit(jax.grad(adapter, argnums=1))(1.5, 2.0)
        assert np.isfinite(got)


# ---------------------------------------------------------------- the kit's checks

INTEGER_ORDERS = np.array([0, 1, 3]), np.array([0.5, 2.0, 7.5])
REAL_ORDERS = np.array([0.0, -1.3, 2.5]), np.array([0.5, 2.0, 7.5])


@pytest.mark.parametrize(
    ("adapter", "args"),
    [
        (Jv(), INTEGER_ORDERS),  # the order held fixed: it has no derivative
        (Yv(), INTEGER_ORDERS),
        (Iv(), INTEGER_ORDERS),
        (Ive(), INTEGER_ORDERS),
        (Kv(), REAL_ORDERS),  # differentiable in both
        (Kve(), REAL_ORDERS),
        (KvDerivative(1, 1, scaled=True), REAL_ORDERS),
    ],
    ids=lambda p: type(p).__name__ if not isinstance(p, tuple) else "",
)
def test_check_adapter(adapter, args):
    with jax.enable_x64(True):
        check_adapter(adapter, *args)


def test_check_adapter_float32():
    check_adapter(kv, np.array([0.3, 2.5], np.float32), np.array([0.5, 3.0], np.float32))


def test_agrees_with_jax_where_jax_has_its_own():
    """JAX's i0e and i1e (orders 0 and 1 only) against ive; bessel_jn (integer orders) is
    wrong at J0(100): -1.46 against 0.0200 here and in mpmath."""
    x = np.array([0.1, 1.0, 10.0, 800.0])
    with jax.enable_x64(True):
        np.testing.assert_allclose(ive(0, x), jax.scipy.special.i0e(x), rtol=1e-14)
        np.testing.assert_allclose(ive(1, x), jax.scipy.special.i1e(x), rtol=1e-14)
        np.testing.assert_allclose(jv(0, 100.0), mp_float(mpmath.besselj(0, 100)), rtol=1e-13)
        assert abs(jax.scipy.special.bessel_jn(jnp.array(100.0), v=0)[0] - jv(0, 100.0)) > 1


def test_kv_forward_mode_at_zero_is_reverse_modes():
    """``K_v(x) ~ Γ(v) 2^{v-1} x^{-v}`` at ``x = 0``: ``∂K/∂x = -inf`` and ``∂K/∂v = +inf``
    (``grad``); ``jacfwd``'s explicit zero tangent for the other input made both columns NaN
    (``0 * inf``) (#54)."""
    with jax.enable_x64(True):
        for adapter in (kv, kve):
            assert jax.grad(adapter, (0, 1))(0.5, 0.0) == (np.inf, -np.inf)
            assert jax.jit(jax.jacfwd(adapter, (0, 1)))(0.5, 0.0) == (np.inf, -np.inf)
