"""Integer and bool arguments under 64-bit mode: every adapter computes in the declared
float64, not in float32 (the host cannot tell 64-bit mode from an int16 argument); and one
rule, ``jaxbridge.result_dtype``, gives both the declared dtype and the host's.

Before the fix, ``lambertw``, ``jv yv iv ive kv kve`` with int32/int16/uint8/bool
arguments computed in float32 and returned float64 (1.5e-8 to 5.7e-8 relative error), and
so did the linalg, signal and optimize adapters for int16/uint8/bool arguments. The
references are independent: mpmath at 30 digits, closed forms, and SciPy or NumPy called
directly in float64.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.linalg
import scipy.signal
from _integrate_cases import Decay, Exponential
from _special_references import mp_float

import jaxbridge as jb
from jaxbridge.adapters import (
    LinearSolve,
    LyapunovSolve,
    OdeSolve,
    Quad,
    Root,
    SparseSolve,
    SylvesterSolve,
)
from jaxbridge.adapters.interpolate import CubicSpline, PchipInterpolator
from jaxbridge.adapters.linalg import (
    logm,
    solve_continuous_are,
    solve_discrete_are,
    solve_discrete_lyapunov,
    sqrtm,
)
from jaxbridge.adapters.signal import lfilter, sosfilt
from jaxbridge.adapters.special import (
    betaincinv,
    gammaincinv,
    iv,
    ive,
    jv,
    kv,
    kve,
    lambertw,
    yv,
)
from jaxbridge.adapters.stats import OneShapeFunction, TwoShapeFunction

INTEGERS = [np.int32, np.int16, np.uint8]
EPS = float(np.finfo(np.float64).eps)

# order, x: every value exactly representable in each integer type above
V = np.array([0, 1, 2, 3, 0, 5])
X = np.array([1, 2, 3, 7, 20, 9])

SPECIAL = {
    "jv": (jv, mpmath.besselj),
    "yv": (yv, mpmath.bessely),
    "iv": (iv, mpmath.besseli),
    "ive": (ive, lambda v, x: mpmath.besseli(v, x) * mpmath.exp(-x)),
    "kv": (kv, mpmath.besselk),
    "kve": (kve, lambda v, x: mpmath.besselk(v, x) * mpmath.exp(x)),
}


def _float64(function, *args):
    with jax.enable_x64(True):
        got = jax.jit(function)(*(jnp.asarray(a) for a in args))
    assert got.dtype == jnp.float64
    return np.asarray(got)


@pytest.mark.parametrize("integer", INTEGERS)
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_bessel_functions_of_integers_in_float64(name, integer):
    """Within 1e-14 relative of mpmath (SciPy's own accuracy in float64; float32 math was
    1e-8 off)."""
    function, reference = SPECIAL[name]
    got = _float64(function, V.astype(integer), X.astype(integer))
    expected = np.array([mp_float(reference(int(v), int(x))) for v, x in zip(V, X)])
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize("integer", [*INTEGERS, np.bool_])
def test_bessel_functions_of_bools_and_mixed_integers(integer):
    """bool orders and arguments, and an integer order with an integer argument of another
    type."""
    v, x = np.array([0, 1, 1]).astype(integer), np.array([1, 1, 1], np.bool_)
    got = _float64(jv, v, x)
    expected = [mp_float(mpmath.besselj(int(a), 1)) for a in v]
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize("integer", [*INTEGERS, np.bool_])
def test_lambertw_of_integers_in_float64(integer):
    x = np.array([0, 1, 2, 3, 10, 100] if integer is not np.bool_ else [0, 1, 1, 0])
    got = _float64(lambertw, x.astype(integer))
    expected = [mp_float(mpmath.lambertw(int(v))) for v in x]
    np.testing.assert_allclose(got, expected, rtol=2 * EPS, atol=0)


@pytest.mark.parametrize("integer", INTEGERS)
def test_quantiles_of_integer_shapes_in_float64(integer):
    """Integer shapes with a float64 probability, and integer (0 or 1) probabilities."""
    a = np.array([1, 2, 3]).astype(integer)
    with jax.enable_x64(True):
        got = np.asarray(gammaincinv(a, 0.3))
        ends = np.asarray(betaincinv(a, a, np.array([0, 1, 1]).astype(integer)))
    # P(1, x) = 1 - e^-x; P(2, x) = 1 - (1 + x) e^-x; P(3, x) = 1 - (1 + x + x²/2) e^-x
    expected = [
        mp_float(
            mpmath.findroot(lambda x, k=k: mpmath.gammainc(k, 0, x, regularized=True) - 0.3, 1)
        )
        for k in (1, 2, 3)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(ends, [0.0, 1.0, 1.0])


M = np.array([[-4, 1, 0], [2, -5, 1], [0, 3, -6]])  # stable, well conditioned
N = np.array([[3, 1], [0, 2]])
Q = np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]])  # symmetric positive definite
SQUARE = np.array([[5, 1, 0], [2, 6, 1], [0, 3, 7]])  # eigenvalues in the right half-plane
C = np.array([[1, 0], [0, 1], [1, 1]])  # 3 x 2
R = np.array([[3, 1], [1, 2]])  # symmetric positive definite


def _linalg_cases():
    m64, n64, q64, s64, c64, r64 = (np.asarray(v, np.float64) for v in (M, N, Q, SQUARE, C, R))
    pattern = scipy.sparse.csr_array(SQUARE)
    sparse = SparseSolve(tuple(pattern.indices), tuple(pattern.indptr), pattern.shape)
    return {
        "LinearSolve": (LinearSolve(), (SQUARE, Q[0]), np.linalg.solve(s64, q64[0])),
        "LinearSolve(pos)": (LinearSolve(assume_a="pos"), (Q, M[0]), np.linalg.solve(q64, m64[0])),
        "LyapunovSolve": (
            LyapunovSolve(),
            (M, Q),
            scipy.linalg.solve_continuous_lyapunov(m64, q64),
        ),
        "SylvesterSolve": (
            SylvesterSolve(),
            (SQUARE, N, C),
            scipy.linalg.solve_sylvester(s64, n64, c64),
        ),
        "SparseSolve": (sparse, (pattern.data, Q[0]), np.linalg.solve(s64, q64[0])),
        "solve_discrete_lyapunov": (
            solve_discrete_lyapunov,
            (N, N + 1),  # eigenvalues 2 and 3: no product is 1
            scipy.linalg.solve_discrete_lyapunov(n64, n64 + 1),
        ),
        "sqrtm": (sqrtm, (SQUARE,), scipy.linalg.sqrtm(s64)),
        "logm": (logm, (SQUARE,), scipy.linalg.logm(s64)),
        "solve_continuous_are": (
            solve_continuous_are,
            (M, C, Q, R),
            scipy.linalg.solve_continuous_are(m64, c64, q64, r64),
        ),
        "solve_discrete_are": (
            solve_discrete_are,
            (M // 4, C, Q, R),
            scipy.linalg.solve_discrete_are(m64 // 4, c64, q64, r64),
        ),
    }


@pytest.mark.parametrize("integer", [np.int16, np.uint8])
@pytest.mark.parametrize("name", sorted(_linalg_cases()))
def test_linalg_of_integers_in_float64(name, integer):
    """Equal to SciPy or NumPy in float64 to rounding (float32 math: 1e-7 off)."""
    adapter, args, expected = _linalg_cases()[name]
    if integer is np.uint8 and any(np.asarray(a).min() < 0 for a in args):
        pytest.skip("negative entries")
    got = _float64(adapter, *(np.asarray(a).astype(integer) for a in args))
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13 * scale)


@pytest.mark.parametrize("integer", [np.int16, np.uint8, np.bool_])
def test_filters_of_integers_in_float64(integer):
    b, a, x = np.array([1, 1, 0]), np.array([3, 1, 1]), np.array([1, 0, 1, 1, 0, 1, 0, 0])
    sos = np.array([[1, 1, 0, 3, 1, 1]])
    b, x = b.astype(integer), x.astype(integer)
    a, sos = (v.astype(integer if integer is not np.bool_ else np.int16) for v in (a, sos))
    expected = scipy.signal.lfilter(b.astype(float), a.astype(float), x.astype(float))
    np.testing.assert_allclose(_float64(lfilter, b, a, x), expected, rtol=0, atol=1e-15)
    # one section with a0 = 3 (SciPy's sosfilt wants 1): lfilter of its b and a
    expected = scipy.signal.lfilter(
        sos[0, :3].astype(float), sos[0, 3:].astype(float), x.astype(float)
    )
    np.testing.assert_allclose(_float64(sosfilt, sos, x), expected, rtol=0, atol=1e-15)


class _CubeRoot(jb.Adapter):
    """``x³ - θ``: its root is the cube root of θ."""

    signature = "(n),(p)->(n)"

    def forward(self, x, theta):
        return x**3 - theta

    def backward(self, res, g):
        x, _, _ = res
        return g * 3 * x**2, -g


@pytest.mark.parametrize("integer", [np.int16, np.uint8])
def test_optimize_and_integrate_of_integers_in_float64(integer):
    """A root and an integral of integer arguments, against closed forms."""
    got = _float64(Root(_CubeRoot()), np.array([1]).astype(integer), np.array([2]).astype(integer))
    np.testing.assert_allclose(got, [2 ** (1 / 3)], rtol=4 * EPS)
    theta, lower, upper = (np.array(v).astype(integer) for v in ([2], 0, 1))
    got = _float64(Quad(Exponential()), theta, lower, upper)
    np.testing.assert_allclose(got, (np.exp(2.0) - 1) / 2, rtol=4 * EPS)


DTYPES = [np.bool_, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("first", DTYPES)
@pytest.mark.parametrize("second", [*DTYPES, jnp.bfloat16])
def test_result_dtype_is_jax_promotion_with_a_weak_float(first, second, x64):
    """What the bridge declares (``result_dtype``, canonicalized) is JAX's own promotion of
    the arguments with a Python float, in either mode (of the dtypes that mode has)."""
    if not x64 and 8 in (np.dtype(first).itemsize, np.dtype(second).itemsize):
        pytest.skip("no 64-bit arrays with 64-bit mode off")
    specs = [jax.ShapeDtypeStruct((), d) for d in (first, second)]
    with jax.enable_x64(x64):
        declared = jax.dtypes.canonicalize_dtype(jb.result_dtype(*specs))
        assert declared == jnp.result_type(first, second, float)


def _dtype_cases():
    """(adapter, integer-valued arguments of one call) for every family whose adapters take
    integer-castable arguments."""
    cases = {name: (adapter, args) for name, (adapter, args, _) in _linalg_cases().items()}
    b, a, x = np.array([1, 1, 0]), np.array([3, 1, 1]), np.array([1, 0, 1, 1, 0, 1, 0, 0])
    sites, values, queries = np.arange(5), np.array([0, 1, 4, 2, 3]), np.array([0, 1, 3, 4])
    cases |= {
        "lfilter": (lfilter, (b, a, x)),
        "sosfilt": (sosfilt, (np.array([[1, 1, 0, 3, 1, 1]]), x)),
        **{name: (SPECIAL[name][0], (V, X)) for name in ("jv", "kv")},
        "lambertw": (lambertw, (X,)),
        "gammaincinv": (gammaincinv, (V + 1, np.array([0, 1, 1, 0, 1, 1]))),
        "betaincinv": (betaincinv, (V + 1, X, np.array([0, 1, 1, 0, 1, 1]))),
        "CubicSpline": (CubicSpline(), (sites, values, queries)),
        "PchipInterpolator": (PchipInterpolator(), (sites, values, queries)),
        "gamma.cdf": (OneShapeFunction("gamma.cdf"), (V + 1, X)),
        "beta.sf": (TwoShapeFunction("beta.sf"), (V + 1, X, np.array([0, 1, 1, 0, 1, 1]))),
        "Root": (Root(_CubeRoot()), (np.array([1]), np.array([2]))),
        "Quad": (Quad(Exponential()), (np.array([2]), np.array(0), np.array(1))),
        "OdeSolve": (OdeSolve(Decay()), (np.array([3]), np.array([1]), np.array([0, 1, 2]))),
    }
    return cases


@pytest.mark.parametrize("kind", [np.int16, np.int32, np.float32])
@pytest.mark.parametrize("name", sorted(_dtype_cases()))
def test_one_rule_for_declared_and_computed_dtypes(name, kind):
    """Under 64-bit mode, integer arguments give float64 results, declared and computed on the
    host, equal to the last bit to those of the same values in float64 (the same float64
    computation, not a float32 one cast up); float32 arguments give float32, both sides."""
    adapter, args = _dtype_cases()[name]
    cast = tuple(np.asarray(v).astype(kind) for v in args)
    expected = np.dtype(np.float32 if kind is np.float32 else np.float64)
    with jax.enable_x64(True):
        declared = jax.tree.leaves(jax.eval_shape(adapter, *cast))[0].dtype
        got = np.asarray(jax.jit(adapter)(*cast))
        reference = np.asarray(jax.jit(adapter)(*(np.asarray(v, np.float64) for v in args)))
    host = adapter.forward(*cast)  # as the bridge calls it, outside JAX
    host = host[0] if isinstance(host, tuple) else host
    assert (declared, np.asarray(host).dtype, got.dtype) == (expected,) * 3
    if kind is not np.float32:
        np.testing.assert_array_equal(got, reference)
