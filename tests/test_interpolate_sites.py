"""Derivatives of the 1-D interpolants in their sites ``x``: first derivatives (both modes,
``nu`` = 0, 1, 2, queries inside and extrapolated) against central differences of SciPy's
own objects in float64, second derivatives (in ``x``, mixed with ``y`` and ``xq``) against
central differences of the exact first derivatives, exactness on polynomials the
interpolant reproduces, the slopes' system against SciPy's spline, batches, and what still
refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.interpolate as si
from _interpolate_cases import quick_and_slow, scipy_object

from jaxbridge.adapters.interpolate import (
    Akima1DInterpolator,
    CubicSpline,
    InterpSpline,
    PchipInterpolator,
)
from jaxbridge.adapters.interpolate._spline_slopes import spline_slopes

RNG = np.random.default_rng(11)
N, M = 9, 24
X = np.sort(RNG.uniform(0.0, 10.0, N))
Y = np.sin(X) + 0.3 * X
XQ = RNG.uniform(-1.0, 11.0, M)  # some extrapolated on both sides
W = RNG.normal(size=M)
DX = RNG.normal(size=N)
assert (XQ < X[0]).any() and (XQ > X[-1]).any()


@pytest.fixture(autouse=True)
def _precision():
    with jax.enable_x64(True):
        yield


ADAPTERS = [
    InterpSpline(k=1),
    InterpSpline(k=3),
    InterpSpline(k=3, bc_type="natural"),
    InterpSpline(k=3, bc_type="clamped"),
    InterpSpline(k=3, bc_type="periodic"),
    CubicSpline(),
    CubicSpline("natural"),
    CubicSpline("clamped"),
    CubicSpline("periodic"),
    CubicSpline("periodic", extrapolate=True),
    PchipInterpolator(),
    Akima1DInterpolator(),  # NaN outside, as SciPy's default
    Akima1DInterpolator("makima", extrapolate=True),
]


def _id(adapter):
    fields = {k: v for k, v in adapter.__dict__.items() if k not in ("on_failure", "nu")}
    return f"{type(adapter).__name__}{fields}".replace(" ", "")


def _with(adapter, **changes):
    return type(adapter)(**{**adapter.__dict__, **changes})


def _data(adapter, y=Y):
    """``y``, made periodic (``y[-1] = y[0]``) for a periodic spline."""
    if getattr(adapter, "bc_type", None) == "periodic":
        return np.concatenate([y[:-1], y[:1]])
    return y


def _central(f, at, direction, step):
    return (f(at + step * direction) - f(at - step * direction)) / (2 * step)


@pytest.mark.parametrize("nu", [0, 1, 2])
@pytest.mark.parametrize("adapter", quick_and_slow(ADAPTERS, {5, 10}, _id))
def test_first_derivatives_in_sites_are_scipys_differences(adapter, nu):
    """jvp and grad in x against central differences of SciPy's interpolant (step 1e-6,
    the sites ~1 apart: truncation ~1e-12, rounding ~1e-10 relative to the derivative), to
    1e-7 of the largest entry: a rule 1% off (or a missing term) is 1e-2 off."""
    adapter = _with(adapter, nu=nu)
    y = _data(adapter)

    def scipy_values(x):
        return scipy_object(adapter, x, y)(XQ, nu, adapter.extrapolate)

    tangent = jax.jit(lambda x, dx: jax.jvp(lambda x: adapter(x, y, XQ), (x,), (dx,))[1])
    got = np.asarray(tangent(X, DX))
    if nu > getattr(adapter, "k", 3):  # the derivative is 0 wherever the sites are
        np.testing.assert_array_equal(got, 0.0)
        return
    expected = _central(scipy_values, X, DX, 1e-6)
    known = np.isfinite(expected)  # (NaN outside for Akima's default)
    assert known.sum() >= M // 2
    scale = np.abs(expected[known]).max()
    assert scale > 1e-2
    np.testing.assert_allclose(got[known], expected[known], rtol=0, atol=1e-7 * scale)

    def objective(x):
        return jnp.sum(jnp.where(known, adapter(x, y, XQ), 0) * W)

    gradient = jax.jit(jax.grad(objective))(X)
    assert gradient.shape == (N,)
    np.testing.assert_allclose(
        gradient @ DX, expected[known] @ W[known], rtol=0, atol=1e-7 * scale * np.abs(W).sum()
    )


@pytest.mark.parametrize("adapter", quick_and_slow(ADAPTERS, {0}, _id))
def test_jacobians_in_sites_agree_both_ways_and_under_vmap(adapter):
    """The full Jacobian in x, reverse and forward mode, agree to rounding, and a batch of
    site vectors (vmap of grad) gives each element's own gradient."""
    y = _data(adapter)

    def f(x):
        return jnp.nan_to_num(adapter(x, y, XQ))

    reverse, forward = jax.jit(jax.jacrev(f))(X), jax.jit(jax.jacfwd(f))(X)
    scale = np.abs(forward).max()
    np.testing.assert_allclose(reverse, forward, rtol=0, atol=1e-12 * scale)

    sites = X + 0.2 * np.diff(X).min() * RNG.uniform(-1, 1, (3, N))  # still increasing
    grad = jax.jit(jax.grad(lambda x: f(x) @ W))
    batched = jax.jit(jax.vmap(jax.grad(lambda x: f(x) @ W)))(sites)
    for element, x in zip(batched, sites, strict=True):
        np.testing.assert_allclose(element, grad(x), rtol=0, atol=1e-12 * scale)


SECOND = [
    InterpSpline(k=1),
    CubicSpline(),
    CubicSpline("periodic"),
    InterpSpline(k=3, bc_type="clamped", nu=1),
    PchipInterpolator(),
    Akima1DInterpolator("makima", extrapolate=True),
]


@pytest.mark.parametrize("adapter", quick_and_slow(SECOND, {0}, _id))
def test_second_derivatives_in_sites(adapter):
    """The Hessian in x (forward over reverse), the mixed x–y and x–xq derivatives (both
    nestings) against central differences of the exact gradients (step 1e-5: truncation
    ~1e-10, rounding ~1e-11 relative), to 1e-6 of the largest entry."""
    y = _data(adapter)
    direction = _data(adapter, RNG.normal(size=N))  # (periodic data moves at both ends)

    def f(x, y, q):
        return adapter(x, y, q) @ W

    grads = [jax.jit(jax.grad(f, argnums=i)) for i in range(3)]
    at = (X, y, XQ)

    def moved(i, step):
        return tuple(
            a + step * d if j == i else a for j, (a, d) in enumerate(zip(at, (DX, direction, W)))
        )

    def difference(g, i):
        step = 1e-5
        return (np.asarray(g(*moved(i, step))) - np.asarray(g(*moved(i, -step)))) / (2 * step)

    # ∂²/∂x² and ∂²/∂x∂y, ∂²/∂x∂xq from forward over reverse, ∂²/∂y∂x, ∂²/∂xq∂x reverse
    # over reverse: each applied to the same direction as the difference
    for i in range(3):
        expected = difference(grads[0], i)  # d(∇ₓf) along argument i's direction
        got = jax.jit(
            lambda *a, i=i: jax.jvp(
                lambda *b: grads[0](*b),
                a,
                tuple(d if j == i else jnp.zeros_like(d) for j, d in enumerate((DX, direction, W))),
            )[1]
        )(*at)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6 * scale)
    for i in (1, 2):
        expected = difference(grads[i], 0)  # d(∇ᵢf) along the sites' direction
        rows = jax.jit(jax.jacrev(grads[i], argnums=0))(*at)
        np.testing.assert_allclose(rows @ DX, expected, rtol=0, atol=1e-6 * np.abs(expected).max())


@pytest.mark.parametrize(
    ("adapter", "degree"),
    [
        pytest.param(adapter, degree, id=_id(adapter), marks=marks)
        for adapter, degree, marks in [
            (InterpSpline(k=3), 3, pytest.mark.slow),
            (CubicSpline(), 3, ()),
            (InterpSpline(k=1), 1, pytest.mark.slow),
            (PchipInterpolator(), 1, pytest.mark.slow),
            (Akima1DInterpolator("makima", extrapolate=True), 1, pytest.mark.slow),
        ]
    ],
)
def test_reproduced_polynomials_do_not_move_with_their_sites(adapter, degree):
    """An interpolant that reproduces polynomials of ``degree`` gives ``p`` itself for data
    ``y = p(x)``: moving the sites with the data changes nothing, so the tangent in x and
    the one in y cancel exactly (each alone is of order 1)."""
    coefficients = np.array([0.3, -0.2, 0.05, 0.01])[: degree + 1]

    def p(x):
        return jnp.polyval(jnp.asarray(coefficients[::-1]), x)

    for nu in (0, 1):
        moving = _with(adapter, nu=nu)
        total = jax.jit(lambda x: jax.jvp(lambda x: moving(x, p(x), XQ), (x,), (DX,))[1])(X)
        alone = jax.jvp(lambda x: moving(x, p(X), XQ), (X,), (DX,))[1]
        assert np.abs(alone).max() > 1e-2
        np.testing.assert_allclose(total, 0.0, atol=1e-12 * np.abs(alone).max())


@pytest.mark.parametrize("bc_type", ["not-a-knot", "natural", "clamped", "periodic"])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 40])
def test_slopes_system_is_scipys(bc_type, n):
    """The slopes solved in JAX equal SciPy's spline derivative at its sites to rounding,
    SciPy's special cases of 2 and 3 points included."""
    x = np.sort(RNG.uniform(0.0, 10.0, n))
    y = np.sin(x) + 0.3 * x
    if bc_type == "periodic":
        y[-1] = y[0]
    expected = si.CubicSpline(x, y, bc_type=bc_type)(x, 1)
    got = spline_slopes(x, y, bc_type)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13 * max(np.abs(expected).max(), 1))


@pytest.mark.parametrize("k", [0, 2, 4, 5])
def test_other_degrees_refuse_site_derivatives(k):
    spline = InterpSpline(k=k)
    message = rf"InterpSpline is not differentiable in its argument 'x': a spline of degree {k}"
    with pytest.raises(TypeError, match=message):
        jax.grad(lambda x: spline(x, Y, XQ).sum())(X)
    with pytest.raises(TypeError, match=message):
        jax.jvp(lambda x: spline(x, Y, XQ), (X,), (DX,))
    jax.grad(lambda y: spline(X, y, XQ).sum())(Y)  # the data still differentiates
