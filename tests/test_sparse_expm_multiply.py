"""``ExpmMultiply``: values against dense ``scipy.linalg.expm``, derivatives in every argument
against float64 central differences of the dense reference (both modes, second order where
the rules compose), one and several columns, vmap, float32, and errors."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse

from jaxbridge.adapters.sparse import ExpmMultiply

# the module (the package's `expm_multiply` is SciPy's call of that name)
expm_module = importlib.import_module("jaxbridge.adapters.sparse.expm_multiply")


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _matrix(n, seed=0, density=0.1):
    """A nonsymmetric sparse matrix with a stable diagonal, one-norm of a few units."""
    rng = np.random.default_rng(seed)
    a = scipy.sparse.random_array((n, n), density=density, rng=rng, format="csr")
    a = scipy.sparse.csr_array(a - 1.5 * scipy.sparse.eye_array(n, format="csr"))
    a.sort_indices()
    return a


def _dense(m, data, b, t):
    a = scipy.sparse.csr_array((data, m.indices, m.indptr), shape=m.shape).toarray()
    return scipy.linalg.expm(t * a) @ b


def _central(f, x, direction, h=1e-4):
    """Central difference along ``direction`` with Richardson extrapolation (O(h⁴))."""
    d1 = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
    d2 = (f(x + 2 * h * direction) - f(x - 2 * h * direction)) / (4 * h)
    return (4 * d1 - d2) / 3


M = _matrix(150)
N = M.shape[0]
RNG = np.random.default_rng(1)
B = RNG.standard_normal((N, 3))
W = RNG.standard_normal((N, 3))  # a cotangent


@pytest.mark.parametrize("t", [0.0, 0.3, -0.8, 2.5])
def test_values_match_dense_expm(t):
    expm_multiply = ExpmMultiply(M.indices, M.indptr, M.shape)
    expected = _dense(M, M.data, B, t)
    np.testing.assert_allclose(expm_multiply(M.data, B, t), expected, atol=1e-12)
    np.testing.assert_allclose(expm_multiply(M.data, B[:, 0], t), expected[:, 0], atol=1e-12)


@pytest.mark.parametrize("t", [0.4, 2.5])
def test_gradients_match_dense_central_differences(t):
    expm_multiply = ExpmMultiply(M.indices, M.indptr, M.shape)

    def f(data, b, t):
        return jnp.sum(W * expm_multiply(data, b, t))

    grads = jax.jit(jax.grad(f, argnums=(0, 1, 2)))(M.data, B, t)
    directions = (RNG.standard_normal(M.nnz), RNG.standard_normal(B.shape), 1.0)
    for i, (grad, direction) in enumerate(zip(grads, directions)):

        def along(x, i=i):
            args = [M.data, B, t]
            args[i] = x
            return np.sum(W * _dense(M, *args))

        expected = _central(along, (M.data, B, t)[i], direction)
        np.testing.assert_allclose(np.sum(grad * direction), expected, rtol=1e-8)
        tangents = [jnp.zeros_like(M.data), jnp.zeros_like(B), 0.0]
        tangents[i] = direction
        _, tangent = jax.jvp(f, (M.data, B, t), tuple(tangents))
        np.testing.assert_allclose(tangent, expected, rtol=1e-8)


def test_data_cotangent_per_entry():
    """The data cotangent at single entries, on a matrix of large norm (several panels)."""
    m = _matrix(40, seed=2, density=0.2)
    data = 3 * m.data
    expm_multiply = ExpmMultiply(m.indices, m.indptr, m.shape)
    b, w, t = RNG.standard_normal(40), RNG.standard_normal(40), 1.3
    grad = jax.grad(lambda d: jnp.sum(w * expm_multiply(d, b, t)))(data)
    for e in [0, 7, m.nnz // 2, m.nnz - 1]:
        unit = np.zeros(m.nnz)
        unit[e] = 1.0
        expected = _central(lambda d: w @ _dense(m, d, b, t), data, unit)
        np.testing.assert_allclose(grad[e], expected, rtol=1e-7, atol=1e-10)


def _dense_jax_loss(m, b, w):
    """``Σ w expm(t a) b`` through dense ``jax.scipy.linalg.expm``: an independent
    reference for the derivatives in ``data`` and ``t`` (JAX's own rules, no quadrature)."""
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))

    def loss(data, t):
        a = jnp.zeros(m.shape).at[rows, m.indices].add(data)
        return jnp.sum(w * (jax.scipy.linalg.expm(t * a) @ b))

    return loss


@pytest.mark.parametrize(
    ("seed", "scale", "shift", "t", "columns"),
    [
        (0, 1.0, 1.5, 1.0, 1),
        (1, 5.0, 0.0, 1.0, 2),
        (2, 10.0, -3.0, -0.7, 1),
        (4, 20.0, 0.0, 1.0, 3),
    ],
)
@pytest.mark.parametrize("kept", [True, False])
def test_data_and_t_gradients_match_dense_jax_expm(
    seed, scale, shift, t, columns, kept, monkeypatch
):
    """The gradient in ``data`` and ``t``, and the mixed second derivative (``t`` of the data
    cotangent), against ``jax.grad`` of dense ``jax.scipy.linalg.expm``, to near rounding, on
    nonsymmetric matrices of one-norm 14 to 250 (1 to 84 panels), with the panels' Taylor
    terms kept and computed again (``KEPT_BYTES = 0``)."""
    if not kept:
        monkeypatch.setattr(expm_module, "KEPT_BYTES", 0)
    rng = np.random.default_rng(seed)
    n = 40
    a = scipy.sparse.random_array(
        (n, n), density=0.15, rng=rng, format="csr", data_sampler=rng.standard_normal
    )
    m = scipy.sparse.csr_array(scale * a - shift * scipy.sparse.eye_array(n, format="csr"))
    m.sort_indices()
    b, w = rng.standard_normal((n, columns)), rng.standard_normal((n, columns))
    expm_multiply = ExpmMultiply(m.indices, m.indptr, m.shape)
    dense = _dense_jax_loss(m, b, w)

    def loss(data, t):
        return jnp.sum(w * expm_multiply(data, b, t))

    data = jnp.asarray(m.data)
    got = jax.grad(loss, argnums=(0, 1))(data, t)
    expected = jax.grad(dense, argnums=(0, 1))(data, t)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12 * np.abs(e).max())
    mixed = jax.jacfwd(jax.grad(loss), argnums=1)(data, t)
    mixed_expected = jax.jacfwd(jax.grad(dense), argnums=1)(data, t)
    np.testing.assert_allclose(
        mixed, mixed_expected, rtol=1e-11, atol=1e-11 * np.abs(mixed_expected).max()
    )


def test_second_derivatives_through_the_data_cotangent():
    """Forward over reverse through the data cotangent's own rule: the gradient in ``data``
    of ``Σ w y + Σ y² / 2`` (its cotangent ``w + y`` moves with ``y``), differentiated along
    ``b`` and along ``t``, so that every term of the rule counts (the quadrature along
    ``db``, along the cotangent's tangent, and the derivative in ``t``). The reference:
    central differences of the dense gradient ``t L(t aᵀ, g bᵀ)`` at the stored entries
    (``scipy.linalg.expm_frechet``, ``g = w + y``)."""
    m = _matrix(10, seed=6, density=0.3)
    expm_multiply = ExpmMultiply(m.indices, m.indptr, m.shape)
    rng = np.random.default_rng(7)
    b, w, t = rng.standard_normal((10, 2)), rng.standard_normal((10, 2)), 0.7
    rows = np.repeat(np.arange(10), np.diff(m.indptr))

    def f(data, b, t):
        y = expm_multiply(data, b, t)
        return jnp.sum(w * y) + jnp.sum(y**2) / 2

    def dense_gradient(b, t):
        g = w + _dense(m, m.data, b, t)
        frechet = scipy.linalg.expm_frechet(t * m.toarray().T, g @ b.T, compute_expm=False)
        assert isinstance(frechet, np.ndarray)  # (compute_expm=False: the derivative alone)
        return t * frechet[rows, m.indices]

    gradient = jax.grad(f)
    for db, dt in [(rng.standard_normal(b.shape), 0.0), (np.zeros_like(b), 1.0)]:
        _, got = jax.jvp(lambda b, t: gradient(m.data, b, t), (b, t), (db, dt))
        expected = _central(lambda s: dense_gradient(b + s * db, t + s * dt), 0.0, 1.0)
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())


@pytest.mark.slow
def test_b_and_t_derivatives_compose_to_every_order():
    m = _matrix(30, seed=3, density=0.2)
    expm_multiply = ExpmMultiply(m.indices, m.indptr, m.shape)
    a = m.toarray()
    b = RNG.standard_normal(30)
    w = RNG.standard_normal(30)
    t = 0.6

    def f(t):
        return jnp.dot(w, expm_multiply(m.data, b, t))

    # d^k/dt^k expm(t a) b = a^k expm(t a) b
    powers = [w @ np.linalg.matrix_power(a, k) @ scipy.linalg.expm(t * a) @ b for k in range(4)]
    for derivative, expected in [
        (jax.grad(f), powers[1]),
        (jax.jacfwd(f), powers[1]),
        (jax.grad(jax.grad(f)), powers[2]),
        (jax.jacfwd(jax.grad(f)), powers[2]),
        (jax.grad(jax.jacfwd(f)), powers[2]),
        (jax.jacfwd(jax.jacfwd(jax.jacfwd(f))), powers[3]),
    ]:
        np.testing.assert_allclose(derivative(t), expected, rtol=1e-9)


@pytest.mark.slow
def test_forward_mode_in_data_to_second_order():
    m = _matrix(12, seed=4, density=0.3)
    expm_multiply = ExpmMultiply(m.indices, m.indptr, m.shape)
    b, w, t = RNG.standard_normal(12), RNG.standard_normal(12), 0.8
    u = RNG.standard_normal(m.nnz)

    def along(data):
        return jax.jvp(lambda d: jnp.sum(w * expm_multiply(d, b, t)), (data,), (u,))[1]

    second = jax.jvp(along, (m.data,), (u,))[1]
    h = 1e-3

    def first(s):
        return _central(lambda r: w @ _dense(m, m.data + r * u, b, t), s, 1.0)

    expected = (first(h) - first(-h)) / (2 * h)
    np.testing.assert_allclose(second, expected, rtol=1e-5)


def test_linear_transpose_in_b():
    expm_multiply = ExpmMultiply(M.indices, M.indptr, M.shape)
    (transposed,) = jax.linear_transpose(lambda b: expm_multiply(M.data, b, 0.5), B)(W)
    expected = scipy.linalg.expm(0.5 * M.toarray()).T @ W
    np.testing.assert_allclose(transposed, expected, atol=1e-12)


def test_vmap_matches_a_loop():
    m = _matrix(25, seed=5, density=0.2)
    expm_multiply = ExpmMultiply(m.indices, m.indptr, m.shape)
    bs = RNG.standard_normal((3, 25))
    ts = np.array([0.1, 0.5, 1.0])
    got = jax.jit(jax.vmap(lambda b, t: expm_multiply(m.data, b, t)))(bs, ts)
    for i in range(3):
        np.testing.assert_allclose(got[i], _dense(m, m.data, bs[i], ts[i]), atol=1e-12)


def test_float32():
    with jax.enable_x64(False):
        expm_multiply = ExpmMultiply(M.indices, M.indptr, M.shape)
        y = expm_multiply(jnp.asarray(M.data, jnp.float32), jnp.asarray(B, jnp.float32), 0.5)
        assert y.dtype == jnp.float32
    np.testing.assert_allclose(y, _dense(M, M.data, B, 0.5), rtol=1e-5, atol=1e-6)


def test_errors():
    expm_multiply = ExpmMultiply(M.indices, M.indptr, M.shape)
    with pytest.raises(ValueError, match=r"ExpmMultiply.check .*argument 't' has non-finite"):
        expm_multiply(M.data, B, np.nan)
    with pytest.raises(ValueError, match=rf"ExpmMultiply: 'data' must have the pattern's {M.nnz}"):
        expm_multiply(M.data[:-1], B, 1.0)
    with pytest.raises(ValueError, match=rf"'b' its {N} rows"):
        expm_multiply(M.data, B[:-1], 1.0)
    with pytest.raises(ValueError, match=r"ExpmMultiply: parameter 'shape' must be square"):
        ExpmMultiply(M.indices, M.indptr, (N, N + 1))
    with pytest.raises(NotImplementedError, match=r"ExpmMultiply: the derivative of its reverse"):
        jax.grad(lambda d: jax.grad(lambda e: expm_multiply(e, B[:, 0], 0.5)[0])(d)[0])(M.data)


def test_b_of_no_columns():
    """SciPy divides by the number of columns; an empty ``b`` gives an empty result and zero
    derivatives, in every mode (and the data cotangent's quadrature under ``jit``)."""
    m = _matrix(25, seed=3, density=0.2)
    expm_multiply = ExpmMultiply(m.indices, m.indptr, m.shape)
    empty = np.zeros((25, 0))
    assert expm_multiply(m.data, empty, 0.5).shape == (25, 0)
    assert jax.vmap(expm_multiply, (None, 0, None))(m.data, np.zeros((2, 25, 0)), 0.5).shape == (
        2,
        25,
        0,
    )
    total = jax.jit(jax.grad(lambda d, b, t: jnp.sum(expm_multiply(d, b, t)), (0, 1, 2)))
    gdata, gb, gt = total(m.data, empty, 0.5)
    np.testing.assert_array_equal(gdata, np.zeros(m.nnz))
    assert gb.shape == (25, 0) and float(gt) == 0.0
    y, dy = jax.jvp(expm_multiply, (m.data, empty, 0.5), (np.ones(m.nnz), empty, 1.0))
    assert y.shape == dy.shape == (25, 0)


def test_no_stored_entries():
    """A pattern with no entries is the zero matrix: ``expm(0) b = b``, and ``data`` (empty)
    has an empty tangent that contributes nothing."""
    zero = scipy.sparse.csr_array((6, 6))
    expm_multiply = ExpmMultiply(zero.indices, zero.indptr, zero.shape)
    data, b = np.zeros(0), RNG.standard_normal((6, 2))
    for jvp in (jax.jvp, jax.jit(jax.jvp, static_argnums=0)):
        y, dy = jvp(lambda d, t: expm_multiply(d, b, t), (data, 0.5), (data, 1.0))
        np.testing.assert_allclose(y, b, atol=1e-15)
        np.testing.assert_allclose(dy, np.zeros((6, 2)), atol=1e-15)
    _, dy = jax.jvp(lambda d: expm_multiply(d, b, 0.5), (data,), (data,))
    np.testing.assert_array_equal(dy, np.zeros((6, 2)))
