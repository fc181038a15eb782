"""The quantile adapters ``gammaincinv`` and ``betaincinv``: values against Boost's tables
and mpmath, derivatives in the probability against the reciprocal density and its
derivatives in mpmath, finite slopes at extreme shapes, the derivatives in the shapes
against mpmath's implicit derivative and central differences, NaN outside the domain, and
``check_adapter``."""

import jax
import mpmath
import numpy as np
import pytest
import scipy.special
import scipy.stats
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
        # (jitted: eager, each operation of the nested rules compiles on its own, 30x slower)
        got = [float(jax.jit(f)(1.0, 0.0)) for f in (gammaincinv, d1, d2, d3)]
        assert got == [0.0, 1.0, 1.0, 2.0]


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


def _newton_root(cdf, density, target, start):
    """The root of ``cdf(x) = target`` at 30 digits by Newton's method in ``log x`` from
    SciPy's float64 quantile ``start`` (16 digits: three steps give 30)."""
    t = mpmath.log(mpmath.mpf(start))
    for _ in range(4):
        x = mpmath.exp(t)
        t -= (cdf(x) - target) / (density(x) * x)
    return mpmath.exp(t)


def _gamma_shape_reference(a, p):
    """``∂x/∂a`` of the root of ``P(a, x) = p`` at 30 digits: the root (``P`` from the
    complement's side when ``p > 1/2``), then ``-(∂P/∂a)/f(x)`` with ``∂P/∂a`` by
    ``mp.diff``."""
    a, p = mpmath.mpf(a), mpmath.mpf(p)

    def cdf(s, x):
        if p > 0.5:
            return 1 - mpmath.gammainc(s, x, mpmath.inf, regularized=True)
        return mpmath.gammainc(s, 0, x, regularized=True)

    def density(x):
        return mpmath.exp((a - 1) * mpmath.log(x) - x - mpmath.loggamma(a))

    start = scipy.special.gammaincinv(float(a), float(p))
    x = _newton_root(lambda x: cdf(a, x), density, p, start)
    return mp_float(-mpmath.diff(lambda s: cdf(s, x), a) / density(x))


def _beta_shape_reference(a, b, y):
    """``(∂x/∂a, ∂x/∂b)`` of the root of ``I_x(a, b) = y`` at 30 digits, as above; where
    ``x > 1/2`` in terms of ``u = 1 - x`` (the root of ``I_u(b, a) = 1 - y``), which 30
    digits of ``x`` near 1 would not carry."""
    a, b, y = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(y)
    upper = scipy.special.betaincinv(float(a), float(b), float(y)) > 0.5
    s, t, target = (b, a, 1 - y) if upper else (a, b, y)  # u, the smaller side, is I⁻¹(s, t)

    def density(u):
        return u ** (s - 1) * (1 - u) ** (t - 1) / mpmath.beta(s, t)

    start = scipy.special.betaincinv(float(s), float(t), float(target))
    complement = 1 - scipy.special.betaincinv(float(a), float(b), float(y))
    if upper and float(y) < 0.5 and complement > 0:  # 1 - y lost y's digits: start at 1 - x
        start = complement
    u = _newton_root(lambda u: mpmath.betainc(s, t, 0, u, regularized=True), density, target, start)
    du = [
        -mpmath.diff(lambda z: mpmath.betainc(z, t, 0, u, regularized=True), s) / density(u),
        -mpmath.diff(lambda z: mpmath.betainc(s, z, 0, u, regularized=True), t) / density(u),
    ]
    # x = 1 - u with the roles of a and b swapped: ∂x/∂a = -∂u/∂t, ∂x/∂b = -∂u/∂s
    return [mp_float(-du[1]), mp_float(-du[0])] if upper else [mp_float(d) for d in du]


# the moderate, tiny (1e-3) and large (1e4) shapes, with the probabilities in both tails;
# points whose quantile underflows to 0 are left out (there the derivative underflows too),
# not those whose x rounds to 1 (the derivative comes from the accurate 1 - x)
GAMMA_SHAPE_POINTS = [
    (a, p)
    for a in (2.5, 1e-3, 1e4)
    for p in (1e-12, 0.3, 0.9, 1 - 1e-12)
    if scipy.special.gammaincinv(a, p) > 1e-300
]
BETA_SHAPE_POINTS = [
    (a, b, y)
    for a, b in ((2.0, 3.5), (0.5, 0.5), (1e-3, 2.0), (2.0, 1e-3), (1e4, 30.0), (30.0, 1e4))
    for y in (1e-12, 0.3, 0.9, 1 - 1e-12)
    if scipy.special.betaincinv(a, b, y) > 1e-300
]


def test_shape_derivatives_match_mpmath():
    """Reverse and forward mode, batched, against the implicit derivative at 30 digits.
    Measured: below 7.1e-13 for shapes up to 30 (tails included); 9.1e-12 for gammaincinv
    at a = 1e4 and 2.2e-11 for betaincinv with a shape of 1e4, where the slope's log Γ(a)
    and log B(a, b) are SciPy's (``betaln(1e4, 30)`` is off by 2.1e-11 absolute)."""
    with jax.enable_x64(True):
        a, p = np.array(GAMMA_SHAPE_POINTS).T
        expected = [_gamma_shape_reference(*point) for point in GAMMA_SHAPE_POINTS]
        reverse = jax.jit(jax.vmap(jax.grad(gammaincinv)))(a, p)
        forward = jax.jit(jax.jvp, static_argnums=0)(
            gammaincinv, (a, p), (np.ones_like(a), np.zeros_like(p))
        )[1]
        np.testing.assert_allclose(reverse, expected, rtol=3e-11, atol=0)
        np.testing.assert_allclose(forward, reverse, rtol=1e-15, atol=0)
        a, b, y = np.array(BETA_SHAPE_POINTS).T
        expected = np.array([_beta_shape_reference(*point) for point in BETA_SHAPE_POINTS])
        reverse = np.array(jax.jit(jax.vmap(jax.grad(betaincinv, (0, 1))))(a, b, y)).T
        np.testing.assert_allclose(reverse, expected, rtol=3e-11, atol=0)
        for i, tangent in enumerate(np.eye(2)):
            tangents = (np.full_like(a, tangent[0]), np.full_like(b, tangent[1]), 0 * y)
            forward = jax.jit(jax.jvp, static_argnums=0)(betaincinv, (a, b, y), tangents)[1]
            np.testing.assert_allclose(forward, reverse[:, i], rtol=1e-15, atol=0)


def _central(f, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h * args[i]
    down[i] -= h * args[i]
    return (f(*up) - f(*down)) / (2 * h * args[i])


def _nested_jvp(f, args, i, j):
    """``∂²f/∂args[j]∂args[i]``: a jvp in ``args[j]`` of a jvp in ``args[i]`` alone."""

    def along(k, g):
        return lambda v, *rest: g(*rest[:k], v, *rest[k:])

    def inner(*a):
        return jax.jvp(lambda v: f(*a[:i], v, *a[i + 1 :]), (a[i],), (1.0,))[1]

    rest = args[:j] + args[j + 1 :]
    return jax.jvp(lambda v: along(j, inner)(v, *rest), (args[j],), (1.0,))[1]


@pytest.mark.parametrize(
    ("adapter", "reference", "args"),
    [
        (gammaincinv, scipy.special.gammaincinv, (2.5, 0.3)),
        pytest.param(betaincinv, scipy.special.betaincinv, (2.0, 3.5, 0.7), marks=pytest.mark.slow),
    ],
    ids=["gammaincinv", "betaincinv"],
)
def test_first_and_mixed_second_derivatives_against_central_differences(adapter, reference, args):
    """The shapes' first derivatives (of SciPy's quantile) and the mixed ``∂²x/∂θ∂p`` (of
    SciPy's ``1/f(x)``, the slope, by ``scipy.stats``) by central differences, in both
    modes; ``∂²x/∂θ²`` is NaN (not implemented), never a silent number."""
    last = len(args) - 1
    density = scipy.stats.gamma.pdf if adapter is gammaincinv else scipy.stats.beta.pdf

    def slope(*a):
        return 1 / density(reference(*a), *a[:-1])

    every = tuple(range(len(args)))
    with jax.enable_x64(True):
        grad = jax.jit(jax.grad(adapter, every))(*args)
        reverse = jax.jit(jax.hessian(adapter, every))(*args)  # forward over reverse
        # forward over forward, the inner derivative in one argument alone (a zero tangent
        # in a shape, explicit or in jacfwd's batched basis, meets the NaN of the shapes'
        # second derivative: 0 NaN is NaN, and the whole row is NaN)
        forward = jax.jit(
            lambda *a: [[_nested_jvp(adapter, a, i, j) for j in every] for i in every]
        )(*args)
    for i in range(last):
        np.testing.assert_allclose(grad[i], _central(reference, args, i), rtol=1e-7)
        for second in (reverse, forward):
            np.testing.assert_allclose(second[i][last], _central(slope, args, i), rtol=1e-6)
            np.testing.assert_allclose(second[last][i], second[i][last], rtol=1e-13)
            assert all(np.isnan(second[i][j]) for j in range(last))


# ---------------------------------------------------------------- the kit's checks


@pytest.mark.slow
def test_check_adapter():
    """The shapes free (first order: no hessian check, their second derivative is NaN), and
    held fixed as integers (every check); p in (0, 1)."""
    with jax.enable_x64(True):
        first_order = ("specs", "jit", "grad", "jvp", "transpose", "vmap")
        check_adapter(
            gammaincinv, np.array([0.7, 2.0, 5.5]), np.array([0.1, 0.5, 0.9]), checks=first_order
        )
        check_adapter(
            betaincinv,
            np.array([0.7, 2.0, 5.5]),
            np.array([3.0, 1.5, 0.8]),
            np.array([0.1, 0.5, 0.9]),
            checks=first_order,
        )
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
        got1 = float(jax.jit(d1)(0.5, 0.5, y))
        got2 = float(jax.jit(jax.grad(d1, argnums=2))(0.5, 0.5, y))
        got2_fwd = float(jax.jit(jax.jacfwd(jax.jacfwd(betaincinv, 2), 2))(0.5, 0.5, y))
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
