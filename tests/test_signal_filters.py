"""lfilter and sosfilt: values against the difference equation run in mpmath, derivatives
against closed forms and float64 central differences, every order, jit, vmap,
linear_transpose, check_adapter, and errors."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

from jaxbridge.adapters.signal import SosFilter, lfilter, sosfilt
from jaxbridge.testing import check_adapter

RNG = np.random.default_rng(1)
B = np.array([0.5, -0.3, 0.8])
A = np.array([1.25, -0.4, 0.3])  # a[0] != 1: SciPy divides by it
X = RNG.normal(size=9)
G = RNG.normal(size=9)
SOS = np.array([[1.0, 0.4, -0.2, 1.1, -0.5, 0.2], [0.6, -0.3, 0.5, 0.9, 0.3, -0.1]])


@pytest.fixture(autouse=True)
def _precision():
    """float64 throughout (the float32 cases switch it off locally), mpmath at 30 digits
    (set here, not globally: other test modules share the process)."""
    with jax.enable_x64(True), mpmath.workdps(30):
        yield


def _difference_equation(b, a, x, number: Callable[[float], Any] = float):
    """Σₖ a[k] y[n-k] = Σₖ b[k] x[n-k], zero initial conditions, in ``number``."""
    b, a, x = ([number(v) for v in s] for s in (b, a, x))
    y = []
    for n in range(len(x)):
        acc = sum(b[k] * x[n - k] for k in range(len(b)) if n - k >= 0)
        acc -= sum(a[k] * y[n - k] for k in range(1, len(a)) if n - k >= 0)
        y.append(acc / a[0])
    return y


def _cascade(sos, x, number: Callable[[float], Any] = float):
    for row in sos:
        x = _difference_equation(row[:3], row[3:], x, number)
    return x


def _loop(b, a, x):
    return np.array(_difference_equation(b, a, x))


def _sos_loop(sos, x):
    return np.array(_cascade(sos, x))


def _central(f, x, direction, h=1e-5):
    d1 = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
    d2 = (f(x + 2 * h * direction) - f(x - 2 * h * direction)) / (4 * h)
    return (4 * d1 - d2) / 3


def _mp_values(values):
    return np.array([float(v) for v in values])


# ---------------------------------------------------------------------------- values


def test_lfilter_matches_the_difference_equation_in_mpmath():
    expected = _mp_values(_difference_equation(B, A, X, mpmath.mpf))
    np.testing.assert_allclose(lfilter(B, A, X), expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(jax.jit(lfilter)(B, A, X), expected, rtol=1e-14, atol=1e-15)
    with jax.enable_x64(False):
        got = lfilter(*(v.astype(np.float32) for v in (B, A, X)))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_sosfilt_matches_the_cascade_in_mpmath():
    expected = _mp_values(_cascade(SOS, X, mpmath.mpf))
    np.testing.assert_allclose(sosfilt(SOS, X), expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(jax.jit(sosfilt)(SOS, X), expected, rtol=1e-14, atol=1e-15)


def test_batches_of_filters_and_signals_broadcast():
    bs = np.stack([B, -B, 2 * B])[:, None, :]  # (3, 1, 3)
    xs = np.stack([X, X[::-1]])  # (2, 9)
    got = lfilter(bs, A, xs)
    assert got.shape == (3, 2, 9)
    for i in range(3):
        for j in range(2):
            np.testing.assert_allclose(got[i, j], _loop(bs[i, 0], A, xs[j]), rtol=1e-13)
    soses = np.stack([SOS, SOS[::-1]])
    got = jax.vmap(sosfilt, (0, None))(soses, X)
    np.testing.assert_allclose(got[1], _sos_loop(SOS[::-1], X), rtol=1e-13, atol=1e-15)


# ----------------------------------------------------------------------- derivatives


def test_lfilter_gradients_match_finite_differences_and_catch_one_percent():
    args = (B, A, X)
    grads = jax.grad(lambda *v: jnp.sum(lfilter(*v) * G), argnums=(0, 1, 2))(*args)
    for k in range(3):
        for i in range(len(args[k])):
            unit = np.zeros_like(args[k])
            unit[i] = 1

            def along(v, k=k):
                moved = list(args)
                moved[k] = v
                return _loop(*moved)

            expected = np.sum(_central(along, args[k], unit) * G)
            got = float(grads[k][i])
            assert abs(got - expected) < 1e-8 * max(1.0, abs(expected)), (k, i)
            assert abs(1.01 * got - expected) > 1e-8 * max(1.0, abs(expected)), (k, i)


def test_sosfilt_gradients_match_finite_differences_and_catch_one_percent():
    grads = jax.grad(lambda s, x: jnp.sum(sosfilt(s, x) * G), argnums=(0, 1))(SOS, X)
    for k, arg in enumerate((SOS, X)):
        for index in np.ndindex(arg.shape):
            unit = np.zeros_like(arg)
            unit[index] = 1

            def along(v, k=k):
                return _sos_loop(v, X) if k == 0 else _sos_loop(SOS, v)

            expected = np.sum(_central(along, arg, unit) * G)
            got = float(grads[k][index])
            assert abs(got - expected) < 1e-8 * max(1.0, abs(expected)), (k, index)
            assert abs(1.01 * got - expected) > 1e-8 * max(1.0, abs(expected)), (k, index)


def test_sosfilt_tangent_matches_finite_differences():
    dsos, dx = RNG.normal(size=SOS.shape), RNG.normal(size=X.shape)
    _, got = jax.jvp(sosfilt, (SOS, X), (dsos, dx))
    expected = _central(lambda t: _sos_loop(SOS + t * dsos, X + t * dx), 0.0, 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-9)


def test_one_pole_filter_derivatives_of_every_order():
    """y = lfilter([1], [1, -p], δ) is pⁿ: its derivatives in p are n pⁿ⁻¹, n(n-1) pⁿ⁻²,
    n(n-1)(n-2) pⁿ⁻³, by jacfwd, hessian, jacrev(jacrev), and third order both ways."""
    impulse = np.zeros(8)
    impulse[0] = 1
    n = np.arange(8.0)
    p = 0.7

    def f(p):
        return lfilter(jnp.ones(1), jnp.stack([jnp.ones(()), -p]), impulse)

    # (jitted: eager, each operation of the nested rules compiles on its own)
    first = n * p ** np.maximum(n - 1, 0)
    second = n * (n - 1) * p ** np.maximum(n - 2, 0)
    third = n * (n - 1) * (n - 2) * p ** np.maximum(n - 3, 0)
    np.testing.assert_allclose(jax.jit(jax.jacfwd(f))(p), first, rtol=1e-13)
    np.testing.assert_allclose(jax.jit(jax.jacrev(f))(p), first, rtol=1e-13)
    np.testing.assert_allclose(jax.jit(jax.jacfwd(jax.jacfwd(f)))(p), second, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.jacrev(jax.jacrev(f)))(p), second, rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.hessian(lambda p: f(p)[5]))(p), second[5], rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.jacfwd(jax.jacfwd(jax.jacfwd(f))))(p), third, rtol=1e-11)
    np.testing.assert_allclose(jax.jit(jax.jacrev(jax.jacfwd(jax.jacrev(f))))(p), third, rtol=1e-11)


def test_sosfilt_hessian_matches_finite_differences_of_the_gradient():
    def loss(s):
        return jnp.sum(jnp.sin(sosfilt(s, X)) * G)

    direction = RNG.normal(size=SOS.shape)
    hvp = np.einsum("ijkl,kl->ij", jax.hessian(loss)(SOS), direction)
    gradient = jax.grad(loss)
    expected = _central(lambda t: np.asarray(gradient(SOS + t * direction)), 0.0, 1.0)
    np.testing.assert_allclose(hvp, expected, rtol=1e-7, atol=1e-8 * np.abs(expected).max())


def test_linear_transpose_in_x_is_the_filter_backwards():
    transposed = jax.linear_transpose(lambda x: lfilter(B, A, x), X)(G)[0]
    np.testing.assert_allclose(transposed, lfilter(B, A, G[::-1])[::-1], rtol=1e-13)
    transposed = jax.linear_transpose(lambda x: sosfilt(SOS, x), X)(G)[0]
    np.testing.assert_allclose(transposed, sosfilt(SOS, G[::-1])[::-1], rtol=1e-13)


@pytest.mark.slow  # (the quick subset checks SosFilter in tests/test_properties_signal.py)
def test_check_adapter_on_filters():
    check_adapter(lfilter, B, A, X[:5])
    check_adapter(sosfilt, SOS, X[:4])


# ----------------------------------------------------------------------------- errors


def test_empty_signals_filter_to_empty_outputs_with_zero_derivatives():
    """A signal of length 0: the output is empty, the coefficients' gradients are zero and
    the tangents empty, in both modes and through a vmap (the rules' convolutions must not
    index an empty list of terms)."""
    empty = np.zeros(0)
    assert lfilter(B, A, empty).shape == (0,)
    db, da, dx = jax.grad(lambda b, a, x: lfilter(b, a, x).sum(), (0, 1, 2))(B, A, empty)
    np.testing.assert_array_equal(db, np.zeros(3))
    np.testing.assert_array_equal(da, np.zeros(3))
    assert dx.shape == (0,)
    _, tangent = jax.jvp(lfilter, (B, A, empty), (B, A, empty))
    assert tangent.shape == (0,)
    dsos, _ = jax.grad(lambda s, x: sosfilt(s, x).sum(), (0, 1))(SOS, empty)
    np.testing.assert_array_equal(dsos, np.zeros_like(SOS))
    batched = jax.vmap(lfilter, (None, None, 0))
    assert jax.grad(lambda x: batched(B, A, x).sum())(np.zeros((3, 0))).shape == (3, 0)


def test_empty_signals_keep_the_batch_of_the_filters():
    """Two filters (or cascades) on one empty signal, and two empty cascades on a signal:
    the output has the filters' batch, eagerly and under jit."""
    for call in (lfilter, jax.jit(lfilter)):
        assert call(np.ones((2, 2)), np.ones(1), np.zeros(0)).shape == (2, 0)
    for call in (sosfilt, jax.jit(sosfilt)):
        assert call(np.stack([SOS, SOS]), np.zeros(0)).shape == (2, 0)
        np.testing.assert_array_equal(call(np.zeros((2, 0, 6)), X[:5]), [X[:5], X[:5]])


def test_integer_inputs_filter_in_floating_point():
    """Integer coefficients and signals give a floating output, as SciPy does."""
    y = lfilter(np.array([1, 2]), np.array([2]), np.arange(4))
    assert jnp.issubdtype(y.dtype, jnp.floating)
    np.testing.assert_array_equal(y, [0.0, 0.5, 2.0, 3.5])
    gain = np.array([[2, 0, 0, 1, 0, 0]])
    y = jax.jit(sosfilt)(gain, np.arange(4))
    assert jnp.issubdtype(y.dtype, jnp.floating)
    np.testing.assert_array_equal(y, [0.0, 2.0, 4.0, 6.0])


def test_empty_denominator_is_named():
    with pytest.raises(ValueError, match=r"LinearFilter: 'a' is empty"):
        lfilter(B, np.zeros(0), X)


@pytest.mark.parametrize("m", [0, 5])
def test_empty_numerator_is_named_in_every_mode(m):
    """An empty ``b`` (SciPy's error, wrapped; under jit the rules failed while traced)."""
    b, a, x = jnp.zeros(0), jnp.asarray(A), jnp.ones(m)
    loss = lambda *args: lfilter(*args).sum()  # noqa: E731
    for run in (
        lambda: lfilter(b, a, x),
        lambda: jax.jit(jax.grad(loss, (0, 1, 2)))(b, a, x),
        lambda: jax.jit(lambda *args: jax.jvp(lfilter, args, args))(b, a, x),
        lambda: jax.vmap(lfilter, (None, None, 0))(b, a, jnp.ones((2, m))),
    ):
        with pytest.raises(ValueError, match=r"LinearFilter: 'b' is empty"):
            run()


def test_zero_leading_coefficient_is_named():
    with pytest.raises(ValueError, match=r"lfilter: the leading denominator coefficient a\[0\]"):
        lfilter(B, np.array([0.0, 1.0]), X)
    bad = SOS.copy()
    bad[1, 3] = 0
    with pytest.raises(ValueError, match=r"sosfilt: the leading denominator coefficient sos"):
        sosfilt(bad, X)


def test_sections_of_the_wrong_width_are_named():
    with pytest.raises(ValueError, match="SosFilter"):
        SosFilter()(np.ones((2, 5)), X)
