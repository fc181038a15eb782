"""``Eigsh``: values against dense ``numpy.linalg.eigh`` on the same matrices, derivatives
(eigenvalues and eigenvectors, both modes, second order) against float64 central
differences of dense ``eigh``, the sign convention, repeated eigenvalues, vmap, float32, and
errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from jaxbridge.adapters.sparse import Eigsh


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _matrix(n, seed=0, spacing=1.0):
    """A symmetric sparse matrix with both triangles stored and a well-separated spectrum:
    a spaced diagonal, a perturbed band, a few long-range couplings."""
    rng = np.random.default_rng(seed)
    band = rng.uniform(-0.2, 0.2, n - 1)
    a = scipy.sparse.diags([band, spacing * np.arange(1, n + 1), band], [-1, 0, 1]).tolil()
    for i, j in rng.integers(0, n, (n // 10 + 1, 2)):
        if i != j:
            a[i, j] = a[j, i] = rng.uniform(-0.2, 0.2)
    csr = scipy.sparse.csr_array(a.tocsr())
    csr.sort_indices()
    return csr


def _signed(v):
    """The documented convention, on a dense reference: each column's entry of largest
    magnitude positive."""
    largest = np.argmax(np.abs(v), axis=0)
    return v * np.sign(v[largest, np.arange(v.shape[1])])


def _dense_pairs(a, select):
    """Reference eigenpairs of ``(a + aᵀ) / 2`` (dense), chosen by ``select`` (indices into the
    ascending spectrum)."""
    w, v = np.linalg.eigh((a + a.T) / 2)
    return w[select], _signed(v[:, select])


def _with_data(m, data):
    return scipy.sparse.csr_array((data, m.indices, m.indptr), shape=m.shape).toarray()


def _central(f, x, direction, h=1e-5):
    """Central difference along ``direction`` with Richardson extrapolation (O(h⁴))."""
    d1 = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
    d2 = (f(x + 2 * h * direction) - f(x - 2 * h * direction)) / (4 * h)
    return (4 * d1 - d2) / 3


M = _matrix(120)
N = M.shape[0]


@pytest.mark.parametrize(
    ("which", "sigma", "select"),
    [
        ("LM", None, slice(-4, None)),
        ("LA", None, slice(-4, None)),
        ("SA", None, slice(0, 4)),
        ("SM", None, slice(0, 4)),
        ("LM", 20.3, [18, 19, 20, 21]),  # shift-invert: the four nearest 20.3
    ],
)
def test_values_match_dense_eigh(which, sigma, select):
    w, v = Eigsh(M.indices, M.indptr, M.shape, k=4, which=which, sigma=sigma)(M.data)
    w_ref, v_ref = _dense_pairs(M.toarray(), select)
    np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v, v_ref, atol=1e-10)
    np.testing.assert_allclose(np.asarray(v).T @ np.asarray(v), np.eye(4), atol=1e-12)


def test_sign_convention_and_repeatability():
    eigsh = Eigsh(M.indices, M.indptr, M.shape, k=3, which="SA")
    _, v = eigsh(M.data)
    largest = np.argmax(np.abs(v), axis=0)
    assert (np.asarray(v)[largest, np.arange(3)] > 0).all()
    _, again = eigsh(-(-M.data))  # a new array, the same values
    np.testing.assert_array_equal(v, again)


def test_symmetric_part_of_a_nonsymmetric_matrix():
    """The matrix is taken as ``(a + aᵀ) / 2``: the values of one triangle moved alone."""
    data = M.data.copy()
    upper = M.indices > np.repeat(np.arange(N), np.diff(M.indptr))
    data[upper] += 0.1
    w, v = Eigsh(M.indices, M.indptr, M.shape, k=3, which="LA")(data)
    w_ref, v_ref = _dense_pairs(_with_data(M, data), slice(-3, None))
    np.testing.assert_allclose(w, w_ref, rtol=1e-12)
    np.testing.assert_allclose(v, v_ref, atol=1e-10)


def _objective(eigsh, weights):
    """A scalar of both outputs, with weights so that every eigenvector entry matters."""

    def f(w, v):
        return jnp.sum(jnp.arange(1.0, w.shape[-1] + 1) * w) + jnp.sum(weights * v)

    return f


@pytest.mark.parametrize(("which", "sigma"), [("SA", None), ("LM", 20.3)])
def test_grad_and_jvp_match_dense_central_differences(which, sigma):
    eigsh = Eigsh(M.indices, M.indptr, M.shape, k=3, which=which, sigma=sigma)
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((N, 3))
    f = _objective(eigsh, weights)
    select = slice(0, 3) if which == "SA" else [18, 19, 20]  # nearest 20.3

    def reference(data):
        return f(*_dense_pairs(_with_data(M, data), select))

    direction = rng.standard_normal(M.nnz)  # not symmetric: the entries are independent
    expected = _central(reference, M.data, direction)
    g = jax.jit(jax.grad(lambda d: f(*eigsh(d))))(M.data)
    np.testing.assert_allclose(g @ direction, expected, rtol=1e-7)
    _, tangent = jax.jvp(lambda d: f(*eigsh(d)), (M.data,), (direction,))
    np.testing.assert_allclose(tangent, expected, rtol=1e-7)


def test_eigenvalue_gradient_is_hellmann_feynman_per_entry():
    """``dw_i / d data_e = v[r, i] v[c, i]`` for the entry at ``(r, c)``: against dense
    ``eigh``'s vectors at every entry, and against dense central differences of each
    eigenvalue along single entries where the derivative is above their rounding (about
    1e-9 here: the eigenvalues are about 120)."""
    eigsh = Eigsh(M.indices, M.indptr, M.shape, k=2, which="LA")
    jacobian = np.asarray(jax.jacrev(lambda d: eigsh(d)[0])(M.data))
    rows = np.repeat(np.arange(N), np.diff(M.indptr))
    _, v_ref = _dense_pairs(M.toarray(), slice(-2, None))
    np.testing.assert_allclose(jacobian, (v_ref[rows] * v_ref[M.indices]).T, atol=1e-13)
    for e in np.flatnonzero(rows >= N - 3):  # where the two top eigenvectors live
        unit = np.zeros(M.nnz)
        unit[e] = 1.0
        expected = _central(
            lambda d: _dense_pairs(_with_data(M, d), slice(-2, None))[0], M.data, unit
        )
        np.testing.assert_allclose(jacobian[:, e], expected, atol=1e-8)


def test_full_eigenvector_jacobian_both_modes():
    small = _matrix(12, seed=3)
    eigsh = Eigsh(small.indices, small.indptr, small.shape, k=2, which="LA")
    reverse = np.asarray(jax.jacrev(lambda d: eigsh(d)[1])(small.data))
    forward = np.asarray(jax.jacfwd(lambda d: eigsh(d)[1])(small.data))
    columns = [
        _central(lambda d: _dense_pairs(_with_data(small, d), slice(-2, None))[1], small.data, unit)
        for unit in np.eye(small.nnz)
    ]
    expected = np.stack(columns, axis=-1)
    np.testing.assert_allclose(reverse, expected, atol=1e-8)
    np.testing.assert_allclose(forward, expected, atol=1e-8)


@pytest.mark.slow
def test_second_derivatives_match_central_differences():
    small = _matrix(15, seed=4)
    eigsh = Eigsh(small.indices, small.indptr, small.shape, k=2, which="SA")
    rng = np.random.default_rng(5)
    weights = rng.standard_normal((15, 2))

    def f(d):
        w, v = eigsh(d)
        return jnp.sum(w**2) + jnp.sum(weights * v)

    direction = rng.standard_normal(small.nnz)
    gradient = jax.grad(f)
    expected = _central(lambda d: np.asarray(gradient(d)), small.data, direction, h=1e-4)
    scale = np.abs(expected).max()
    for hessian in (jax.jacfwd(gradient), jax.jacrev(gradient)):
        np.testing.assert_allclose(hessian(small.data) @ direction, expected, atol=1e-6 * scale)


BLOCK = _matrix(6, seed=6).toarray()
TOP = np.linalg.eigvalsh(BLOCK)[-1]


def _repeated(gap=0.0, coupled=False):
    """Two copies of ``BLOCK``, the second shifted up by ``gap`` times its largest eigenvalue:
    each eigenvalue has a twin that far away (every one double for ``gap=0``). ``coupled``
    rotates each row of the first copy into the same row of the second (the spectrum is
    the same), so that the pattern, and so a perturbation, couples the twins."""
    a = scipy.linalg.block_diag(BLOCK, BLOCK + gap * TOP * np.eye(6))
    if coupled:
        c, s = np.cos(0.6), np.sin(0.6)
        rotation = np.block([[c * np.eye(6), -s * np.eye(6)], [s * np.eye(6), c * np.eye(6)]])
        a = rotation @ a @ rotation.T
        a = (a + a.T) / 2
    a = scipy.sparse.csr_array(a)
    a.sort_indices()
    return a


def test_repeated_eigenvalues_refuse_the_eigenvector_derivative():
    a = _repeated()
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=2, which="LA")
    with pytest.raises(Exception, match=r"Eigsh: eigenvalues 0 and 1 .* apart"):
        jax.grad(lambda d: eigsh(d)[1][0, 0])(a.data)
    # the eigenvalues' derivative is defined: the sum's is the trace of the projector
    g = jax.grad(lambda d: jnp.sum(eigsh(d)[0]))(a.data)
    w_ref, v_ref = np.linalg.eigh(a.toarray())
    projector = v_ref[:, -2:] @ v_ref[:, -2:].T
    rows = np.repeat(np.arange(12), np.diff(a.indptr))
    np.testing.assert_allclose(g, projector[rows, a.indices], atol=1e-10)


def test_repeated_eigenvalues_give_nan_on_request():
    a = _repeated()
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=2, which="LA", on_failure="nan")
    g = jax.grad(lambda d: eigsh(d)[1][0, 0])(a.data)
    assert np.isnan(g).all()
    assert np.isfinite(jax.grad(lambda d: jnp.sum(eigsh(d)[0]))(a.data)).all()


def _dense_vector_tangent(a, direction):
    """The tangent of the largest eigenvalue's vector of ``a`` along ``direction``, from
    dense ``eigh``: ``dv = Σ_j v_j (v_jᵀ da v) / (w - w_j)``, signed as documented."""
    da = _with_data(a, direction)
    w, v = np.linalg.eigh(a.toarray())
    coefficients = (v.T @ ((da + da.T) / 2) @ v[:, -1])[:-1] / (w[-1] - w[:-1])
    return v[:, :-1] @ coefficients * np.sign(v[np.argmax(np.abs(v[:, -1])), -1])


def _forward_modes(f, x, t):
    """``f``'s tangent at ``x`` along ``t`` by ``jvp`` (eagerly and under jit) and by
    ``jacfwd`` (under jit), each a function to call: every way forward mode runs."""
    return [
        lambda: jax.jvp(f, (x,), (t,))[1],
        lambda: jax.jit(lambda x, t: jax.jvp(f, (x,), (t,))[1])(x, t),
        lambda: jax.tree.map(lambda j: j @ t, jax.jit(jax.jacfwd(f))(x)),
    ]


@pytest.mark.parametrize("k", [1, 2], ids=["twin-not-returned", "twin-returned"])
@pytest.mark.parametrize("gap", [0.0, 1e-13, 2e-11])
def test_a_repeated_eigenvalue_is_refused_whether_its_twin_is_returned_or_not(gap, k):
    """The largest eigenvalue's twin is ``gap`` (relative) below it, among the ``k`` returned
    or not: the same rule refuses its vector's derivative, in words, or gives NaN, in
    reverse and in forward mode alike (eagerly and under jit)."""
    a = _repeated(gap, coupled=True)
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=k, which="LA")
    # forward mode solves for every vector: the first refused is 0
    twin = "(1 and 0|0 and 1) .*" if k == 2 else r"0 \(.*\) and one not returned are at most .*"
    message = rf"Eigsh: eigenvalues {twin}apart, within 1e-10 times the largest \|w\|"
    with pytest.raises(np.linalg.LinAlgError, match=message):
        jax.grad(lambda d: eigsh(d)[1][0, -1])(a.data)
    with pytest.raises(Exception, match=message):
        jax.jit(jax.grad(lambda d: eigsh(d)[1][0, -1]))(a.data)
    direction = np.random.default_rng(11).standard_normal(a.nnz)
    for tangent in _forward_modes(lambda d: eigsh(d)[1][:, -1], a.data, direction):
        with pytest.raises(Exception, match=message):
            tangent()
    nan = Eigsh(a.indices, a.indptr, a.shape, k=k, which="LA", on_failure="nan")
    assert np.isnan(jax.grad(lambda d: nan(d)[1][0, -1])(a.data)).all()
    for tangent in _forward_modes(lambda d: nan(d)[1][:, -1], a.data, direction):
        assert np.isnan(tangent()).all()


@pytest.mark.parametrize("k", [1, 2], ids=["twin-not-returned", "twin-returned"])
def test_a_near_twin_beyond_the_gap_is_accepted(k):
    """Twins 1e-9 (relative) apart, ten times the refused gap: the vector's tangent is the
    dense one. Both carry a relative error of about eps ||a|| / gap (1e-6 here)."""
    a = _repeated(1e-9, coupled=True)
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=k, which="LA")
    direction = np.random.default_rng(8).standard_normal(a.nnz)
    _, (_, dv) = jax.jvp(eigsh, (a.data,), (direction,))
    expected = _dense_vector_tangent(a, direction)
    np.testing.assert_allclose(dv[:, -1], expected, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("k", [1, 2], ids=["twin-not-returned", "twin-returned"])
def test_eigenvalue_derivatives_need_no_gap(k):
    """The largest eigenvalue's twin 2e-11 (relative) below it, returned or not: the vectors'
    derivatives are refused, the eigenvalue's is exact in both modes: reverse mode and
    forward mode under jit (which drops the vectors' unused tangents), and eager forward mode
    with ``on_failure="nan"`` (eager ``jvp`` computes every output's tangent, used or not, so
    there the vectors' refusal is raised, as documented). The copies do not couple, so the
    largest eigenvalue is the second copy's own: the reference is central differences of that
    6 x 6 block's dense ``eigvalsh``."""
    a = _repeated(2e-11)
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=k, which="LA")
    nan = Eigsh(a.indices, a.indptr, a.shape, k=k, which="LA", on_failure="nan")
    direction = np.random.default_rng(9).standard_normal(a.nnz)

    def second_copy_top(data):
        block = _with_data(a, data)[6:, 6:]
        return np.linalg.eigvalsh((block + block.T) / 2)[-1]

    expected = _central(second_copy_top, a.data, direction)

    def top(d, solver=eigsh):
        return solver(d)[0][-1]

    def jvp(d, t, solver=eigsh):
        return jax.jvp(lambda d: top(d, solver), (d,), (t,))[1]

    with pytest.raises(np.linalg.LinAlgError, match=r"Eigsh: eigenvalues .* apart"):
        jvp(a.data, direction)
    for tangent in (jax.jit(jvp)(a.data, direction), jvp(a.data, direction, nan)):
        np.testing.assert_allclose(tangent, expected, rtol=1e-8)
    if k == 1:
        for gradient in (jax.grad(top)(a.data), jax.jit(jax.grad(top))(a.data)):
            np.testing.assert_allclose(gradient @ direction, expected, rtol=1e-8)
        return
    # the twin returned: the top one's gradient alone is refused (its eigenvector, within
    # the gap of its twin's, is not determined, and the gradient is a vector of every
    # direction), the same eagerly and under jit; the pair's sum's is the copies' tops'
    for gradient in (jax.grad(top), jax.jit(jax.grad(top))):
        with pytest.raises(Exception, match=r"Eigsh: eigenvalues 0 and 1 .* cotangents differ"):
            gradient(a.data)

    def both_tops(data):
        dense = _with_data(a, data)
        tops = [np.linalg.eigvalsh((b + b.T) / 2)[-1] for b in (dense[:6, :6], dense[6:, 6:])]
        return sum(tops)

    pair = jax.jit(jax.grad(lambda d: jnp.sum(eigsh(d)[0])))(a.data)
    np.testing.assert_allclose(pair @ direction, _central(both_tops, a.data, direction), rtol=1e-7)


@pytest.mark.parametrize("k", [1, 2], ids=["twin-not-returned", "twin-returned"])
def test_forward_mode_at_a_repeated_eigenvalue(k):
    """Every eigenvalue double: forward mode refuses the vectors' tangents as reverse mode
    refuses their cotangents (an error naming ``Eigsh``, eagerly and under jit), and with
    ``on_failure="nan"`` they are NaN, and so are the returned pair's eigenvalues' (``k=2``:
    the direction splits them). Their sum's gradient is the trace of the projector onto the
    double eigenvalue's space along ``da``, from dense ``eigh``."""
    a = _repeated()
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=k, which="LA")
    nan = Eigsh(a.indices, a.indptr, a.shape, k=k, which="LA", on_failure="nan")
    direction = np.random.default_rng(10).standard_normal(a.nnz)
    for tangent in _forward_modes(eigsh, a.data, direction):
        with pytest.raises(Exception, match=r"raised RepeatedEigenvalue on the host: Eigsh: "):
            tangent()

    _, v_ref = np.linalg.eigh(a.toarray())
    projector = v_ref[:, -2:] @ v_ref[:, -2:].T
    for tangent in _forward_modes(nan, a.data, direction):
        dw, dv = tangent()
        assert np.isnan(dv).all()
        # (k=2: the double eigenvalue's two, which this direction splits, NaN alike; the
        # diagonal of ARPACK's basis was returned, and only its sum was right. k=1: its twin
        # is not returned, which the eigenvalues' rule does not see)
        assert np.isnan(dw).all() if k == 2 else np.isfinite(dw).all()
    if k == 2:  # the pair's sum: reverse mode, as the trace of the projector
        rows = np.repeat(np.arange(12), np.diff(a.indptr))
        for gradient in (jax.grad, lambda f: jax.jit(jax.grad(f))):
            got = gradient(lambda d: jnp.sum(eigsh(d)[0]))(a.data)
            np.testing.assert_allclose(
                got @ direction, projector[rows, a.indices] @ direction, rtol=1e-10
            )


def test_vmap_matches_a_loop():
    small = _matrix(20, seed=7)
    eigsh = Eigsh(small.indices, small.indptr, small.shape, k=2, which="SA")
    batch = small.data * np.array([[1.0], [1.5], [0.7]])
    w, v = jax.jit(jax.vmap(eigsh))(batch)
    g = jax.vmap(jax.grad(lambda d: jnp.sum(eigsh(d)[1][:3] ** 3)))(batch)
    for i, data in enumerate(batch):
        w1, v1 = eigsh(data)
        np.testing.assert_allclose(w[i], w1, rtol=1e-12)
        np.testing.assert_allclose(v[i], v1, atol=1e-12)
        g1 = jax.grad(lambda d: jnp.sum(eigsh(d)[1][:3] ** 3))(data)
        np.testing.assert_allclose(g[i], g1, atol=1e-12)


def test_float32():
    with jax.enable_x64(False):
        eigsh = Eigsh(M.indices, M.indptr, M.shape, k=3, which="SA")
        w, v = eigsh(jnp.asarray(M.data, jnp.float32))
        assert w.dtype == v.dtype == jnp.float32
        g = jax.grad(lambda d: jnp.sum(eigsh(d)[0]))(jnp.asarray(M.data, jnp.float32))
        assert g.dtype == jnp.float32
    w_ref, _ = _dense_pairs(M.toarray(), slice(0, 3))
    np.testing.assert_allclose(w, w_ref, rtol=1e-6)


def test_non_finite_data():
    eigsh = Eigsh(M.indices, M.indptr, M.shape, k=2)
    data = M.data.copy()
    data[3] = np.nan
    with pytest.raises(np.linalg.LinAlgError, match=r"Eigsh.forward .*'data' has non-finite"):
        eigsh(data)
    w, v = Eigsh(M.indices, M.indptr, M.shape, k=2, on_failure="nan")(data)
    assert np.isnan(w).all() and np.isnan(v).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, r"Eigsh: parameter 'k' must satisfy 1 <= k < n = 120"),
        ({"k": 120}, r"Eigsh: parameter 'k' must satisfy"),
        ({"k": 2.5}, r"Eigsh: parameter 'k' must be an int"),
        ({"which": "BE"}, r"Eigsh: parameter 'which' must be one of 'LM', 'SM', 'LA', 'SA'"),
        ({"sigma": float("nan")}, r"Eigsh: parameter 'sigma' must be a finite real"),
        ({"on_failure": "zero"}, r"Eigsh: parameter 'on_failure'"),
        ({"shape": (120, 121)}, r"Eigsh: parameter 'shape' must be square"),
        ({"indptr": M.indptr[:-1]}, r"Eigsh: parameter 'indptr' must have n \+ 1"),
        ({"indices": np.full(M.nnz, 500)}, r"Eigsh: parameter 'indices' holds column 500"),
    ],
)
def test_bad_parameters(kwargs, message):
    args = {"indices": M.indices, "indptr": M.indptr, "shape": M.shape, **kwargs}
    with pytest.raises(ValueError, match=message):
        Eigsh(**args)


def test_wrong_data_length():
    with pytest.raises(ValueError, match=rf"Eigsh: 'data' must have the pattern's {M.nnz}"):
        Eigsh(M.indices, M.indptr, M.shape, k=2)(M.data[:-1])


ZERO_MATRIX = (
    r"Eigsh.forward .*the matrix is zero, or its product with ARPACK's start vector vanished "
    r"\(ARPACK error -9.*all its eigenvalues are 0.*check 'data'"
)


@pytest.mark.parametrize("which", ["LM", "SA"])
def test_zero_matrix_is_a_clear_failure(which):
    """ARPACK cannot start on a zero matrix (all-zero ``data`` or no stored entries): the error
    says so, not the shift-invert factorization (there is no ``sigma``), and NaN on request."""
    empty = scipy.sparse.csr_array((N, N))
    cases = [(M.indices, M.indptr, np.zeros(M.nnz)), (empty.indices, empty.indptr, np.zeros(0))]
    for indices, indptr, data in cases:
        eigsh = Eigsh(indices, indptr, (N, N), k=2, which=which)
        with pytest.raises(np.linalg.LinAlgError, match=ZERO_MATRIX) as caught:
            eigsh(data)
        assert "shift-invert" not in str(caught.value)
        nan = Eigsh(indices, indptr, (N, N), k=2, which=which, on_failure="nan")
        w, v = nan(data)
        assert w.shape == (2,) and v.shape == (N, 2)
        assert np.isnan(w).all() and np.isnan(v).all()


def test_a_pattern_with_no_entries_has_an_empty_gradient():
    """No stored entries (nnz = 0) and a shift: ARPACK runs on the zero matrix, whose
    eigenvalues are SciPy's (0, 0). ``data`` is empty, so its gradient is empty in reverse
    mode as its tangent is in forward mode, with no eigenvector solve that the repeated
    eigenvalues would refuse (#54)."""
    empty = scipy.sparse.csr_array((5, 5))
    eigsh = Eigsh(empty.indices, empty.indptr, empty.shape, k=2, sigma=1.0)
    data = jnp.zeros(0)
    expected = scipy.sparse.linalg.eigsh(empty, k=2, sigma=1.0)[0]
    np.testing.assert_array_equal(eigsh(data)[0], np.sort(expected))
    loss = lambda d: jnp.sum(jnp.sin(eigsh(d)[1])) + jnp.sum(eigsh(d)[0])  # noqa: E731
    for grad in (jax.grad(loss), jax.jit(jax.grad(loss))):
        assert grad(data).shape == (0,)


def test_eigenvalue_tangents_at_an_exactly_repeated_eigenvalue_are_refused_alike_eager_and_jitted():
    """#64: eigenvalues 1, 1, 3, ..., 8, k=3 'SA'. Under jit the eigenvalues' jvp returned
    the diagonal of Vᵀ dA V in ARPACK's basis ([-0.681, 1.437, ...]) where the one-sided
    derivatives are [-0.698, 1.455] (from the right) and the reverse (from the left); eagerly
    it raised. Now it is refused in both, NaN for the pair alone with on_failure='nan' (the
    third's tangent is dense eigh's); along a direction that moves the pair alike (a
    multiple of the identity on their space) their tangents are defined and given."""
    rng = np.random.default_rng(0)
    q = np.linalg.qr(rng.standard_normal((8, 8)))[0]
    dense = q @ np.diag([1.0, 1.0, 3, 4, 5, 6, 7, 8]) @ q.T
    a = scipy.sparse.csr_array((dense + dense.T) / 2)
    a.sort_indices()
    eigsh = Eigsh(a.indices, a.indptr, a.shape, k=3, which="SA")
    nan = Eigsh(a.indices, a.indptr, a.shape, k=3, which="SA", on_failure="nan")
    direction = rng.standard_normal(a.nnz)

    def values(solver):
        return lambda d: solver(d)[0]

    for tangent in _forward_modes(values(eigsh), a.data, direction):
        with pytest.raises(Exception, match=r"Eigsh: eigenvalues 0 and 1 .* this tangent splits"):
            tangent()

    def third_value(d):
        m = _with_data(a, d)
        return np.linalg.eigvalsh((m + m.T) / 2)[2]

    third = _central(third_value, a.data, direction)
    for tangent in _forward_modes(values(nan), a.data, direction):
        dw = np.asarray(tangent())
        assert np.isnan(dw[:2]).all()
        np.testing.assert_allclose(dw[2], third, rtol=1e-7)
    # the identity's entries on the pattern: every eigenvalue moves by 1, the pair alike
    identity = (a.indices == np.repeat(np.arange(8), np.diff(a.indptr))).astype(float)
    # (jvp alone: jacfwd's basis directions split the pair, and its Jacobian does not exist;
    # with on_failure='nan', as eager jvp computes the vectors' refused tangents too)
    for tangent in _forward_modes(values(nan), a.data, identity)[:2]:
        np.testing.assert_allclose(tangent(), np.ones(3), rtol=1e-10)
