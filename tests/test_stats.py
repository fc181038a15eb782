"""``jaxbridge.adapters.stats``: values as SciPy's (tails, tiny and large shapes, invalid
parameters), derivatives in every argument against mpmath at 30 digits (the shapes) and
central differences of SciPy (all), second derivatives in ``x``/``q``, and ``check_adapter``
on every method with the shapes free (the property suite holds them fixed)."""

from __future__ import annotations

import jax
import mpmath as mp
import numpy as np
import pytest
import scipy.stats

from jaxbridge.adapters import stats
from jaxbridge.testing import check_adapter

mp.mp.dps = 30

KINDS = tuple(stats.t.adapters)  # cdf, sf, logcdf, logsf, ppf, isf: the same for every family

SHAPES = {  # a moderate, a tiny and a large value of each family's shapes
    "t": [(3.5,), (0.05,), (1e4,)],
    "gamma": [(2.5,), (1e-3,), (1e4,)],
    "chi2": [(3.0,), (1e-3,), (1e4,)],
    "invgamma": [(2.5,), (1e-3,), (1e4,)],
    "beta": [(2.0, 3.5), (1e-3, 2.0), (1e4, 30.0)],
    "f": [(3.0, 7.0), (1e-3, 5.0), (400.0, 30.0)],
}
PROBABILITIES = (1e-12, 0.3, 0.5, 0.9, 1 - 1e-12)


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _mp_cdf(name, shapes, z, upper=False):
    """The standardized cdf (``upper``: the sf) with mpmath, each computed as its smaller
    side would be."""
    reg = {"regularized": True}
    if name == "gamma":
        return mp.gammainc(shapes[0], *((z, mp.inf) if upper else (0, z)), **reg)
    if name == "chi2":
        return mp.gammainc(shapes[0] / 2, *((z / 2, mp.inf) if upper else (0, z / 2)), **reg)
    if name == "invgamma":
        return mp.gammainc(shapes[0], *((0, 1 / z) if upper else (1 / z, mp.inf)), **reg)
    if name in ("beta", "f"):  # I_x(a, b) from the smaller of x and y = 1 - x
        a, b = shapes if name == "beta" else (shapes[0] / 2, shapes[1] / 2)
        x, y = (z, 1 - z) if name == "beta" else (a * z / (a * z + b), b / (a * z + b))
        lower = mp.betainc(a, b, 0, x, **reg) if x < 0.5 else 1 - mp.betainc(b, a, 0, y, **reg)
        return 1 - lower if upper else lower
    (v,) = shapes
    tail = mp.betainc(v / 2, mp.mpf(1) / 2, 0, v / (v + z * z), **reg) / 2
    if (z < 0) != upper:
        return tail
    return 1 - tail


def _mp_shape_derivatives(name, shapes, z, upper):
    shapes = [mp.mpf(s) for s in shapes]
    z = mp.mpf(z)
    return [
        mp.diff(
            lambda s, i=i: _mp_cdf(name, [*shapes[:i], s, *shapes[i + 1 :]], z, upper), shapes[i]
        )
        for i in range(len(shapes))
    ]


def _cases():
    for name, grid in SHAPES.items():
        for shapes in grid:
            for q in PROBABILITIES:
                with np.errstate(all="ignore"):
                    x = getattr(scipy.stats, name).ppf(q, *shapes)
                # not where the quantile underflowed to the support's end (a tiny shape's
                # lower quantiles), nor beyond 1e30, where mpmath's 30 digits see 1 - x = 1
                if 1e-300 < abs(x) < 1e30 or (x == 0 and name == "t"):
                    yield pytest.param(name, shapes, q, float(x), id=f"{name}-{shapes}-{q}")


@pytest.mark.parametrize(("name", "shapes", "q", "x"), list(_cases()))
def test_values_and_shape_derivatives_against_scipy_and_mpmath(name, shapes, q, x):
    dist, ref = getattr(stats, name), getattr(scipy.stats, name)
    loc, scale = 0.25, 1.5
    point = loc + scale * x
    for kind in ("cdf", "sf", "logcdf", "logsf"):
        np.testing.assert_array_equal(
            getattr(dist, kind)(point, *shapes, loc=loc, scale=scale),
            getattr(ref, kind)(point, *shapes, loc=loc, scale=scale),
        )
    for kind in ("ppf", "isf"):
        p = q if kind == "ppf" else 1 - q
        got = getattr(dist, kind)(p, *shapes, loc=loc, scale=scale)
        scipy_value = getattr(ref, kind)(p, *shapes, loc=loc, scale=scale)
        if name == "t" and abs(p - 0.5) <= 0.25:  # refined there (the test below)
            np.testing.assert_allclose(got, scipy_value, rtol=1e-13)
        else:
            np.testing.assert_array_equal(got, scipy_value)
    # the shapes' derivatives: of the cdf and sf at x, and of the quantiles at q
    upper = q > 0.5
    want = [float(w) for w in _mp_shape_derivatives(name, shapes, x, upper)]
    density = ref.pdf(x, *shapes)
    argnums = tuple(range(1, 1 + len(shapes)))
    kind = "sf" if upper else "cdf"
    got = jax.grad(lambda *a: getattr(dist, kind)(a[0], *a[1:]), argnums)(x, *shapes)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)
    # ppf at q = cdf(x) (isf at sf(x)): ∂x/∂θ = -(∂F/∂θ)/f = (∂S/∂θ)/f
    p = ref.sf(x, *shapes) if upper else ref.cdf(x, *shapes)
    quantile = "isf" if upper else "ppf"
    got = jax.grad(lambda *a: getattr(dist, quantile)(a[0], *a[1:]), argnums)(p, *shapes)
    sign = 1 if upper else -1
    np.testing.assert_allclose(got, [sign * w / density for w in want], rtol=1e-10, atol=0)


@pytest.mark.parametrize("df", [0.5, 1.0, 4.0, 30.0])
def test_t_quantiles_near_the_median_are_accurate_relatively(df):
    """Near q = 1/2 the t quantile is near 0, where SciPy's is accurate in absolute terms
    only (at df = 4: 3.8e-5 relative off at q = 0.5 + 1e-6, 100% at 0.5 + 1e-9; measured
    against mpmath); ours is refined by a step on F - 1/2 written without
    cancellation: relative accuracy at every distance from the median (3e-16 at most
    measured here; SciPy's value fails at df = 1, 4 and 30, and a Newton step from it was
    2e-11 off at df = 4, q = 0.5 - 1e-13)."""

    def exact_ppf(q):  # at 60 digits: findroot's tolerance is absolute, and z is ~1e-12
        with mp.workdps(60):
            excess = lambda z: _mp_cdf("t", [mp.mpf(df)], z) - mp.mpf(q)  # noqa: E731
            return mp.findroot(excess, mp.mpf((q - 0.5) * 2.5))

    for offset in (-1e-13, 1e-12, 1e-9, 1e-6, -1e-5, 1e-3, -0.1, 0.25):
        q = 0.5 + offset
        want = float(exact_ppf(q))
        np.testing.assert_allclose(stats.t.ppf(q, df), want, rtol=1e-15)
        p = 1 - q  # isf(p) = ppf(1 - p) = -ppf(p) for the t
        np.testing.assert_allclose(stats.t.isf(p, df), -float(exact_ppf(p)), rtol=1e-15)


def _central(f, args, i):
    h = 1e-6 * max(1.0, abs(args[i]))
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (f(*up) - f(*down)) / (2 * h)


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_every_derivative_against_central_differences_of_scipy(name, kind):
    dist, ref = getattr(stats, name), getattr(scipy.stats, name)
    shapes = SHAPES[name][0]
    first = 0.3 if kind in ("ppf", "isf") else float(ref.ppf(0.3, *shapes)) * 1.5 + 0.25

    def ours(*a):
        return getattr(dist, kind)(a[0], *a[1:-2], loc=a[-2], scale=a[-1])

    def theirs(*a):
        return getattr(ref, kind)(a[0], *a[1:-2], loc=a[-2], scale=a[-1])

    args = (first, *shapes, 0.25, 1.5)
    grad = jax.grad(ours, tuple(range(len(args))))(*args)
    for i in range(len(args)):
        np.testing.assert_allclose(grad[i], _central(theirs, args, i), rtol=2e-6)
        tangent = tuple(float(j == i) for j in range(len(args)))
        np.testing.assert_allclose(jax.jvp(ours, args, tangent)[1], grad[i], rtol=1e-13)


@pytest.mark.parametrize("name", SHAPES)
def test_second_derivatives_in_q_and_x(name):
    """``d²x/dq² = -f'(x)/f(x)³`` through ``ppf``, ``d²F/dx² = f'`` through ``cdf``, with
    ``f'`` by central differences of SciPy's pdf."""
    dist, ref = getattr(stats, name), getattr(scipy.stats, name)
    shapes = SHAPES[name][0]
    q = 0.3
    x = ref.ppf(q, *shapes)
    slope = _central(lambda x: ref.pdf(x, *shapes), [x], 0)
    density = ref.pdf(x, *shapes)
    # (jitted: eager, each operation of the nested rules compiles on its own)
    second = jax.jit(jax.grad(jax.grad(lambda q: dist.ppf(q, *shapes))))(q)
    np.testing.assert_allclose(second, -slope / density**3, rtol=1e-6)
    second = jax.jit(jax.hessian(lambda x: dist.cdf(x, *shapes)))(x)
    np.testing.assert_allclose(second, slope, rtol=1e-6)
    third = jax.jit(jax.jacfwd(jax.jacfwd(jax.grad(lambda x: dist.logsf(x, *shapes)))))(x)
    assert np.isfinite(third)


def test_invalid_parameters_give_nan():
    for name, shapes in [("t", (3.0,)), ("gamma", (2.0,)), ("beta", (2.0, 3.0)), ("f", (3.0, 4.0))]:
        dist = getattr(stats, name)
        bad = [(-1.0,) + shapes[1:], (np.nan,) + shapes[1:]]
        for kind in KINDS:
            method = getattr(dist, kind)
            assert np.isnan(method(0.5, *shapes, scale=-1.0))
            assert np.isnan(method(0.5, *shapes, scale=0.0))
            for b in bad:
                assert np.isnan(method(0.5, *b)), (name, kind, b)
        assert np.isnan(dist.ppf(1.5, *shapes)) and np.isnan(dist.isf(-0.1, *shapes))
        grad = jax.grad(dist.cdf, argnums=1)(0.5, -1.0, *shapes[1:])
        assert np.isnan(grad)


def test_outside_the_support():
    np.testing.assert_array_equal(stats.gamma.cdf(-1.0, 2.0), 0.0)
    np.testing.assert_array_equal(stats.beta.sf(1.5, 2.0, 3.0), 0.0)
    np.testing.assert_array_equal(jax.grad(stats.gamma.cdf, argnums=(0, 1))(-1.0, 2.0), (0.0, 0.0))


def test_broadcasting_and_vmap():
    q = np.linspace(0.1, 0.9, 6).reshape(2, 3)
    df = np.array([1.5, 4.0, 30.0])
    got = stats.t.ppf(q, df, loc=1.0)
    one_by_one = [[stats.t.ppf(q[i, j], df[j], loc=1.0) for j in range(3)] for i in range(2)]
    np.testing.assert_array_equal(got, np.array(one_by_one))
    # the standardized quantile (refined near the median) is SciPy's to rounding here; with
    # loc = 1 added, a value near -1 would turn its few ulp into a larger relative difference
    np.testing.assert_allclose(stats.t.ppf(q, df), scipy.stats.t.ppf(q, df), rtol=1e-15)
    np.testing.assert_allclose(got, stats.t.ppf(q, df) + 1.0, rtol=0, atol=0)
    grad = jax.vmap(jax.grad(stats.t.ppf, argnums=1), in_axes=(0, None))(q[0], 4.0)
    each = [jax.grad(stats.t.ppf, argnums=1)(qi, 4.0) for qi in q[0]]
    np.testing.assert_allclose(grad, each, rtol=1e-14)


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_check_adapter_with_free_shapes(name, kind):
    adapter = getattr(stats, name).adapters[kind]
    rng = np.random.default_rng(1)
    shapes = [rng.uniform(1.0, 6.0, 2) for _ in SHAPES[name][0]]
    x = adapter.domains["x"](rng.uniform(-0.8, 0.8, 2))
    check_adapter(adapter, *shapes, x, checks=("specs", "jit", "grad", "jvp", "transpose"))


def test_t_at_infinite_df_is_the_normal():
    """SciPy's ``t(df=inf)`` is the standard normal. ``ppf``/``isf`` within 1/4 of the median
    were about twice the quantile (the refinement near the median computed inf/inf), and
    every derivative was NaN (the density's ``inf * 0``); ``∂/∂df`` is 0, its limit."""
    normal = scipy.stats.norm
    grad = {kind: jax.jit(jax.grad(getattr(stats.t, kind), (0, 1))) for kind in KINDS}
    density_grad = jax.jit(jax.grad(jax.grad(stats.t.cdf), (0, 1)))
    for q in (1e-10, 0.3, 0.5 + 1e-9, 0.7, 1 - 1e-10):
        np.testing.assert_allclose(stats.t.ppf(q, np.inf), normal.ppf(q), rtol=1e-15)
        np.testing.assert_allclose(stats.t.isf(q, np.inf), normal.isf(q), rtol=1e-15)
        for kind, sign in (("ppf", 1), ("isf", -1)):
            dq, ddf = grad[kind](q, np.inf)
            x = getattr(normal, kind)(q)
            np.testing.assert_allclose(dq, sign / normal.pdf(x), rtol=1e-13)
            assert ddf == 0
    density = {
        "cdf": lambda x: normal.pdf(x),
        "sf": lambda x: -normal.pdf(x),
        "logcdf": lambda x: normal.pdf(x) / normal.cdf(x),
        "logsf": lambda x: -normal.pdf(x) / normal.sf(x),
    }
    for x in (-3.0, -0.7, 0.0, 1.2):
        for kind, slope in density.items():
            method = getattr(stats.t, kind)
            # (SciPy's t at df = inf is its normal to 1.6e-15)
            np.testing.assert_allclose(method(x, np.inf), getattr(normal, kind)(x), rtol=1e-14)
            dx, ddf = grad[kind](x, np.inf)
            np.testing.assert_allclose(dx, slope(x), rtol=1e-14)
            assert ddf == 0
        # the density's derivatives: in x (d²F/dx² = -x φ) and in df (0, the limit)
        in_x, in_df = density_grad(x, np.inf)
        np.testing.assert_allclose(in_x, -x * normal.pdf(x), rtol=1e-14, atol=1e-300)
        assert in_df == 0


def _mp_t_df_derivative(df, z):
    """``∂F(z; ν)/∂ν`` with mpmath at 80 digits (at ``ν = 1e12`` and ``z = 2.5e-7`` it is
    2.5e-32 beside ``F = 1/2``: 50 digits left it 1.6e-12 off)."""
    with mp.workdps(80):
        return float(mp.diff(lambda v: _mp_cdf("t", [v], mp.mpf(z)), mp.mpf(df)))


def _mp_t_density(df, z):
    with mp.workdps(50):
        v, x = mp.mpf(df), mp.mpf(z)
        norm = mp.gamma((v + 1) / 2) / (mp.sqrt(v * mp.pi) * mp.gamma(v / 2))
        return float(norm * (1 + x * x / v) ** (-(v + 1) / 2))


_T_CDF_GRAD = jax.jit(jax.grad(stats.t.cdf, (0, 1)))
_T_SF_GRAD = jax.jit(jax.grad(stats.t.sf, (0, 1)))
_T_PPF_DF = jax.jit(jax.grad(stats.t.ppf, 1))
_T_ISF_DF = jax.jit(jax.grad(stats.t.isf, 1))


# (mpmath's betainc at 80 digits takes a minute for these)
_SLOW_MPMATH = pytest.mark.slow


@pytest.mark.parametrize(
    "df",
    [
        30.0,
        300.0,
        1e4,
        1e6,
        pytest.param(1e8, marks=_SLOW_MPMATH),
        pytest.param(1e12, marks=_SLOW_MPMATH),
    ],
)
def test_t_df_derivatives_at_large_df_against_mpmath(df):
    """``∂F/∂ν`` is of size ``1/ν²``, and its textbook form ``½(½ ∂I_x(ν/2, ½)/∂a +
    b(x) x y/ν)`` two terms of size ``1/ν``: it was 6e-10 relative off at ``ν = 1e3``, 1e-4
    to 5e-4 at 1e6, 0.2 at 1e8; by quadrature from ``ν = 100`` on, 6e-14 at worst measured.
    The density too: SciPy's ``betaln`` in its normalizer was 2e-10 off at ``ν = 1e6``."""
    for z in (-30.0, -3.0, -1.56, -0.5, 1e-6, 2.0):
        want, density = _mp_t_df_derivative(df, z), _mp_t_density(df, z)
        sign = 1 if z < 0 else -1  # the cdf's derivatives, or the sf's
        dx, ddf = (_T_CDF_GRAD if z < 0 else _T_SF_GRAD)(z, df)
        np.testing.assert_allclose(ddf, sign * want, rtol=1e-12)
        # (its logarithm is -450 at z = -30: eps times that, relatively)
        np.testing.assert_allclose(dx, sign * density, rtol=1e-13)
    for q in (1e-20, 0.02, 0.3, 0.5 + 1e-7, 0.9):
        x = float(stats.t.ppf(q, df))  # the derivative is the one at this quantile
        want = -_mp_t_df_derivative(df, x) / _mp_t_density(df, x)
        np.testing.assert_allclose(_T_PPF_DF(q, df), want, rtol=1e-12)
        # isf(q) = -ppf(q): the t is symmetric
        np.testing.assert_allclose(_T_ISF_DF(q, df), -want, rtol=1e-12)


_F_GRAD = {kind: jax.jit(jax.grad(getattr(stats.f, kind), (1, 2))) for kind in KINDS}


@pytest.mark.parametrize(
    ("dfn", "dfd", "x"),
    [
        (1e5, 3.0, 1.3),  # the cases (#54)
        (3.0, 1e6, 0.6),
        (2e3, 7.0, 0.05),
        (2e3, 3e3, 1.05),
        pytest.param(1e4, 1e4, 1.01, marks=_SLOW_MPMATH),  # (20 s of mpmath each)
        pytest.param(1e4, 1e4, 0.95, marks=_SLOW_MPMATH),
        (600.0, 3e5, 0.9),
        (1e5, 3.0, 30.0),  # the upper tail
        (150.0, 200.0, 0.7),
        (0.5, 2e4, 3.0),  # a small shape beside a large one
    ],
)
def test_f_shape_derivatives_at_large_df_against_mpmath(dfn, dfd, x):
    """The f's shape derivatives are of size ``1/d²`` where the textbook form is two terms of
    size ``1/d``: that lost 1e-11 relative at 300 degrees of freedom, 6e-10 at 1e3, 1e-5 at
    1e5, and was NaN by rule beyond 500. By quadrature of ``f ∂(log f)/∂θ`` from 100 on:
    5e-15 at worst measured here. The quantiles' derivatives ``-(∂F/∂θ)/f`` carry the
    density's own error (its log-kernel and ``betaln`` cancel: 4e-11 at 1e5, 5e-10 at 1e6)."""
    with mp.workdps(50):  # (30 digits left the tail's 1e-29 at (2e3, 7, 0.05) 9e-13 off)
        want = [float(w) for w in _mp_shape_derivatives("f", (dfn, dfd), x, upper=False)]
        cdf = float(_mp_cdf("f", [mp.mpf(dfn), mp.mpf(dfd)], mp.mpf(x)))
        sf = float(_mp_cdf("f", [mp.mpf(dfn), mp.mpf(dfd)], mp.mpf(x), upper=True))
    density = scipy.stats.f.pdf(x, dfn, dfd)
    np.testing.assert_allclose(_F_GRAD["cdf"](x, dfn, dfd), want, rtol=1e-13, atol=0)
    np.testing.assert_allclose(_F_GRAD["sf"](x, dfn, dfd), [-w for w in want], rtol=1e-13)
    np.testing.assert_allclose(_F_GRAD["logcdf"](x, dfn, dfd), [w / cdf for w in want], rtol=1e-12)
    np.testing.assert_allclose(_F_GRAD["logsf"](x, dfn, dfd), [-w / sf for w in want], rtol=1e-12)
    # the quantiles at F(x) and S(x) (where that is not 1 rounded): ∂x/∂θ = -(∂F/∂θ)/f
    slope = [-w / density for w in want]
    if cdf < 0.999:
        np.testing.assert_allclose(_F_GRAD["ppf"](cdf, dfn, dfd), slope, rtol=1e-8)
    if sf < 0.999:
        np.testing.assert_allclose(_F_GRAD["isf"](sf, dfn, dfd), slope, rtol=1e-8)


def test_nan_values_have_nan_derivatives_and_forward_mode_matches_reverse():
    """Where SciPy's value is NaN (``q`` outside [0, 1]) every derivative is NaN, in both
    modes: ``∂x/∂q`` was ±inf there (#54). And each column of ``jacfwd`` is ``grad``'s entry:
    at ``q = 0`` and ``1``, ``∂x/∂q = ±inf`` (the density is 0 at the support's ends) beside
    a NaN shape derivative, whose explicit zero tangent made ``jacfwd``'s ``q`` column NaN."""
    for method, shapes in ((stats.gamma.ppf, (2.0,)), (stats.beta.isf, (2.0, 3.0))):
        args = (1.2, *shapes)
        argnums = tuple(range(len(args)))
        assert np.isnan(method(*args))
        assert np.isnan(jax.grad(method, argnums)(*args)).all()
        assert np.isnan(jax.jit(jax.jacfwd(method, argnums))(*args)).all()
    # gamma(2): x ~ √(2q) at q = 0, x ~ -log(1 - q) at q = 1: dx/dq = +inf at both
    for q in (0.0, 1.0):
        assert jax.grad(stats.gamma.ppf)(q, 2.0) == np.inf
        assert jax.jit(jax.jacfwd(stats.gamma.ppf))(q, 2.0) == np.inf
        assert jax.jvp(stats.gamma.ppf, (q, 2.0), (1.0, 0.0))[1] == np.inf
