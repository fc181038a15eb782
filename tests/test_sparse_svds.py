"""``Svds``: values against dense ``numpy.linalg.svd`` on the same matrices, derivatives
(singular values and vectors, both modes) against float64 central differences of dense
``svd``, the sign convention, repeated singular values, and errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse

from jaxbridge.adapters.sparse import Svds


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _matrix(m, n, seed=0):
    rng = np.random.default_rng(seed)
    a = scipy.sparse.csr_array(scipy.sparse.random_array((m, n), density=0.15, rng=rng))
    a.sort_indices()
    return a


M = _matrix(90, 60)
K = 3


def _dense(data, m=M, k=K):
    """Reference triplets of the matrix with values ``data``, with the documented signs."""
    a = scipy.sparse.csr_array((data, m.indices, m.indptr), shape=m.shape).toarray()
    u, s, vt = np.linalg.svd(a)
    u, s, vt = u[:, :k], s[:k], vt[:k]
    signs = np.sign(u[np.argmax(np.abs(u), axis=0), np.arange(k)])
    return u * signs, s, vt * signs[:, None]


def _central(f, x, direction, h=1e-5):
    d1 = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
    d2 = (f(x + 2 * h * direction) - f(x - 2 * h * direction)) / (4 * h)
    return (4 * d1 - d2) / 3


@pytest.mark.parametrize("transpose", [False, True])
def test_values_match_dense_svd(transpose):
    m = scipy.sparse.csr_array(M.T) if transpose else M
    m.sort_indices()
    u, s, vt = Svds(m.indices, m.indptr, m.shape, k=K)(m.data)
    u_ref, s_ref, vt_ref = _dense(m.data, m)
    np.testing.assert_allclose(s, s_ref, rtol=1e-12)
    assert (np.diff(s) < 0).all()
    np.testing.assert_allclose(u, u_ref, atol=1e-10)
    np.testing.assert_allclose(vt, vt_ref, atol=1e-10)


def test_grad_and_jvp_match_dense_central_differences():
    svds = Svds(M.indices, M.indptr, M.shape, k=K)
    rng = np.random.default_rng(1)
    wu, ws, wvt = rng.standard_normal((90, K)), rng.standard_normal(K), rng.standard_normal((K, 60))

    def f(u, s, vt):
        return jnp.sum(wu * u) + jnp.sum(ws * s) + jnp.sum(wvt * vt)

    direction = rng.standard_normal(M.nnz)
    expected = _central(lambda d: f(*_dense(d)), M.data, direction)
    g = jax.jit(jax.grad(lambda d: f(*svds(d))))(M.data)
    np.testing.assert_allclose(g @ direction, expected, rtol=1e-7)
    _, tangent = jax.jvp(lambda d: f(*svds(d)), (M.data,), (direction,))
    np.testing.assert_allclose(tangent, expected, rtol=1e-7)


def test_singular_value_gradient_is_u_v_per_entry():
    svds = Svds(M.indices, M.indptr, M.shape, k=K)
    jacobian = jax.jacrev(lambda d: svds(d)[1])(M.data)
    u, _, vt = _dense(M.data)
    rows = np.repeat(np.arange(90), np.diff(M.indptr))
    np.testing.assert_allclose(jacobian, (u[rows] * vt.T[M.indices]).T, atol=1e-12)


def _twice(block):
    """Two copies of a dense ``block``: every singular value double."""
    a = scipy.sparse.csr_array(scipy.sparse.block_diag([scipy.sparse.csr_array(block)] * 2))
    a.sort_indices()
    return a


def test_repeated_singular_values_refuse_the_vector_derivative():
    a = _twice(_matrix(8, 6, seed=2).toarray())
    svds = Svds(a.indices, a.indptr, a.shape, k=2)
    with pytest.raises(Exception, match=r"Svds: singular values 0 and 1 .* apart"):
        jax.grad(lambda d: svds(d)[0][0, 0])(a.data)
    # the singular values' derivative is defined: the sum's is that of the trace norm
    g = jax.grad(lambda d: jnp.sum(svds(d)[1]))(a.data)
    u, _, vt = np.linalg.svd(a.toarray())
    projector = u[:, :2] @ vt[:2]
    rows = np.repeat(np.arange(16), np.diff(a.indptr))
    np.testing.assert_allclose(g, projector[rows, a.indices], atol=1e-10)
    nan = Svds(a.indices, a.indptr, a.shape, k=2, on_failure="nan")
    assert np.isnan(jax.grad(lambda d: nan(d)[2][0, 0])(a.data)).all()


def test_a_twin_not_returned_is_refused_too():
    """Two copies of one block: the largest singular value is double, and with ``k=1`` its
    twin is not returned. The vectors' derivative is refused as for a returned twin (an
    error naming ``Svds``, or NaN); the singular value's own derivative is still defined."""
    a = _twice(_matrix(8, 6, seed=2).toarray())
    svds = Svds(a.indices, a.indptr, a.shape, k=1)
    with pytest.raises(
        np.linalg.LinAlgError,
        match=r"Svds: singular values 0 \(.*\) and one not returned are at most .* apart",
    ):
        jax.grad(lambda d: svds(d)[0][0, 0])(a.data)
    nan = Svds(a.indices, a.indptr, a.shape, k=1, on_failure="nan")
    assert np.isnan(jax.grad(lambda d: nan(d)[2][0, 0])(a.data)).all()
    assert np.isfinite(jax.grad(lambda d: svds(d)[1][0])(a.data)).all()


@pytest.mark.parametrize("k", [1, 2], ids=["twin-not-returned", "twin-returned"])
def test_forward_mode_at_a_repeated_singular_value(k):
    """Every singular value double: forward mode refuses the vectors' tangents as reverse
    mode does (an error naming ``Svds``, ``jvp`` eagerly and under jit, ``jacfwd``); with
    ``on_failure="nan"`` they are NaN, and so are the returned pair's singular values'
    (``k=2``: the direction splits them). The sum of the two largest has the gradient
    ``<u vᵀ, da>`` summed over both, from dense ``svd``."""
    a = _twice(_matrix(8, 6, seed=2).toarray())
    svds = Svds(a.indices, a.indptr, a.shape, k=k)
    nan = Svds(a.indices, a.indptr, a.shape, k=k, on_failure="nan")
    direction = np.random.default_rng(4).standard_normal(a.nnz)

    def tangents(solver):
        return [
            lambda: jax.jvp(solver, (a.data,), (direction,))[1],
            lambda: jax.jit(lambda d, t: jax.jvp(solver, (d,), (t,))[1])(a.data, direction),
            lambda: [j @ direction for j in jax.jit(jax.jacfwd(solver))(a.data)],
        ]

    for tangent in tangents(svds):
        with pytest.raises(Exception, match=r"raised RepeatedEigenvalue on the host: Svds: "):
            tangent()
    u, _, vt = np.linalg.svd(a.toarray())
    rows = np.repeat(np.arange(16), np.diff(a.indptr))
    expected = (u[:, :2] @ vt[:2])[rows, a.indices] @ direction
    for tangent in tangents(nan):
        du, ds, dvt = tangent()
        assert np.isnan(du).all() and np.isnan(dvt).all()
        # (k=2: the pair, which this direction splits, NaN alike; k=1: its twin is not
        # returned, which the singular values' rule does not see)
        assert np.isnan(ds).all() if k == 2 else np.isfinite(ds).all()
    if k == 2:  # the pair's sum: reverse mode
        for gradient in (jax.grad, lambda f: jax.jit(jax.grad(f))):
            got = gradient(lambda d: jnp.sum(svds(d)[1]))(a.data)
            np.testing.assert_allclose(got @ direction, expected, rtol=1e-10)


def test_bad_parameters():
    with pytest.raises(
        ValueError, match=r"Svds: parameter 'k' must satisfy 1 <= k < min\(m, n\) = 60"
    ):
        Svds(M.indices, M.indptr, M.shape, k=60)
    with pytest.raises(ValueError, match=r"Svds: parameter 'indices' holds column 70"):
        Svds(np.full(M.nnz, 70), M.indptr, M.shape)


def test_zero_matrix_is_a_clear_failure():
    """ARPACK cannot start on a zero matrix: a ``SolveFailure`` that says so (NaN on
    request), not SciPy's bare ``ArpackError``."""
    empty = scipy.sparse.csr_array(M.shape)
    cases = [(M.indices, M.indptr, np.zeros(M.nnz)), (empty.indices, empty.indptr, np.zeros(0))]
    for indices, indptr, data in cases:
        with pytest.raises(
            np.linalg.LinAlgError,
            match=r"Svds.forward .*the matrix is zero, .*error -9.*all its singular values are 0",
        ):
            Svds(indices, indptr, M.shape, k=K)(data)
        u, s, vt = Svds(indices, indptr, M.shape, k=K, on_failure="nan")(data)
        assert u.shape == (90, K) and s.shape == (K,) and vt.shape == (K, 60)
        assert all(np.isnan(x).all() for x in (u, s, vt))
