"""Many small systems in one call (batched LAPACK, not a Python loop per matrix), and
factors stored once per matrix however many right-hand sides share it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _solver_cases import assert_close

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve, LyapunovSolve, SylvesterSolve

pytestmark = pytest.mark.slow  # batches of 50 systems, compiled per size


def _systems(count: int, n: int, positive: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(count, n, n))
    a = m @ np.swapaxes(m, -1, -2) + n * np.eye(n) if positive else m + n * np.eye(n)
    return jnp.asarray(a), jnp.asarray(rng.normal(size=(count, n)))


def _loss(solve):
    return lambda a, b: jnp.sum(jnp.sin(jax.vmap(solve)(a, b)))


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize("n", [1, 4, 16])
def test_many_small_systems_match_native(assume_a, n):
    with jax.enable_x64(True):
        a, b = _systems(50, n, positive=assume_a == "pos")
        solve = LinearSolve(assume_a=assume_a)
        assert_close(jax.jit(jax.vmap(solve))(a, b), jnp.linalg.solve(a, b[..., None])[..., 0])
        got = jax.jit(jax.grad(_loss(solve), (0, 1)))(a, b)
        native = _loss(lambda a, b: jnp.linalg.solve((a + a.T) / 2 if assume_a == "pos" else a, b))
        assert_close(got, jax.grad(native, (0, 1))(a, b))
        hessian = jax.hessian(lambda b: _loss(solve)(a, b))(b)
        assert_close(hessian, jax.hessian(lambda b: native(a, b))(b))


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
def test_many_small_systems_are_solved_in_one_batch_and_saved_as_themselves(assume_a):
    """A batch of small matrices, each with its own right-hand side, is solved by batched
    LAPACK and saves no factors (pivots -2): the rules solve afresh from ``a``, cheaper for
    a batch than inverting every matrix in the forward (#56)."""
    with jax.enable_x64(True):
        a, b = _systems(6, 3, positive=assume_a == "pos")
        x, _, pivots = LinearSolve(assume_a=assume_a).forward(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(pivots, -2)
        np.testing.assert_allclose(x, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-13)


def test_small_matrices_shared_by_right_hand_sides_are_saved_as_inverses():
    """Where several right-hand sides share each matrix, the inverses, computed once, are
    saved (pivots -1) and applied as products."""
    with jax.enable_x64(True):
        a, b = _systems(6, 3)
        b = np.stack([np.asarray(b)] * 4, axis=1)  # (6, 4, 3): 4 right-hand sides per matrix
        x, inverse, pivots = LinearSolve().forward(np.asarray(a)[:, None], b)
        np.testing.assert_allclose(inverse[:, 0], np.linalg.inv(np.asarray(a)), rtol=1e-13)
        np.testing.assert_array_equal(pivots, -1)
        np.testing.assert_allclose(x, np.linalg.solve(a[:, None], b[..., None])[..., 0], rtol=1e-13)


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
def test_a_batch_the_condition_bound_cannot_vouch_for_is_checked_exactly(assume_a):
    """A well-posed batch that the determinant's bound cannot vouch for (it proves a
    condition number below 1 / (4 n eps), 3.8e14 for n = 3) is checked exactly by its
    inverses: solved, not refused, and its gradient is the native one."""
    with jax.enable_x64(True):
        a, b = _systems(5, 3, positive=assume_a == "pos")
        a = np.asarray(a).copy()
        a[1] = np.diag([3e7, 1.0, 1.0])  # κ₁ = 3e7, the bound 2 n (‖a‖_F/√n)ⁿ/|det| ≈ 1e15
        x, _, pivots = LinearSolve(assume_a=assume_a).forward(a, np.asarray(b))
        np.testing.assert_array_equal(pivots, -1)
        np.testing.assert_allclose(x, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-13)
        solve = LinearSolve(assume_a=assume_a)
        got = jax.grad(_loss(solve), (0, 1))(jnp.asarray(a), b)
        native = _loss(lambda a, b: jnp.linalg.solve((a + a.T) / 2 if assume_a == "pos" else a, b))
        assert_close(got, jax.grad(native, (0, 1))(jnp.asarray(a), b))


@pytest.mark.parametrize(
    "bad", ["singular", "nearly singular", "singular to working precision", "nan"]
)
def test_a_bad_matrix_in_a_small_batch_is_named_or_nan(bad):
    with jax.enable_x64(True):
        a, b = _systems(5, 3)
        a = np.asarray(a).copy()
        if bad == "singular":
            a[2] = np.ones((3, 3))
        elif bad == "nearly singular":
            a[2] = np.ones((3, 3)) + 1e-17 * np.eye(3)
        elif bad == "singular to working precision":
            # -(J + δI), J all ones, δ = 3 eps: invertible, but its 1-norm condition number is
            # 4 / δ > 1 / eps, while n max|a| max|a⁻¹| is only 2 / δ (the largest entries
            # negative): the bound that spares the norms must keep all of its n² factor and
            # read magnitudes, not maxima
            a = np.stack([0.9 * np.eye(3)] * 5)
            a[2] = -(np.ones((3, 3)) + 3 * np.finfo(float).eps * np.eye(3))
        else:
            a[2, 1, 1] = np.nan
        with (
            pytest.raises(np.linalg.LinAlgError, match=r"LinearSolve\.forward .*matrix 'a'"),
            jb.host_errors(),
        ):
            jax.block_until_ready(jax.vmap(LinearSolve())(a, b))
        got = np.asarray(jax.vmap(LinearSolve(on_failure="nan"))(a, b))
        assert np.isnan(got[2]).all()
        keep = [0, 1, 3, 4]
        assert_close(got[keep], np.linalg.solve(a[keep], np.asarray(b)[keep][..., None])[..., 0])


def test_not_positive_definite_in_a_small_batch_is_named():
    with jax.enable_x64(True):
        a, b = _systems(4, 3, positive=True)
        a = np.asarray(a).copy()
        a[1] = -a[1]
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite"), jb.host_errors():
            jax.block_until_ready(jax.vmap(LinearSolve(assume_a="pos"))(a, b))


@pytest.mark.parametrize(
    ("solve", "shapes", "axes", "saved"),
    [
        # one matrix, 128 right-hand sides: the factors are stored once (batch axis of 1)
        (LinearSolve(), [(5, 5), (128, 5)], (None, 0), [(1, 5, 5), (1, 5)]),
        (LinearSolve(assume_a="pos"), [(5, 5), (128, 5)], (None, 0), [(1, 5, 5), (1, 5)]),
        (LyapunovSolve(), [(3, 3), (16, 3, 3)], (None, 0), [(1, 3, 3)] * 2),
        (
            SylvesterSolve(),
            [(3, 3), (2, 2), (16, 3, 2)],
            (None, None, 0),
            [(1, 3, 3)] * 2 + [(1, 2, 2)] * 2,
        ),
        # a batch of matrices: one copy each
        (LinearSolve(), [(7, 5, 5), (7, 5)], (0, 0), [(7, 5, 5), (7, 5)]),
    ],
)
def test_residuals_are_stored_once_per_matrix(solve, shapes, axes, saved):
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        args = [
            jnp.asarray(
                rng.normal(size=s) + 4 * np.eye(s[-1])
                if len(s) > 1 and s[-1] == s[-2]
                else rng.normal(size=s)
            )
            for s in shapes
        ]
        loss = lambda *args: jnp.sum(jnp.sin(jax.vmap(solve, axes)(*args)))  # noqa: E731
        jaxpr = jax.make_jaxpr(jax.grad(loss, tuple(range(len(args)))))(*args)
        (forward,) = [
            e
            for e in jaxpr.jaxpr.eqns
            if e.primitive.name == "jaxbridge_forward" and len(e.outvars) > 1
        ]
        assert [v.aval.shape for v in forward.outvars[1:]] == saved


def test_memory_of_a_shared_matrix_does_not_grow_with_the_right_hand_sides():
    """The issue's case at a smaller scale: the compiled gradient's temporaries stay within
    a few matrix sizes however many right-hand sides share the matrix."""
    with jax.enable_x64(True):
        n = 200
        a = jnp.asarray(np.random.default_rng(0).normal(size=(n, n)) + n * np.eye(n))
        matrix_bytes = n * n * 8

        def temporaries(k: int) -> int:
            b = jnp.ones((k, n))
            loss = lambda a, b: jnp.sum(jnp.sin(jax.vmap(LinearSolve(), (None, 0))(a, b)))  # noqa: E731
            compiled = jax.jit(jax.grad(loss, (0, 1))).lower(a, b).compile()
            return compiled.memory_analysis().temp_size_in_bytes

        assert temporaries(128) < 10 * matrix_bytes


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize(
    "a_shape, b_shape, axes",
    [((0, 0), (0,), None), ((5, 0, 0), (5, 0), 0), ((0, 0), (5, 0), (None, 0))],
    ids=["one", "a batch", "shared"],
)
def test_empty_systems_solve_to_empty_results_in_every_mode(assume_a, a_shape, b_shape, axes):
    """n = 0: nothing to solve. Values, gradients and tangents are empty arrays of the right
    shapes, with no error (the batched path must not index an empty matrix)."""
    with jax.enable_x64(True):
        solve = LinearSolve(assume_a=assume_a)
        solve = solve if axes is None else jax.vmap(solve, axes)
        a, b = jnp.zeros(a_shape), jnp.zeros(b_shape)
        assert solve(a, b).shape == b_shape
        assert jax.jit(solve)(a, b).shape == b_shape
        da, db = jax.grad(lambda a, b: jnp.sum(solve(a, b)), (0, 1))(a, b)
        assert (da.shape, db.shape) == (a_shape, b_shape)
        _, tangent = jax.jvp(solve, (a, b), (a, b))
        assert tangent.shape == b_shape
