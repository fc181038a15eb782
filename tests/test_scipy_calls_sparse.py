"""SciPy's own calls of ``scipy.sparse.linalg`` (``jaxbridge.adapters.sparse``: ``eigsh``,
``svds``, ``expm_multiply``, ``spsolve``) on a ``scipy.sparse`` matrix, a BCOO matrix and a
dense array: SciPy's values and orders, derivatives in the matrix's values against closed
forms or central differences of SciPy's own call, and refusals by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg as scipy_sparse
from jax.experimental import sparse as jax_sparse

from jaxbridge.adapters import sparse

pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


N = 24


def _matrix(seed=2):
    """A nonsymmetric, well-conditioned sparse matrix with an explicit duplicate-free CSR."""
    lap = scipy.sparse.diags([-1.0, 2.5, -1.2], [-1, 0, 1], shape=(N, N), format="csr")
    extra = scipy.sparse.random(N, N, density=0.05, random_state=seed, format="csr")
    return (lap + 0.3 * extra).tocsr()


def _symmetric():
    a = _matrix()
    return ((a + a.T) / 2).tocsr()


def _forms(a):
    """``a`` as each form the calls take, with its stored values (the differentiable part)."""
    bcoo = jax_sparse.BCOO.fromdense(jnp.asarray(a.toarray()))
    return {"scipy": a, "bcoo": bcoo, "dense": jnp.asarray(a.toarray())}


@pytest.mark.parametrize("form", ["scipy", "bcoo", "dense"])
def test_values_are_scipys_for_every_form_of_the_matrix(form):
    a, sym = _matrix(), _symmetric()
    b = np.random.default_rng(0).standard_normal(N)
    two = np.random.default_rng(1).standard_normal((N, 2))
    w, v = sparse.eigsh(_forms(sym)[form], k=3, which="SA")
    w0, v0 = scipy_sparse.eigsh(sym, k=3, which="SA")
    np.testing.assert_allclose(w, w0, rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(v).T @ v0), np.eye(3), atol=1e-9)
    rect = scipy.sparse.random(12, 9, density=0.5, random_state=3, format="csr")
    u, s, vt = sparse.svds(_forms(rect)[form], k=3)
    u0, s0, vt0 = scipy_sparse.svds(rect, k=3)
    np.testing.assert_allclose(s, s0, rtol=1e-12)  # ascending, as SciPy's
    assert np.all(np.diff(np.asarray(s)) > 0)
    np.testing.assert_allclose(np.abs(np.sum(np.asarray(u) * u0, 0)), 1, rtol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(np.asarray(vt) * vt0, 1)), 1, rtol=1e-9)
    assert sparse.svds(_forms(rect)[form], k=3, return_singular_vectors=False).shape == (3,)
    m = _forms(a * 0.3)[form]
    for rhs in (b, two):
        np.testing.assert_allclose(
            sparse.expm_multiply(m, rhs), scipy_sparse.expm_multiply(0.3 * a, rhs), rtol=1e-12
        )
        np.testing.assert_allclose(
            sparse.spsolve(_forms(a)[form], rhs), scipy_sparse.spsolve(a.tocsc(), rhs), rtol=1e-11
        )
    for endpoint in (True, False):
        got = sparse.expm_multiply(m, two, start=0.5, stop=2.0, num=4, endpoint=endpoint)
        want = scipy_sparse.expm_multiply(
            0.3 * a, two, start=0.5, stop=2.0, num=4, endpoint=endpoint
        )
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_derivatives_in_the_values_are_the_closed_forms():
    """Through a BCOO matrix's data: Hellmann-Feynman for the eigenvalues and singular
    values (each stored entry an independent variable), ``-λ xᵀ`` at the entries and
    ``A⁻ᵀ`` for a solve."""
    sym = _forms(_symmetric())["bcoo"]
    at = np.asarray(sym.indices)
    rebuild = lambda d: jax_sparse.BCOO((d, sym.indices), shape=sym.shape)  # noqa: E731
    w0, v0 = scipy_sparse.eigsh(_symmetric(), k=3, which="SA")
    grad = jax.grad(
        lambda d: sparse.eigsh(rebuild(d), k=3, which="SA")[0] @ jnp.array([1.0, 2.0, 3.0])
    )
    want = (v0 * [1.0, 2.0, 3.0]) @ v0.T
    np.testing.assert_allclose(grad(sym.data), want[at[:, 0], at[:, 1]], atol=1e-12)

    rect = _forms(scipy.sparse.random(12, 9, density=0.5, random_state=3, format="csr"))["bcoo"]
    where = np.asarray(rect.indices)
    u0, s0, vt0 = scipy_sparse.svds(scipy.sparse.csr_array(np.asarray(rect.todense())), k=3)
    grad = jax.grad(
        lambda d: jnp.sum(sparse.svds(jax_sparse.BCOO((d, rect.indices), shape=rect.shape), 3)[1])
    )
    want = u0 @ vt0  # Σ u_i v_iᵀ
    np.testing.assert_allclose(grad(rect.data), want[where[:, 0], where[:, 1]], atol=1e-12)

    a = _forms(_matrix())["bcoo"]
    at = np.asarray(a.indices)
    b = np.random.default_rng(0).standard_normal(N)
    dense = _matrix().toarray()
    x = np.linalg.solve(dense, b)
    lam = np.linalg.solve(dense.T, np.ones(N))
    solve = lambda d, b: sparse.spsolve(jax_sparse.BCOO((d, a.indices), shape=a.shape), b)  # noqa: E731
    g_data, g_b = jax.grad(lambda d, b: jnp.sum(solve(d, b)), (0, 1))(a.data, b)
    np.testing.assert_allclose(g_data, -lam[at[:, 0]] * x[at[:, 1]], rtol=1e-10)
    np.testing.assert_allclose(g_b, lam, rtol=1e-10)


def test_expm_multiply_derivatives_match_differences_of_scipys_call():
    a = _matrix() * 0.3
    csr = scipy.sparse.csr_array(a)
    b = np.random.default_rng(4).standard_normal(N)
    c = np.random.default_rng(5).standard_normal(N)
    bcoo = _forms(csr)["bcoo"]
    data, where = np.asarray(bcoo.data), np.asarray(bcoo.indices)

    def scipys(d, b, stop=1.0):
        m = scipy.sparse.coo_array((d, (where[:, 0], where[:, 1])), shape=(N, N)).tocsr()
        return c @ scipy_sparse.expm_multiply(m, b, start=0.0, stop=stop, num=2)[-1]

    def ours(d, b, stop):
        m = jax_sparse.BCOO((d, bcoo.indices), shape=bcoo.shape)
        return c @ sparse.expm_multiply(m, b, start=0.0, stop=stop, num=2)[-1]

    g_data, g_b, g_stop = jax.grad(ours, (0, 1, 2))(data, b, 1.0)
    for h in (1e-5, 1e-6):
        for k in (0, 7, len(data) - 1):
            e = np.zeros_like(data)
            e[k] = h
            diff = (scipys(data + e, b) - scipys(data - e, b)) / (2 * h)
            np.testing.assert_allclose(g_data[k], diff, rtol=1e-6, atol=1e-9)
        diff = (scipys(data, b, 1.0 + h) - scipys(data, b, 1.0 - h)) / (2 * h)
        np.testing.assert_allclose(g_stop, diff, rtol=1e-6)
    np.testing.assert_allclose(g_b, scipy_sparse.expm_multiply(a.T.tocsr(), c), rtol=1e-10)


def test_the_calls_work_under_jit_and_vmap_with_the_pattern_fixed():
    a = _forms(_matrix())["bcoo"]
    b = np.random.default_rng(0).standard_normal(N)
    solve = lambda d: sparse.spsolve(jax_sparse.BCOO((d, a.indices), shape=a.shape), b)  # noqa: E731
    batch = jnp.stack([a.data, 2 * a.data])
    got = jax.jit(jax.vmap(solve))(batch)
    want = scipy_sparse.spsolve(_matrix().tocsc(), b)
    np.testing.assert_allclose(got, np.stack([want, want / 2]), rtol=1e-11)


def test_bad_arguments_are_refused_by_name():
    sym = _symmetric()
    with pytest.raises(TypeError, match=r"eigsh: argument 'M' is not taken: the generalized"):
        sparse.eigsh(sym, k=2, M=sym)
    with pytest.raises(TypeError, match=r"svds: argument 'which' is not taken"):
        sparse.svds(sym, k=2, which="SM")
    with pytest.raises(TypeError, match=r"expm_multiply: arguments 'start', 'stop' and 'num'"):
        sparse.expm_multiply(sym, np.ones(N), start=0.0)
    with pytest.raises(ValueError, match=r"expm_multiply: argument 'B' must be \(24,\)"):
        sparse.expm_multiply(sym, np.ones(N + 1))
    with pytest.raises(ValueError, match=r"spsolve: A must be square and argument 'b'"):
        sparse.spsolve(sym, np.ones(3))
    with pytest.raises(ValueError, match=r"eigsh: argument 'A' must be a scipy.sparse matrix"):
        sparse.eigsh(np.ones(4), k=1)
    bcoo = _forms(sym)["bcoo"]
    with pytest.raises(ValueError, match=r"spsolve: argument 'A' is a BCOO matrix whose indices"):
        jax.jit(lambda m: sparse.spsolve(m, jnp.ones(N)))(bcoo)


def test_duplicate_entries_are_summed_as_scipy_sums_them():
    rows, columns = np.array([0, 1, 1, 2, 0]), np.array([0, 1, 1, 2, 0])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])  # (0, 0) twice: 6; (1, 1) twice: 5
    coo = scipy.sparse.coo_array((values, (rows, columns)), shape=(3, 3))
    bcoo = jax_sparse.BCOO((jnp.asarray(values), jnp.stack([rows, columns], 1)), shape=(3, 3))
    for a in (coo, bcoo):
        np.testing.assert_allclose(sparse.spsolve(a, np.ones(3)), [1 / 6, 1 / 5, 1 / 4])
