"""The quantile adapters ``gammaincinv`` and ``betaincinv``: values against Boost's tables
and mpmath, derivatives in the probability against the reciprocal density and its
derivatives in mpmath, finite slopes at extreme shapes, the error for a shape parameter,
NaN outside the domain, and ``check_adapter``."""

import jax
import mpmath
import numpy as np
import pytest
import scipy.special
from _special_references import EPS, boost, finite_and_normal, mp_float

from jaxbridge.adapters.special import Betaincinv, Gammaincinv, betaincinv, gammaincinv
from jaxbridge.testing import check_adapter


def _gamma_density(a):
    return lambda x: x ** (a - 1) * mpmath.exp(-x) / mpmath.gamma(a)


def _beta_density(a, b):
    return lambda x: x ** (a - 1) * (1 - x) ** (b - 1) / mpmath.beta(a, b)


def _quantile_derivatives(density, x):
    """dx/dp, d²x/dp², d³x/dp³ of the quantile at ``x``, from the density f at 30 digits:
    x' = 1/f, x'' = -f'/f³, x''' = (3f'² - f f'')/f⁵."""
    f, f1, f2 = (mpmath.diff(density, mpmath.mpf(x), n) for n in range(3))
    return [mp_float(d) for d in (1 / f, -f1 / f**3, (3 * f1**2 - f * f2) / f**5)]


GAMMA_POINTS = [(0.5, 0.1), (2.5, 0.6), (10.0, 0.9), (1.0, 0.5), (100.0, 0.5)]
BETA_POINTS = [
    (0.5, 2.0, 0.1),
    (2.5, 1.5, 0.3),
    (10.0, 3.0, 0.9),
    (1.0, 1.0, 0.5),
    (80.0, 40.0, 0.6),
]


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("table", "rtol"),
    # SciPy's own tolerances for these tables; measured: 1.0e-15, 1.6e-12, 2.2e-16
    [("gamma_inv_data", 1e-14), ("gamma_inv_small_data", 1e-11), ("gamma_inv_big_data", 1e-11)],
)
def test_gammaincinv_matches_boost_tables(table, rtol):
    a, p, expected, _ = boost(table).T  # columns: a, p, gammaincinv, gammainccinv
    with jax.enable_x64(True):
        got = np.asarray(jax.vmap(gammaincinv)(a, p))  # eager: XLA would flush subnormals
    np.testing.assert_array_equal(got, scipy.special.gammaincinv(a, p))  # the bridge adds nothing
    kept = finite_and_normal(expected)
    np.testing.assert_allclose(got[kept], expected[kept], rtol=rtol, atol=0)
    assert np.all(got[expected == 0] == 0)


def test_betaincinv_matches_boost_table():
    """Boost's ibeta_inv_data (shapes from 1e-5 to 2e5): the normal-range rows within 1e-11
    (measured 1.9e-12 at the most extreme shapes, 0 for the median); rows whose value
    underflows give at most the smallest normal number."""
    a, b, y, expected, _ = boost("ibeta_inv_data").T  # a, b, y, betaincinv, betainccinv
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(betaincinv)(a, b, y))
    kept = finite_and_normal(expected)
    assert kept.sum() > 1000
    np.testing.assert_allclose(got[kept], expected[kept], rtol=1e-11, atol=0)
    assert np.all(got[expected == 0] <= np.finfo(np.float64).tiny)


def test_values_match_mpmath():
    """The root of P(a, x) = p (and I_x(a, b) = y) at 30 digits: within 2 ulps (measured 1)."""
    a, p = np.array(GAMMA_POINTS).T
    with jax.enable_x64(True):
        got = np.asarray(gammaincinv(a, p))
    expected = [
        mp_float(mpmath.findroot(lambda t: mpmath.gammainc(u, 0, t, regularized=True) - q, x))
        for u, q, x in zip(a, p, got)
    ]
    np.testing.assert_allclose(got, expected, rtol=2 * EPS, atol=0)
    a, b, y = np.array(BETA_POINTS).T
    with jax.enable_x64(True):
        got = np.asarray(betaincinv(a, b, y))
    expected = [
        mp_float(mpmath.findroot(lambda t: mpmath.betainc(u, w, 0, t, regularized=True) - q, x))
        for u, w, q, x in zip(a, b, y, got)
    ]
    np.testing.assert_allclose(got, expected, rtol=2 * EPS, atol=0)


def test_outside_the_domain_is_nan_as_in_scipy():
    with jax.enable_x64(True):
        got = gammaincinv(
            np.array([2.0, 2.0, 0.0, -1.0, 2.0, 2.0]), np.array([-0.1, 1.1, 0.5, 0.5, 0.0, 1.0])
        )
        np.testing.assert_array_equal(got, [np.nan, np.nan, np.nan, np.nan, 0.0, np.inf])
        got = betaincinv(
            2.0, np.array([3.0, 3.0, 0.0, 3.0, 3.0]), np.array([-0.1, 1.1, 0.5, 0.0, 1.0])
        )
        np.testing.assert_array_equal(got, [np.nan, np.nan, np.nan, 0.0, 1.0])


# ---------------------------------------------------------------- derivatives


@pytest.mark.parametrize("which", ["gammaincinv", "betaincinv"])
def test_probability_derivatives_match_mpmath(which):
    """First, second and third derivatives in the probability, in both modes and mixed,
    under jit and vmap, against the reciprocal density and its derivatives at 30 digits."""
    if which == "gammaincinv":
        points, adapter = np.array(GAMMA_POINTS), gammaincinv
        densities = [_gamma_density(a) for a, _ in GAMMA_POINTS]
    else:
        points, adapter = np.array(BETA_POINTS), betaincinv
        densities = [_beta_density(a, b) for a, b, _ in BETA_POINTS]
    last = points.shape[1] - 1
    d1 = jax.grad(adapter, argnums=last)
    d2_rev = jax.grad(d1, argnums=last)
    d2_fwd = jax.jacfwd(jax.jacfwd(adapter, argnums=last), argnums=last)
    d2_hes = jax.hessian(adapter, argnums=last)
    d3 = jax.jacfwd(d2_rev, argnums=last)
    with jax.enable_x64(True):
        args = tuple(points.T)
        x = np.asarray(adapter(*args))
        got = jax.jit(jax.vmap(lambda *a: [f(*a) for f in (d1, d2_rev, d2_fwd, d2_hes, d3)]))(*args)
    expected = np.array([_quantile_derivatives(f, t) for f, t in zip(densities, x)]).T
    for i, n in enumerate((1, 2, 2, 2, 3)):
        np.testing.assert_allclose(got[i], expected[n - 1], rtol=1e-12, atol=0, err_msg=f"{n}")


def test_slopes_stay_finite_at_extreme_shapes():
    """Γ(1000) overflows float64, but the slope Γ(a) x^{1-a} e^x is computed in logs: finite,
    and equal to the reciprocal density at 30 digits."""
    a = np.array([1000.0, 1000.0, 0.01])
    p = np.array([1e-10, 0.5, 0.7])
    with jax.enable_x64(True):
        x = np.asarray(gammaincinv(a, p))
        slope = np.asarray(jax.vmap(jax.grad(gammaincinv, argnums=1))(a, p))
    expected = [mp_float(1 / _gamma_density(u)(mpmath.mpf(t))) for u, t in zip(a, x)]
    np.testing.assert_allclose(slope, expected, rtol=1e-12)


def test_the_exponential_quantile_at_zero_has_every_derivative():
    """gammaincinv(1, p) = -log(1 - p): derivatives 1, 1, 2 at p = 0, where x = 0 and the
    slope's x^(1-a) is 0^0 (its derivative came out 0/0 = NaN)."""
    with jax.enable_x64(True):
        d1 = jax.grad(gammaincinv, argnums=1)
        d2 = jax.grad(d1, argnums=1)
        d3 = jax.jacfwd(d2, argnums=1)
        assert [float(f(1.0, 0.0)) for f in (gammaincinv, d1, d2, d3)] == [0.0, 1.0, 1.0, 2.0]


def test_beta_quantiles_with_a_unit_shape_at_the_ends():
    """betaincinv(1, 1, y) = y, (1, 2, y) = 1 - sqrt(1 - y), (2, 1, y) = sqrt(y): at y = 0
    or 1 the slope's x^0 or (1 - x)^0 is 0^0, whose derivative came out NaN."""
    cases = [((1.0, 1.0, 0.0), 1.0, 0.0), ((1.0, 1.0, 1.0), 1.0, 0.0)]
    cases += [((1.0, 2.0, 0.0), 0.5, 0.25), ((2.0, 1.0, 1.0), 0.5, -0.25)]
    with jax.enable_x64(True):
        d1 = jax.grad(betaincinv, argnums=2)
        d2 = jax.grad(d1, argnums=2)
        for args, first, second in cases:
            assert (float(d1(*args)), float(d2(*args))) == (first, second), args


# ---------------------------------------------------------------- shape parameters


def test_differentiating_in_a_shape_parameter_raises():
    """A TypeError naming the function and the argument, in reverse and forward mode, and
    the probability alone is still differentiable with the shapes traced."""
    with jax.enable_x64(True):
        for attempt, message in (
            (lambda: jax.grad(gammaincinv)(2.0, 0.3), "gammaincinv .* argument 'a'"),
            (lambda: jax.jvp(gammaincinv, (2.0, 0.3), (1.0, 1.0)), "gammaincinv .* argument 'a'"),
            (lambda: jax.grad(betaincinv)(2.0, 3.0, 0.3), "betaincinv .* argument 'a'"),
            (lambda: jax.jit(jax.grad(betaincinv, 1))(2.0, 3.0, 0.3), "betaincinv .* argument 'b'"),
        ):
            with pytest.raises(TypeError, match=message):
                attempt()
        assert np.isfinite(jax.jit(jax.grad(gammaincinv, 1))(2.0, 0.3))
        assert np.isfinite(jax.jit(jax.grad(betaincinv, 2))(2.0, 3.0, 0.3))


# ---------------------------------------------------------------- the kit's checks


def test_check_adapter():
    """The shapes held fixed (as integers: they have no derivative); p in (0, 1)."""
    with jax.enable_x64(True):
        check_adapter(Gammaincinv(), np.array([1, 2, 5]), np.array([0.1, 0.5, 0.9]))
        check_adapter(
            Betaincinv(), np.array([1, 2, 5]), np.array([3, 1, 2]), np.array([0.1, 0.5, 0.9])
        )
    check_adapter(gammaincinv, np.array([2, 3], np.int32), np.array([0.2, 0.7], np.float32))


# ---------------------------------------------------------------- the ends, in logs


def _arcsine_quantile_derivatives(y):
    """betaincinv(1/2, 1/2, y) = sin²(πy/2): first and second derivatives (π/2) sin(πy) and
    (π²/2) cos(πy), at the float64 ``y`` exactly, 50 digits."""
    with mpmath.workdps(50):
        t = mpmath.pi * mpmath.mpf(y)
        return mp_float(mpmath.pi / 2 * mpmath.sin(t)), mp_float(mpmath.pi**2 / 2 * mpmath.cos(t))


@pytest.mark.parametrize("y", [1 - 1e-8, 1 - 1e-15, 1e-300, 0.3])
def test_betaincinv_derivatives_near_the_ends(y):
    """Near y = 1 the slope's (1 - x)^(1/2) was taken from the rounded x: 5% off at
    y = 1 - 1e-8 and exactly 0 at 1 - 1e-15 (true 4.9e-15); at y = 1e-300 x underflows to 0
    and the slope was 0, its derivative NaN. Now within 1e-14 relative of the closed form
    (measured 1.3e-15 and 2.7e-15), and 1e-12 where x underflows: there the slope is
    exp of (1 - a) log x with |log x| = 1381, whose rounding is 1381 eps = 3e-13 (measured
    1.1e-13)."""
    rtol = 1e-12 if y < 1e-200 else 1e-14
    first, second = _arcsine_quantile_derivatives(y)
    d1 = jax.grad(betaincinv, argnums=2)
    with jax.enable_x64(True):
        got1 = float(d1(0.5, 0.5, y))
        got2 = float(jax.grad(d1, argnums=2)(0.5, 0.5, y))
        got2_fwd = float(jax.jacfwd(jax.jacfwd(betaincinv, 2), 2)(0.5, 0.5, y))
    np.testing.assert_allclose(got1, first, rtol=rtol, atol=0)
    np.testing.assert_allclose([got2, got2_fwd], [second, second], rtol=rtol, atol=0)


def test_betaincinv_slope_near_one_with_unequal_shapes():
    """a = 2, b = 3 at y = 1 - 1e-12, where 1 - x is 6e-5 (the rounded x kept 12 digits of
    it): the reciprocal density at mpmath's root, 50 digits."""
    y = 1 - 1e-12
    with mpmath.workdps(50):
        target = mpmath.mpf(y)
        x = mpmath.findroot(
            lambda t: mpmath.betainc(2, 3, 0, t, regularized=True) - target, mpmath.mpf(0.99994)
        )
        expected = mp_float(1 / _beta_density(2, 3)(x))
    with jax.enable_x64(True):
        got = float(jax.grad(betaincinv, argnums=2)(2.0, 3.0, y))
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)


def test_gammaincinv_derivatives_where_x_underflows():
    """gammaincinv(1/2, p) = erfinv(p)²: at p = 1e-300, x = 7.9e-601 is 0 in float64; the
    first derivative was 0 (true π p / 2) and the second NaN (true π/2 + O(p²)). Now both,
    in both modes, within 1e-12 relative of mpmath (rounding of (1 - a) log x, |log x| =
    1381: measured 2e-14 and 1e-13)."""
    p = 1e-300
    with mpmath.workdps(60):
        # x' = sqrt(pi) e exp(e^2), x'' = (pi/2) (1 + 2 e^2) exp(2 e^2), e = erfinv(p)
        e = mpmath.erfinv(mpmath.mpf(p))
        first = mp_float(mpmath.sqrt(mpmath.pi) * e * mpmath.exp(e**2))
        second = mp_float(mpmath.pi / 2 * (1 + 2 * e**2) * mpmath.exp(2 * e**2))
    d1 = jax.grad(gammaincinv, argnums=1)
    with jax.enable_x64(True):
        assert float(gammaincinv(0.5, p)) == 0.0
        got = [float(d1(0.5, p)), float(jax.grad(d1, 1)(0.5, p))]
        got.append(float(jax.jacfwd(jax.jacfwd(gammaincinv, 1), 1)(0.5, p)))
    np.testing.assert_allclose(got, [first, second, second], rtol=1e-12, atol=0)
