"""``jax.linear_transpose`` of the adapters that declare ``linear_in``, against the native
transposes (a solve with the transposed operator), and the error for an argument that is not
declared linear."""

import re

import _cases
import _solver_cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _solver_cases import lyapunov_reference, sparse_dense, sylvester_reference

import jaxbridge as jb
from jaxbridge.adapters import Doubling, Linear, LinearSolve, Sigmoid, SylvesterSolve

SOLVERS = {c.name: c for c in _solver_cases.CASES}


def _sym(a):
    return (a + a.T) / 2


# name: (case, index of the linear argument, its native transpose given (*args, ct))
TRANSPOSES = {
    "doubling": (_cases.CASES[0], 0, lambda x, ct: 2 * ct),
    "linear-solve": (SOLVERS["linear"], 1, lambda a, b, ct: jnp.linalg.solve(a.T, ct)),
    "linear-solve-pos": (
        SOLVERS["linear-pos"],
        1,
        lambda a, b, ct: jnp.linalg.solve(_sym(a), ct),
    ),
    # aᵀ y + y bᵀ = ct
    "sylvester": (SOLVERS["sylvester"], 2, lambda a, b, q, ct: sylvester_reference(a.T, b.T, ct)),
    # aᵀ y + y a = ct
    "lyapunov": (SOLVERS["lyapunov"], 1, lambda a, q, ct: lyapunov_reference(a.T, ct)),
    "sparse": (
        SOLVERS["sparse"],
        1,
        lambda data, b, ct: jnp.linalg.solve(sparse_dense(data).T, ct),
    ),
}


def _in_one_argument(function, args, index):
    """``function`` as a map of argument ``index`` alone, the others fixed at ``args``."""
    return lambda x: function(*args[:index], x, *args[index + 1 :])


@pytest.mark.slow
@pytest.mark.parametrize("name", TRANSPOSES)
def test_linear_transpose_matches_native(name):
    """Eager; then under ``jit`` with the fixed arguments traced too, and ``vmap`` over a
    batch of cotangents."""
    case, index, transpose = TRANSPOSES[name]
    with jax.enable_x64(True):
        args = case.args()
        forward = _in_one_argument(case.adapter, args, index)
        shape = jax.eval_shape(forward, args[index]).shape
        cts = jnp.asarray(np.random.default_rng(5).normal(size=(3, *shape)))
        expected = jax.jit(jax.vmap(lambda ct: transpose(*args, ct)))(cts)

        (got,) = jax.linear_transpose(forward, args[index])(cts[0])
        assert got.shape == args[index].shape
        _solver_cases.assert_close(got, expected[0])

        # the defining identity <ct, f(t)> = <fᵀ(ct), t>, at a random t
        t = jnp.asarray(np.random.default_rng(6).normal(size=args[index].shape))
        np.testing.assert_allclose(jnp.vdot(cts[0], forward(t)), jnp.vdot(got, t), rtol=1e-12)

        @jax.jit
        def transposed(args, cts):
            forward = _in_one_argument(case.adapter, args, index)
            return jax.vmap(lambda ct: jax.linear_transpose(forward, args[index])(ct)[0])(cts)

        _solver_cases.assert_close(transposed(args, cts), expected)


def test_linear_transpose_float32():
    case, index, transpose = TRANSPOSES["linear-solve"]
    with jax.enable_x64(False):
        a, b = case.args(np.float32)
        ct = jnp.asarray(np.random.default_rng(5).normal(size=b.shape), np.float32)
        (got,) = jax.linear_transpose(lambda b: case.adapter(a, b), b)(ct)
        assert got.dtype == np.float32
        _solver_cases.assert_close(got, transpose(a, b, ct), np.float32)


def test_linear_transpose_of_a_composition():
    """b -> 2 · solve(a, b) -> its transpose, 2 · solve(aᵀ, ct): the transposes chain."""
    with jax.enable_x64(True):
        a, b = SOLVERS["linear"].args()
        ct = jnp.asarray(np.random.default_rng(5).normal(size=b.shape))
        (got,) = jax.linear_transpose(lambda b: Doubling()(LinearSolve()(a, b)), b)(ct)
        _solver_cases.assert_close(got, 2 * jnp.linalg.solve(a.T, ct))


# (adapter, the case whose arguments it takes, the arguments transposed in, the one the error
# names, the adapter's declared linear_in)
NOT_LINEAR = {
    "linear-solve-in-a": (LinearSolve(), SOLVERS["linear"], (0,), "a", "('b',)"),
    "linear-solve-in-a-and-b": (LinearSolve(), SOLVERS["linear"], (0, 1), "a", "('b',)"),
    "sylvester-in-b": (SylvesterSolve(), SOLVERS["sylvester"], (1,), "b", "('q',)"),
    "linear-in-w": (Linear(), _cases.CASES[1], (1,), "w", "()"),
    "sigmoid": (Sigmoid(), _cases.CASES[3], (0,), "x", "()"),
}


@pytest.mark.parametrize("name", NOT_LINEAR)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_transpose_in_an_undeclared_argument_names_adapter_argument_and_linear_in(name, jit):
    adapter, case, moving, named, declared = NOT_LINEAR[name]
    owner = type(adapter).__name__
    with jax.enable_x64(True):
        args = case.args()

        def forward(*moved):
            full = list(args)
            for i, value in zip(moving, moved):
                full[i] = value
            return adapter(*full)

        def transpose(ct):
            return jax.linear_transpose(forward, *(args[i] for i in moving))(ct)

        ct = jnp.ones(jax.eval_shape(adapter, *args).shape)
        message = (
            re.escape(f"{owner} is not declared linear in argument '{named}'")
            + ".*"
            + re.escape(f"add it to `linear_in`; declared: linear_in = {declared}.")
        )
        with pytest.raises(TypeError, match=message):
            (jax.jit(transpose) if jit else transpose)(ct)


class Roll(jb.Adapter):
    """``2 roll(x, k)``: linear in ``x``; ``k`` is an integer parameter, held fixed."""

    signature = "(n),()->(n)"  # not vectorized: one core-shaped call at a time
    linear_in = ("x",)

    def forward(self, x, k):
        return 2 * np.roll(x, int(k), axis=-1)

    def backward(self, res, g):
        _, k, _ = res
        return 2 * np.roll(g, -int(k), axis=-1), None


def test_linear_transpose_keeps_an_integer_parameter():
    with jax.enable_x64(True):
        x, k = jnp.arange(4.0), jnp.array(1)
        ct = jnp.array([1.0, -2.0, 0.5, 3.0])
        (got,) = jax.jit(lambda ct: jax.linear_transpose(lambda x: Roll()(x, k), x)(ct))(ct)
        _cases.assert_close(got, 2 * jnp.roll(ct, -1))
