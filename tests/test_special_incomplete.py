"""The incomplete gamma and beta functions' derivatives in their shapes
(``adapters/_shared/_shape_derivatives.py``) against mpmath at 30 digits, over shapes from 1e-3 to 1e4 and
points from the far lower tail to the far upper tail; and the adapters ``gammainc``,
``gammaincc``, ``betainc``: values as SciPy's, derivatives in every argument."""

from __future__ import annotations

import jax
import mpmath as mp
import numpy as np
import pytest
import scipy.special as sc
from _incomplete_references import BETA_REFERENCES

from jaxbridge.adapters import special

# internals on purpose: the shape derivatives are tested against mpmath on their own
from jaxbridge.adapters._shared._shape_derivatives import (
    _digamma_difference,
    betainc_dab,
    betaincc_dab,
    gammainc_da,
    gammaincc_da,
)
from jaxbridge.testing import check_adapter

mp.mp.dps = 30
SHAPES = (1e-3, 0.5, 2.0, 30.0, 1e4)


def test_digamma_difference_against_mpmath():
    """``ψ(s + d) - ψ(s)``, the beta derivatives' digamma terms, to near rounding where it
    is small beside the digammas (d tiny beside s: the plain difference cancels) and where
    s or s + d is below the asymptotic series' 10 (the recurrence): measured 6.7e-16 at
    most over 400 random points, 4.4e-16 at these."""
    s = np.array([1e4, 1e4, 1e-3, 1e-3, 26.0, 0.5, 3.0, 9.99, 2e4, 0.75])
    d = np.array([1e-3, -0.5, 1e-3, 5.0, -0.5, 1e4, -2.9, 0.02, -1.9e4, -0.5])
    expected = [
        float(mp.digamma(mp.mpf(a) + mp.mpf(b)) - mp.digamma(mp.mpf(a))) for a, b in zip(s, d)
    ]
    np.testing.assert_allclose(_digamma_difference(s, d), expected, rtol=2e-15, atol=0)


def _gamma_points():
    for a in (1e-3, 0.1, 0.5, 1.0, 3.7, 30.0, 400.0, 1e4):
        s = a**0.5
        for x in (1e-8, 1e-3, 0.3, 1.0, 2.5, 10.0, 50.0, a / 2, a, a + 1, a + s / 2, a + 3 * s):
            yield a, x


def _gamma_reference(a, x):
    """``∂P/∂a`` from the smaller of ``P`` and ``Q``, so the 30 digits are not spent on 1."""
    if x < a:
        return mp.diff(lambda s: mp.gammainc(s, 0, x, regularized=True), a)
    return -mp.diff(lambda s: mp.gammainc(s, x, mp.inf, regularized=True), a)


def _beta_points():
    for a in SHAPES:
        for b in SHAPES:
            m = a / (a + b)
            s = (a * b / ((a + b) ** 2 * (a + b + 1))) ** 0.5
            xs = {m, max(m - 3 * s, 1e-12)}
            if min(a, b) < 1e3:  # mpmath takes many minutes on two large shapes
                xs |= {min(m + 3 * s, 1 - 1e-12), 1e-10, 1e-3, 0.3, 0.9, 1 - 1e-6}
            for x in sorted(xs):
                yield a, b, x


def _beta_reference(a, b, x):
    """``(∂I/∂a, ∂I/∂b)``, from ``I_{1-x}(b, a) = 1 - I`` above the mean."""
    if x <= a / (a + b):
        da = mp.diff(lambda s: mp.betainc(s, b, 0, x, regularized=True), a)
        db = mp.diff(lambda s: mp.betainc(a, s, 0, x, regularized=True), b)
        return da, db
    y = 1 - mp.mpf(x)
    da = -mp.diff(lambda s: mp.betainc(b, s, 0, y, regularized=True), a)
    db = -mp.diff(lambda s: mp.betainc(s, a, 0, y, regularized=True), b)
    return da, db


def _relative(got, want):
    want = np.asarray([float(w) for w in want])
    return np.abs(got - want) / np.maximum(np.abs(want), 1e-300)  # 0 where both underflow


def test_gammainc_da_against_mpmath():
    a, x = np.array(list(_gamma_points())).T
    got = gammainc_da(a, x)  # one call: each element converges on its own
    want = [_gamma_reference(mp.mpf(ai), mp.mpf(xi)) for ai, xi in zip(a, x)]
    error = _relative(got, want)
    assert error.max() < 1e-12, (a[error.argmax()], x[error.argmax()], error.max())
    np.testing.assert_array_equal(gammaincc_da(a, x), -got)


def test_betainc_dab_against_mpmath():
    """Against the stored table (mpmath takes minutes at shapes of 1e4), and a few points
    live."""
    a, b, x, *want = np.array(BETA_REFERENCES).T
    assert len(a) == len(list(_beta_points()))  # the table is this grid's
    want = list(zip(*want))
    live = [7, 60, 130, 180]
    for i in live:
        np.testing.assert_allclose(
            want[i],
            [float(w) for w in _beta_reference(*map(mp.mpf, (a[i], b[i], x[i])))],
            rtol=1e-14,
        )
    da, db = betainc_dab(a, b, x)
    for k, got in enumerate((da, db)):
        error = _relative(got, [w[k] for w in want])
        worst = error.argmax()
        assert error.max() < 1e-12, (k, a[worst], b[worst], x[worst], error.max())
    dac, dbc = betaincc_dab(a, b, x)
    np.testing.assert_array_equal(dac, -da)
    np.testing.assert_array_equal(dbc, -db)


def _mp_lower_gamma(a, x):
    """``P(a, x) = x^a e^{-x}/Γ(a + 1) ₁F₁(1; a + 1; x)`` (Kummer's series, mpmath's ``hyp1f1``;
    its ``gammainc`` gives up on the series at a = 1e6)."""
    front = mp.exp(a * mp.log(x) - x - mp.loggamma(a + 1))
    return front * mp.hyp1f1(1, a + 1, x, maxterms=10**7)


@pytest.mark.parametrize(
    ("a", "p"), [(1e6, 1e-10), (1e7, 1e-10), (1e7, 1e-100), (1e5, 0.3), (10.0, 1e-30)]
)
def test_gammainc_da_at_huge_shapes_against_mpmath(a, p):
    """``∂P/∂a`` is ``P`` times its logarithm's derivative, and it took SciPy's ``P``, which
    is 3e-7 off at ``a = 1e6``, ``P = 1e-10`` (1.3% at ``a = 1e7``; 1e-6 at ``P = 1e-100``):
    now ``P`` from the series it sums itself, with its front ``x^a e^{-x}/Γ(a+1)`` about the
    mode (``a L(x/a - 1)``): 3e-13 at most measured at 1e6 and 1e7 (1.5e-11 at the median of
    1e7, where the series is 3e4 terms)."""
    x = float(sc.gammaincinv(a, p))
    want = float(mp.diff(lambda s: _mp_lower_gamma(s, mp.mpf(x)), mp.mpf(a)))
    np.testing.assert_allclose(gammainc_da(a, x), want, rtol=1e-12)
    with jax.enable_x64(True):  # and through the adapters
        np.testing.assert_allclose(jax.grad(special.gammainc)(a, x), want, rtol=1e-12)
        np.testing.assert_allclose(jax.grad(special.gammaincc)(a, x), -want, rtol=1e-12)


def _mp_beta_series(a, b, x):
    """``I_x(a, b) = x^a (1-x)^b/(a B(a, b)) ₂F₁(a + b, 1; a + 1; x)``, the series summed term by
    term in mpmath (its ``betainc`` takes minutes at shapes of 1e5)."""
    front = mp.exp(a * mp.log(x) + b * mp.log1p(-x) - mp.log(a) - mp.log(mp.beta(a, b)))
    total, term, n = mp.mpf(0), mp.mpf(1), 0
    while n < 50 or term > total * mp.mpf(10) ** (-mp.mp.dps - 5):
        total += term
        term *= (a + b + n) * x / (a + 1 + n)
        n += 1
    return front * total


@pytest.mark.parametrize(
    ("a", "b", "level"),
    [(1000.0, 10.0, 1e-300), (1e5, 10.0, 1e-300), (300.0, 30.0, 1e-280), (1e6, 1000.0, 1e-260)],
)
def test_betainc_dab_in_the_far_tail_against_mpmath(a, b, level):
    """Where ``I`` is below 1e-250, SciPy's ``betainc`` is off: by 0.8% at ``(1000, 10)``,
    ``I = 1e-300``, by 9% at ``(300, 30)``, ``I = 1e-280``, and 0 at ``(1e5, 10)``, where
    ``I = 2.3e-291``; the derivatives, ``I`` times its logarithm's, took SciPy's ``I`` and were
    as far off (or 0). Now the continued fraction's own ``I`` there: 3e-13 at most measured."""
    x = float(sc.betaincinv(a, b, level))
    with mp.workdps(40):
        point = mp.mpf(x)
        want = [
            float(mp.diff(lambda s: _mp_beta_series(s, mp.mpf(b), point), mp.mpf(a))),
            float(mp.diff(lambda s: _mp_beta_series(mp.mpf(a), s, point), mp.mpf(b))),
        ]
    np.testing.assert_allclose(betainc_dab(a, b, x), want, rtol=1e-12)
    with jax.enable_x64(True):
        got = jax.grad(special.betainc, argnums=(0, 1))(a, b, x)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_batch_elements_are_independent():
    a = np.array([1e-3, 2.0, 1e4, 5.0])
    x = np.array([0.5, 2.0, 1e4 + 50, 3.0])
    together = gammainc_da(a, x)
    alone = np.array([gammainc_da(ai, xi) for ai, xi in zip(a, x)]).ravel()
    np.testing.assert_array_equal(together, alone)
    b = np.array([0.5, 3.0, 1e4, 1e-3])
    together = np.array(betainc_dab(a, b, x / (x + 1)))
    alone = np.array([betainc_dab(ai, bi, xi / (xi + 1)) for ai, bi, xi in zip(a, b, x)]).T
    np.testing.assert_array_equal(together, alone)


def test_ends_and_invalid():
    got = gammainc_da([2.0, 2.0, -1.0, 0.0, np.nan, 2.0], [0.0, np.inf, 1.0, 1.0, 1.0, -1.0])
    np.testing.assert_array_equal(got, [0.0, 0.0, np.nan, np.nan, np.nan, np.nan])
    da, db = betainc_dab([2.0, 2.0, -1.0, 2.0], [3.0, 3.0, 3.0, 3.0], [0.0, 1.0, 0.5, 1.5])
    np.testing.assert_array_equal(da, [0.0, 0.0, np.nan, np.nan])
    np.testing.assert_array_equal(db, [0.0, 0.0, np.nan, np.nan])


# --- the adapters


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def test_values_are_scipys():
    a, x = np.array([1e-3, 0.5, 3.0, 1e4]), np.array([0.2, 1.0, 2.0, 1.01e4])
    np.testing.assert_array_equal(special.gammainc(a, x), sc.gammainc(a, x))
    np.testing.assert_array_equal(special.gammaincc(a, x), sc.gammaincc(a, x))
    b, y = np.array([2.0, 0.5, 1e-3, 1e4]), np.array([0.1, 0.5, 0.999, 0.5])
    np.testing.assert_array_equal(special.betainc(a, b, y), sc.betainc(a, b, y))
    assert np.isnan(special.gammainc(-1.0, 1.0)) and np.isnan(special.betainc(1.0, 1.0, 2.0))


def _central(f, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h * max(1.0, abs(args[i]))
    down[i] -= h * max(1.0, abs(args[i]))
    return (f(*up) - f(*down)) / (up[i] - down[i])


@pytest.mark.parametrize(
    ("adapter", "reference", "args"),
    [
        (special.gammainc, sc.gammainc, (2.5, 1.7)),
        (special.gammainc, sc.gammainc, (0.3, 4.0)),
        (special.gammaincc, sc.gammaincc, (2.5, 1.7)),
        (special.gammaincc, sc.gammaincc, (7.0, 15.0)),
        (special.betainc, sc.betainc, (2.5, 0.7, 0.3)),
        (special.betainc, sc.betainc, (30.0, 4.0, 0.95)),
    ],
)
def test_gradients_and_tangents_in_every_argument(adapter, reference, args):
    grad = jax.grad(adapter, argnums=tuple(range(len(args))))(*args)
    for i in range(len(args)):
        want = _central(reference, args, i)
        np.testing.assert_allclose(grad[i], want, rtol=1e-7)
        tangent = [0.0] * len(args)
        tangent[i] = 1.0
        _, jvp = jax.jvp(adapter, args, tuple(tangent))
        np.testing.assert_allclose(jvp, want, rtol=1e-7)


def test_second_derivatives_in_x_and_mixed():
    a, x = 2.5, 1.7
    # ∂²P/∂x² = ((a - 1)/x - 1) f, f the gamma density
    density = np.exp((a - 1) * np.log(x) - x - sc.gammaln(a))
    np.testing.assert_allclose(
        jax.jit(jax.hessian(special.gammainc, argnums=1))(a, x),
        ((a - 1) / x - 1) * density,
        rtol=1e-13,
    )
    # ∂²P/∂a∂x = ∂f/∂a = (log x - ψ(a)) f, by both orders of differentiation
    mixed = (np.log(x) - sc.digamma(a)) * density
    by_x_first = jax.jit(jax.grad(jax.grad(special.gammainc, argnums=1), argnums=0))(a, x)
    by_a_first = jax.jit(jax.grad(jax.grad(special.gammainc, argnums=0), argnums=1))(a, x)
    np.testing.assert_allclose([by_x_first, by_a_first], [mixed, mixed], rtol=1e-12)


def test_second_derivative_in_a_shape_is_nan_and_the_rest_of_the_hessian_exact():
    a, b, x = 2.0, 3.0, 0.4
    hessian = np.array(jax.jit(jax.hessian(special.betainc, argnums=(0, 1, 2)))(a, b, x))
    assert np.isnan(hessian[:2, :2]).all()
    # ∂²I/∂x² = ((a - 1)/x - (b - 1)/(1 - x)) f and ∂²I/∂a∂x = (log x - ψ(a) + ψ(a + b)) f
    density = x ** (a - 1) * (1 - x) ** (b - 1) / sc.beta(a, b)
    np.testing.assert_allclose(
        hessian[2, 2], ((a - 1) / x - (b - 1) / (1 - x)) * density, rtol=1e-13
    )
    mixed = (np.log(x) - sc.digamma(a) + sc.digamma(a + b)) * density
    np.testing.assert_allclose([hessian[0, 2], hessian[2, 0]], [mixed, mixed], rtol=1e-12)


def test_nan_values_have_nan_derivatives_in_both_modes():
    """SciPy's ``gammainc(2, -1)`` and ``betainc(2, 3, 1.5)`` are NaN; their derivatives were
    0 (the density is 0 outside the support), in ``grad`` and ``jacfwd`` alike (#54)."""
    for adapter, args in ((special.gammainc, (2.0, -1.0)), (special.betainc, (2.0, 3.0, 1.5))):
        argnums = tuple(range(len(args)))
        assert np.isnan(adapter(*args))
        assert np.isnan(jax.grad(adapter, argnums)(*args)).all()
        assert np.isnan(jax.jit(jax.jacfwd(adapter, argnums))(*args)).all()


def test_forward_mode_columns_are_reverse_modes_entries():
    """``jacfwd`` passes explicit zero tangents for the other inputs; a zero times an infinite
    or NaN partial made its columns NaN where ``grad`` (one cotangent per input) is exact
    (#54). ``betaincinv(2, 3, 0) = 0`` with ``dx/dy = inf`` (``x ~ √(y/6)``), next to NaN
    shape derivatives; ``gammaincinv(2, 0)`` likewise."""
    for adapter, args in ((special.betaincinv, (2.0, 3.0, 0.0)), (special.gammaincinv, (2.0, 0.0))):
        last = len(args) - 1
        assert jax.grad(adapter, last)(*args) == np.inf
        assert jax.jit(jax.jacfwd(adapter, last))(*args) == np.inf
        tangent = tuple(1.0 if i == last else 0.0 for i in range(len(args)))
        assert jax.jvp(adapter, args, tangent)[1] == np.inf


@pytest.mark.parametrize("adapter", [special.gammainc, special.gammaincc, special.betainc])
def test_check_adapter_with_free_shapes(adapter):
    """The property suite holds the shapes fixed (it checks the Hessian); here they vary,
    every check of first order."""
    rng = np.random.default_rng(0)
    shapes = [rng.uniform(0.5, 4.0, 3) for _ in range(adapter.signature.count(","))]
    x = rng.uniform(0.2, 0.8, 3)
    check_adapter(adapter, *shapes, x, checks=("specs", "jit", "grad", "vmap", "jvp", "transpose"))


if __name__ == "__main__":
    # python tests/test_special_incomplete.py > tests/_incomplete_references.py
    print('"""``(a, b, x, ∂I/∂a, ∂I/∂b)`` by mpmath at 30 digits (``_beta_reference`` of')
    print('``test_special_incomplete.py``, which regenerates this file)."""\n')
    print("BETA_REFERENCES = [")
    for a, b, x in _beta_points():
        da, db = _beta_reference(mp.mpf(a), mp.mpf(b), mp.mpf(x))
        print(f"    ({a!r}, {b!r}, {x!r}, {float(da)!r}, {float(db)!r}),")
    print("]")
