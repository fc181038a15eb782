"""The solver adapters against native JAX: values, jit, vmap, grad, second derivatives, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
from _solver_cases import (
    CASES,
    IDS,
    PATTERN,
    SPARSE,
    assert_close,
    lyapunov_reference,
    projected,
    sparse_dense,
    sylvester_reference,
)
from jax.test_util import check_grads

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve, LyapunovSolve, SparseSolve, SylvesterSolve
from jaxbridge.adapters import linalg as jaxbridge_linalg
from jaxbridge.adapters.linalg.linear_solve import _LUSolve
from jaxbridge.adapters.linalg.lyapunov_solve import _SchurLyapunovSolve
from jaxbridge.adapters.linalg.sparse_solve import _SparseLUSolve
from jaxbridge.adapters.linalg.sylvester_solve import _SchurSylvesterSolve

DTYPES = [np.float32, np.float64]


def _cotangent(case, args, dtype, seed=7):
    shape = jax.eval_shape(case.reference, *args).shape
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), dtype)


def _all(args):
    return tuple(range(len(args)))


# ---------------------------------------------------------------- values, jit, vmap


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_value_matches_reference(case, dtype, jit):
    with jax.enable_x64(dtype == np.float64):
        args = case.args(dtype)
        got = (jax.jit(case.adapter) if jit else case.adapter)(*args)
        assert got.dtype == dtype
        assert_close(got, case.reference(*args), dtype)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("batched", ["first", "last", "all"])
def test_vmap(case, batched):
    """Batched matrix, batched right-hand side, or both; under jit."""
    with jax.enable_x64(True):
        single, stacked = case.args(), case.batched_args()
        n = len(single)
        pick = {"first": {0}, "last": {n - 1}, "all": set(range(n))}[batched]
        args = [stacked[i] if i in pick else single[i] for i in range(n)]
        axes = [0 if i in pick else None for i in range(n)]
        got = jax.jit(jax.vmap(case.adapter, axes))(*args)
        assert_close(got, jax.jit(jax.vmap(case.reference, axes))(*args))


def test_linear_solve_matrix_of_right_hand_sides():
    """Both documented ways: columns as rows of ``b``, and ``vmap`` over the columns."""
    with jax.enable_x64(True):
        a, _ = CASES[0].args()
        rhs = jnp.asarray(np.random.default_rng(3).normal(size=(4, 5)))
        expected = jnp.linalg.solve(a, rhs)
        assert_close(LinearSolve()(a, rhs.T).T, expected)
        assert_close(jax.jit(jax.vmap(LinearSolve(), (None, 1), 1))(a, rhs), expected)

        def loss(solve):
            return lambda a, rhs: jnp.sum(jnp.sin(solve(a, rhs)))

        got = jax.jit(jax.grad(loss(lambda a, rhs: LinearSolve()(a, rhs.T).T), (0, 1)))(a, rhs)
        assert_close(got, jax.grad(loss(jnp.linalg.solve), (0, 1))(a, rhs))


def test_linear_solve_broadcasts_like_a_gufunc():
    """a (2, 1, n, n) against b (3, n): x is (2, 3, n), each a factorized once."""
    with jax.enable_x64(True):
        a = jnp.stack([CASES[0].args(seed=s)[0] for s in (1, 2)])[:, None]
        b = jnp.asarray(np.random.default_rng(4).normal(size=(3, 4)))
        got = LinearSolve()(a, b)
        assert got.shape == (2, 3, 4)
        assert_close(got, jnp.linalg.solve(a, b[..., None])[..., 0])
        ct = jnp.ones((2, 3, 4))
        grads = jax.grad(projected(LinearSolve(), ct), (0, 1))(a, b)
        ref = jax.grad(
            projected(lambda a, b: jnp.linalg.solve(a, b[..., None])[..., 0], ct), (0, 1)
        )
        assert_close(grads, ref(a, b))


# ---------------------------------------------------------------- first derivatives


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_grad_matches_reference(case, dtype, jit):
    with jax.enable_x64(dtype == np.float64):
        args = case.args(dtype)
        ct = _cotangent(case, args, dtype)
        grad = jax.grad(projected(case.adapter, ct), _all(args))
        got = (jax.jit(grad) if jit else grad)(*args)
        assert [g.dtype for g in got] == [dtype] * len(args)
        assert_close(got, jax.grad(projected(case.reference, ct), _all(args))(*args), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tolerance_catches_a_backward_one_percent_off(dtype):
    """The gradient tests' bound is tight enough to fail a cotangent scaled by 1.01."""
    case = CASES[0]
    with jax.enable_x64(dtype == np.float64):
        args = case.args(dtype)
        ct = _cotangent(case, args, dtype)
        expected = jax.grad(projected(case.reference, ct), _all(args))(*args)
        got = jax.grad(projected(case.adapter, ct), _all(args))(*args)
        assert_close(got, expected, dtype)
        with pytest.raises(AssertionError):
            assert_close([g * 1.01 for g in got], expected, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_of_grad(case):
    with jax.enable_x64(True):
        args = case.batched_args()
        ct = _cotangent(case, case.args(), np.float64)
        got = jax.jit(jax.vmap(jax.grad(projected(case.adapter, ct), _all(args))))(*args)
        expected = jax.vmap(jax.grad(projected(case.reference, ct), _all(args)))(*args)
        assert_close(got, expected)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_derivatives_match_finite_differences(case):
    """Checks the adjoint formulas (and the references) against finite differences, to
    second order in reverse mode."""
    with jax.enable_x64(True):
        args = case.args()
        ct = _cotangent(case, args, np.float64)
        check_grads(projected(case.adapter, ct), args, order=2, modes=["rev"])


# ---------------------------------------------------------------- second derivatives


# float64 for every solver; float32 too for LinearSolve (the others' compile time adds up)
SECOND_ORDER = [pytest.param(c, np.float64, id=f"float64-{c.name}") for c in CASES] + [
    pytest.param(c, np.float32, id=f"float32-{c.name}") for c in CASES[:2]
]


@pytest.mark.slow
@pytest.mark.parametrize(("case", "dtype"), SECOND_ORDER)
def test_jacrev_of_jacrev_matches_reference(case, dtype):
    with jax.enable_x64(dtype == np.float64):
        args = case.args(dtype)
        ct = _cotangent(case, args, dtype)
        hessian = lambda f: jax.jacrev(jax.jacrev(f, _all(args)), _all(args))  # noqa: E731
        got = jax.jit(hessian(projected(case.adapter, ct)))(*args)
        # the reference is jitted too: op by op, its nested jacrev takes seconds
        assert_close(got, jax.jit(hessian(projected(case.reference, ct)))(*args), dtype)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_grad_of_grad_matches_reference(case):
    """The gradient of a gradient penalty, ``|∂f/∂(first argument)|²``."""
    with jax.enable_x64(True):
        args = case.args()
        ct = _cotangent(case, args, np.float64)

        def penalty(function):
            grad = jax.grad(projected(function, ct))
            return lambda *args: jnp.sum(grad(*args) ** 2)

        got = jax.grad(penalty(case.adapter), _all(args))(*args)
        assert_close(got, jax.jit(jax.grad(penalty(case.reference), _all(args)))(*args))


# ---------------------------------------------------------------- reuse of the factors


def test_adjoint_solve_reads_only_the_saved_factors():
    """The backward's solve uses the forward's LU factors, never ``a`` (no refactorization):
    handed a NaN ``a`` and factors of another matrix, it solves with those factors."""
    with jax.enable_x64(True):
        other, b = CASES[0].args(seed=5)
        # saved as LinearSolve saves them: the factors of aᵀ, transposed
        lu, piv = scipy.linalg.lu_factor(np.asarray(other).T)
        nan_a = jnp.full((4, 4), jnp.nan)
        for trans in (False, True):
            got = _LUSolve(trans=trans)(nan_a, lu.T, piv.astype(np.int32), b)
            assert_close(got, jnp.linalg.solve(other.T if trans else other, b))


def test_adjoint_sylvester_and_lyapunov_solves_read_only_the_saved_schur_forms():
    with jax.enable_x64(True):
        a, b, q = CASES[2].args(seed=5)
        t, u = scipy.linalg.schur(np.asarray(a))
        s, v = scipy.linalg.schur(np.asarray(b))
        nan_a, nan_b = jnp.full_like(a, jnp.nan), jnp.full_like(b, jnp.nan)
        got = _SchurSylvesterSolve(trans=True)(nan_a, nan_b, u, t, v, s, q)
        assert_close(got, sylvester_reference(a.T, b.T, q))
        got = _SchurLyapunovSolve(trans=True)(nan_a, u, t, jnp.eye(4))
        assert_close(got, lyapunov_reference(a.T, jnp.eye(4)))


def test_adjoint_sparse_solve_reads_only_the_saved_factors():
    with jax.enable_x64(True):
        data, b = CASES[-1].args(seed=5)
        _, *factors = SPARSE.forward(np.asarray(data), np.asarray(b))
        got = _SparseLUSolve(SPARSE, trans=True)(jnp.full_like(data, jnp.nan), *factors, b)
        assert_close(got, jnp.linalg.solve(sparse_dense(data).T, b))


def test_sparse_backward_with_and_without_saved_factors():
    """factor_capacity=0 saves nothing (the backward refactorizes); both give the same
    gradient, and the default capacity holds this pattern's factors."""
    case = CASES[-1]
    with jax.enable_x64(True):
        args = case.args()
        ct = _cotangent(case, args, np.float64)
        expected = jax.grad(projected(case.reference, ct), (0, 1))(*args)
        refactoring = SparseSolve(PATTERN.indices, PATTERN.indptr, PATTERN.shape, factor_capacity=0)
        for adapter in (SPARSE, refactoring):
            assert_close(jax.jit(jax.grad(projected(adapter, ct), (0, 1)))(*args), expected)
        assert SPARSE.factor_capacity > PATTERN.nnz
        _, values, _, pointers, _ = SPARSE.forward(*(np.asarray(a) for a in args))
        assert pointers[1, -1] > 0 and np.isfinite(values).all()  # saved, not marked refactor


def test_sparse_duplicates_are_summed():
    with jax.enable_x64(True):
        # row 0 lists column 0 twice; the matrix is [[1 + 2, 0], [0, 4]]
        adapter = SparseSolve((0, 0, 1), (0, 2, 3), (2, 2))
        data, b = jnp.array([1.0, 2.0, 4.0]), jnp.array([3.0, 8.0])
        assert_close(adapter(data, b), jnp.array([1.0, 2.0]))
        assert_close(jax.grad(lambda d: adapter(d, b)[0])(data), jnp.array([-1 / 3, -1 / 3, 0]))


# ---------------------------------------------------------------- bad input

SINGULAR = [
    ("linear", LinearSolve, lambda: (jnp.ones((3, 3)), jnp.ones(3)), "matrix 'a' is singular"),
    (
        "linear-rcond",  # a pivot of one float32 ulp: rcond ~ eps / 4, not exactly singular
        LinearSolve,
        lambda: (
            jnp.array([[1, 1, 0], [1, 1 + 2**-23, 0], [0, 0, 1]], jnp.float32),
            jnp.ones(3, jnp.float32),
        ),
        "singular to working precision",
    ),
    (
        "linear-pos",
        lambda **kw: LinearSolve(assume_a="pos", **kw),
        lambda: (jnp.diag(jnp.array([1.0, -1.0, 2.0])), jnp.ones(3)),
        "not positive definite",
    ),
    (
        "sylvester",
        SylvesterSolve,
        lambda: (
            jnp.diag(jnp.array([1.0, 2.0])),
            jnp.diag(jnp.array([-2.0, 5.0])),
            jnp.ones((2, 2)),
        ),
        "singular: 'a' and '-b' have a common eigenvalue",
    ),
    (
        "lyapunov",
        LyapunovSolve,
        lambda: (jnp.array([[1.0, 3.0], [0.0, -1.0]]), jnp.eye(2)),
        "singular: two eigenvalues of 'a' sum to zero",
    ),
    (
        "sparse",  # row 0 all zeros
        lambda **kw: SparseSolve(PATTERN.indices, PATTERN.indptr, PATTERN.shape, **kw),
        lambda: (jnp.ones(PATTERN.nnz).at[: PATTERN.indptr[1]].set(0.0), jnp.ones(6)),
        "matrix is singular",
    ),
    (
        "sparse-pivot",  # row 0 scaled by 1e-30: invertible, but not in floating point
        lambda **kw: SparseSolve(PATTERN.indices, PATTERN.indptr, PATTERN.shape, **kw),
        lambda: (jnp.full(PATTERN.nnz, 4.0).at[: PATTERN.indptr[1]].set(1e-30), jnp.ones(6)),
        "singular to working precision",
    ),
]
NON_FINITE = [
    ("linear", LinearSolve, lambda: (jnp.eye(3).at[1, 2].set(jnp.nan), jnp.ones(3)), "'a'"),
    (
        "linear-pos",
        lambda **kw: LinearSolve(assume_a="pos", **kw),
        lambda: (jnp.eye(3).at[0, 0].set(jnp.inf), jnp.ones(3)),
        "'a'",
    ),
    (
        "sylvester",
        SylvesterSolve,
        lambda: (jnp.eye(2), jnp.eye(2).at[0, 1].set(jnp.inf), jnp.ones((2, 2))),
        "'b'",
    ),
    ("lyapunov", LyapunovSolve, lambda: (-jnp.eye(2).at[1, 0].set(jnp.nan), jnp.eye(2)), "'a'"),
    (
        "sparse",
        lambda **kw: SparseSolve(PATTERN.indices, PATTERN.indptr, PATTERN.shape, **kw),
        lambda: (jnp.full(PATTERN.nnz, 4.0).at[3].set(jnp.nan), jnp.ones(6)),
        "'data'",
    ),
]


def _bad_cases(table, problem):
    return [
        pytest.param(make, args, f"{what}.*{problem}" if problem else what, id=name)
        for name, make, args, what in table
    ]


BAD = _bad_cases(SINGULAR, "") + [
    pytest.param(make, args, f"{what} has non-finite entries", id=f"{name}-nonfinite")
    for name, make, args, what in NON_FINITE
]


@pytest.mark.parametrize(("make", "args", "message"), BAD)
@jax.enable_x64(False)  # the cases are float32: "rcond" rounds to a tiny pivot in float32
def test_bad_matrix_is_an_error_naming_the_adapter(make, args, message):
    adapter = make()
    owner = type(adapter).__name__
    with pytest.raises(np.linalg.LinAlgError, match=rf"^{owner}\.forward .*{message}"):
        adapter(*args())
    # its own type under jit too, read where the block can see it (a GPU reports it there)
    with pytest.raises(np.linalg.LinAlgError, match=rf"{owner}\.forward .*{message}"):
        with jb.host_errors():
            jax.jit(adapter)(*args()).block_until_ready()


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize("count", [None, 3], ids=["one", "a small batch"])
def test_finite_entries_whose_norm_overflows_are_named_as_such(assume_a, count):
    """Entries near the largest float: the norm that stands in for the finiteness check
    overflows, and the error says so rather than calling the entries non-finite (or the
    matrix singular); the symmetric part of 'pos' is formed without overflowing."""
    big = float(np.finfo(jnp.asarray(1.0).dtype).max) / 1.2  # float32, or float64 in x64
    a = jnp.asarray([[big, big / 2], [-big / 2 if assume_a == "gen" else big / 2, big]])
    b = jnp.ones(2)
    if count:
        a, b = jnp.stack([a] + [jnp.eye(2)] * (count - 1)), jnp.ones((count, 2))
    solve = LinearSolve(assume_a=assume_a)
    with pytest.raises(np.linalg.LinAlgError, match=r"matrix 'a' has entries so large that its"):
        with jb.host_errors():
            jax.block_until_ready((solve if count is None else jax.vmap(solve))(a, b))


@pytest.mark.parametrize(("make", "args", "message"), BAD)
def test_bad_matrix_gives_nan_on_request(make, args, message):
    adapter = make(on_failure="nan")
    x = jax.jit(adapter)(*args())
    assert x.shape == args()[-1].shape and np.isnan(x).all()
    # the backward of a failed solve is NaN too, not an error
    grads = jax.grad(lambda *a: jnp.sum(adapter(*a)), _all(args()))(*args())
    assert all(np.isnan(g).any() for g in grads)


def test_nan_on_request_lets_vmap_of_cond_run_both_branches():
    """Under vmap, lax.cond runs both branches on every element: the solve sees the
    singular matrix its branch was guarding against."""
    a = jnp.stack([jnp.eye(3) * 2, jnp.ones((3, 3))])
    b = jnp.ones((2, 3))

    def solve_if_invertible(solve):
        def f(a, b):
            invertible = jnp.abs(jnp.linalg.det(a)) > 1e-6
            return jax.lax.cond(invertible, solve, lambda a, b: jnp.zeros_like(b), a, b)

        return jax.jit(jax.vmap(f))

    got = solve_if_invertible(LinearSolve(on_failure="nan"))(a, b)
    np.testing.assert_array_equal(got, [[0.5] * 3, [0.0] * 3])
    with pytest.raises(np.linalg.LinAlgError, match="matrix 'a' is singular"), jb.host_errors():
        solve_if_invertible(LinearSolve())(a, b).block_until_ready()


def test_only_the_failed_element_of_a_batch_is_nan():
    a = jnp.stack([jnp.eye(3) * 2, jnp.ones((3, 3)), jnp.eye(3) * 4])
    got = LinearSolve(on_failure="nan")(a, jnp.ones(3))
    np.testing.assert_array_equal(np.isnan(got).any(axis=-1), [False, True, False])
    np.testing.assert_allclose(np.asarray(got)[[0, 2]], [[0.5] * 3, [0.25] * 3])


class _ThreadedSolve(LinearSolve):
    threads = 3


def test_threads_spread_a_batch_of_matrices_and_keep_each_result():
    """Matrices above the batched-inverse size (33 x 33) factorized on 3 threads, a matrix
    shared by two right-hand sides once: the same results as one thread and as NumPy, a
    singular matrix NaN for its own systems alone (or the error), and the same gradient."""
    rng = np.random.default_rng(5)
    n = 33
    a = rng.normal(size=(5, 1, n, n)) + 6 * np.eye(n)
    b = rng.normal(size=(2, n))
    with jax.enable_x64(True):
        threaded = np.asarray(jax.jit(_ThreadedSolve())(a, b))
        assert threaded.shape == (5, 2, n)
        np.testing.assert_array_equal(threaded, jax.jit(LinearSolve())(a, b))
        np.testing.assert_allclose(threaded, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-10)
        singular = a.copy()
        singular[3, 0, :, 0] = 0.0
        got = np.asarray(_ThreadedSolve(on_failure="nan")(singular, b))
        failed = np.broadcast_to(np.arange(5)[:, None] == 3, (5, 2))
        np.testing.assert_array_equal(np.isnan(got).any(axis=-1), failed)
        np.testing.assert_array_equal(got[[0, 1, 2, 4]], threaded[[0, 1, 2, 4]])
        with pytest.raises(ValueError, match="singular"):
            _ThreadedSolve()(singular, b)
        loss = lambda s: lambda a, b: jnp.sum(jnp.sin(s(a, b)))  # noqa: E731
        np.testing.assert_array_equal(
            jax.jit(jax.grad(loss(_ThreadedSolve()), (0, 1)))(a, b)[0],
            jax.jit(jax.grad(loss(LinearSolve()), (0, 1)))(a, b)[0],
        )


# ---------------------------------------------------------------- bad parameters


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: LinearSolve(assume_a="sym"), r"LinearSolve: parameter 'assume_a' must be one"),
        (lambda: LinearSolve(on_failure="ignore"), r"LinearSolve: parameter 'on_failure'"),
        (lambda: SylvesterSolve(on_failure=None), r"SylvesterSolve: parameter 'on_failure'"),
        (lambda: LyapunovSolve(on_failure="NaN"), r"LyapunovSolve: parameter 'on_failure'"),
    ],
)
def test_bad_parameter_is_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def _pattern(**changes):
    kw = dict(indices=PATTERN.indices, indptr=PATTERN.indptr, shape=PATTERN.shape)
    return SparseSolve(**{**kw, **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"indptr": PATTERN.indptr[:-1]}, r"'indptr' must have n \+ 1 = 7 entries"),
        ({"indptr": PATTERN.indptr[::-1]}, r"'indptr' must start at 0, never decrease"),
        ({"indices": np.where(PATTERN.indices == 2, 6, PATTERN.indices)}, r"column 6, outside"),
        ({"indices": np.where(PATTERN.indices == 2, -1, PATTERN.indices)}, r"column -1, outside"),
        ({"indices": PATTERN.indices.astype(float)}, r"'indices' must be a 1-D sequence of int"),
        ({"shape": (6, 7)}, r"'shape' must be square"),
        ({"indices": (0, 1), "indptr": (0, 2, 2), "shape": (2, 2)}, r"no entries in row 1"),
        ({"indices": (0, 0), "indptr": (0, 1, 2), "shape": (2, 2)}, r"structurally singular"),
        ({"factor_capacity": -1}, r"'factor_capacity' must be a non-negative int"),
        ({"on_failure": "warn"}, r"parameter 'on_failure'"),
    ],
)
def test_bad_sparsity_pattern_is_named(changes, message):
    with pytest.raises(ValueError, match=rf"^SparseSolve: .*{message}"):
        _pattern(**changes)


def test_sparse_data_of_the_wrong_size_is_named():
    with pytest.raises(
        ValueError, match=rf"SparseSolve: 'data' must have the pattern's {PATTERN.nnz}"
    ):
        SPARSE(jnp.ones(PATTERN.nnz + 1), jnp.ones(6))


def test_sparse_adapter_is_hashable_and_equal_by_pattern():
    again = SparseSolve(tuple(PATTERN.indices), list(PATTERN.indptr), (6, 6))
    assert again == SPARSE and hash(again) == hash(SPARSE)
    assert isinstance(again.indices, tuple) and all(type(i) is int for i in again.indices)


def test_sparse_reference_is_the_dense_matrix():
    data = np.arange(1.0, PATTERN.nnz + 1)
    csr = scipy.sparse.csr_array((data, PATTERN.indices, PATTERN.indptr), PATTERN.shape)
    np.testing.assert_array_equal(sparse_dense(jnp.asarray(data)), csr.toarray())


def test_linear_solve_derivatives_of_any_order():
    """Each order of reverse mode peels off one level of the bridge: the fourth derivative
    of a solve along a line through matrix space matches jnp.linalg.solve's."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(11)
        a = jnp.asarray(rng.normal(size=(3, 3)) + 3 * np.eye(3))
        b = jnp.asarray(rng.normal(size=3))
        bridged = lambda t: LinearSolve()(a * t, b)[0]  # noqa: E731
        native = lambda t: jnp.linalg.solve(a * t, b)[0]  # noqa: E731
        for order in range(1, 5):
            bridged, native = jax.grad(bridged), jax.grad(native)
            np.testing.assert_allclose(jax.jit(bridged)(1.3), jax.jit(native)(1.3), rtol=1e-12)


@pytest.mark.parametrize("copies", [1, 14], ids=["batched LAPACK", "a larger batch"])
@pytest.mark.parametrize("assume_a", ["pos", "gen"])
def test_a_batch_with_one_matrix_singular_to_working_precision(assume_a, copies):
    """[[1, 1], [1, 1 + 2⁻⁵²]] is positive but singular to working precision, however its
    rows and columns are scaled (rcond 5.6e-17): in a batch it is refused by name (eagerly
    and under jit), or is NaN alone under on_failure='nan', the others solved (the batched
    condition bound had no test)."""
    nearly_singular = np.array([[1.0, 1.0], [1.0, 1.0 + 2.0**-52]])
    a = np.stack([np.diag([2.0, 3.0]), nearly_singular, np.array([[4.0, 1], [1, 3]])] * copies)
    b = np.ones((len(a), 2))
    with jax.enable_x64(True):
        for call in (LinearSolve(assume_a=assume_a), jax.jit(LinearSolve(assume_a=assume_a))):
            with pytest.raises(Exception, match="singular to working precision"):
                jax.block_until_ready(call(a, b))
        for call in (LinearSolve(assume_a=assume_a, on_failure="nan"),):
            for x in (call(a, b), jax.jit(call)(a, b)):
                x = np.asarray(x)
                assert np.isnan(x[1::3]).all()
                good = [i for i in range(len(a)) if i % 3 != 1]
                want = np.linalg.solve(a[good], b[good][..., None])[..., 0]
                np.testing.assert_allclose(x[good], want, rtol=1e-14)


@pytest.mark.parametrize("copies", [1, 14], ids=["one", "a batch"])
@pytest.mark.parametrize("assume_a", ["pos", "gen"])
def test_a_matrix_only_badly_scaled_is_solved_as_scipy_solves_it(assume_a, copies):
    """diag(1, 1e-17) has rcond 1e-17, but scaled it is the identity: SciPy solves it exactly
    (with a warning), and LinearSolve to an ulp, value and derivatives (it was refused as
    singular: #64 row 10). Its derivatives are the closed form's: dx/db = a⁻¹, dx/da = -a⁻¹ ⊗ x."""
    a = np.stack([np.diag([1.0, 1e-17])] * copies)
    b = np.stack([np.array([1.0, 1e-17])] * copies)
    with jax.enable_x64(True):
        for call in (LinearSolve(assume_a=assume_a), jax.jit(LinearSolve(assume_a=assume_a))):
            # (Cholesky rounds √1e-17: within an ulp or two, as any well-conditioned solve)
            np.testing.assert_allclose(call(a, b), np.ones((copies, 2)), rtol=4e-16)
        x = jaxbridge_linalg.solve(a[0], b[0], assume_a=assume_a)  # SciPy's call form
        np.testing.assert_allclose(x, [1, 1], rtol=4e-16)
        solve = LinearSolve(assume_a=assume_a)
        d_b = jax.jacobian(lambda b: solve(a[0], b))(b[0])
        np.testing.assert_allclose(d_b, np.diag([1.0, 1e17]), rtol=1e-15)
        d_a = jax.jacobian(lambda a: solve(a, b[0]))(a[0])
        want = -np.einsum("ij,k->ijk", np.diag([1.0, 1e17]), np.ones(2))
        if assume_a == "pos":  # read as (a + aᵀ) / 2
            want = (want + np.swapaxes(want, 1, 2)) / 2
        np.testing.assert_allclose(d_a, want, rtol=1e-15)
    with pytest.warns(scipy.linalg.LinAlgWarning):
        scipys = scipy.linalg.solve(a[0], b[0], assume_a=assume_a)
    np.testing.assert_allclose(scipys, [1, 1], rtol=4e-16)
