"""Forward mode through every ready adapter against native JAX: ``jvp`` (eager and under
``jit``), ``jvp`` in one argument at a time, ``jacfwd`` and ``linearize`` (and ``vmap`` of the
linear function over several tangents).

The references are contractions of the native reference's Jacobian, computed once per case
by ``jax.jacrev`` under ``jit``: op by op, native forward mode through the solvers'
references takes a second a case, which adds up over the transforms here.
"""

import functools

import _cases
import _solver_cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb

# Both tables, each case with its table's tolerances.
CASES = [pytest.param(c, _cases.assert_close, id=f"simple-{c.name}") for c in _cases.CASES] + [
    pytest.param(c, _solver_cases.assert_close, id=f"solver-{c.name}") for c in _solver_cases.CASES
]

# float32 for a few: one elementwise, one with a contraction, the two dense solvers
FLOAT32 = [
    p
    for p in CASES
    if p.id in {"simple-sigmoid", "simple-linear", "solver-linear", "solver-linear-pos"}
]


def arity(case):
    """How many arguments a case's adapter takes (known without making JAX arrays)."""
    if isinstance(case, _cases.Case):
        return len(case.shapes)
    return len(case.make(np.random.default_rng(0)))


# the cases with several arguments, once per argument
ONE_ARGUMENT = [
    pytest.param(p.values[0], p.values[1], i, id=f"{p.id}-arg{i}")
    for p in CASES
    if arity(p.values[0]) > 1
    for i in range(arity(p.values[0]))
]


def tangents_like(args, dtype: type = np.float64, seed=3):
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(rng.normal(size=a.shape), dtype) for a in args)


@functools.cache
def native(case):
    """The native reference's value and Jacobian (one array per argument) at the case's
    float64 arguments, in one compiled function."""
    args = case.args()
    with_value = lambda *a: (case.reference(*a),) * 2  # noqa: E731
    jacobian, value = jax.jit(jax.jacrev(with_value, tuple(range(len(args))), has_aux=True))(*args)
    return value, jacobian


def along(jacobian, tangents):
    """``J · t``: the Jacobian blocks contracted with the tangents of their arguments."""
    return sum(jnp.tensordot(j, t, axes=t.ndim) for j, t in zip(jacobian, tangents))


def stacked_tangents(args, count, dtype: type = np.float64):
    """``count`` tangents for each argument, stacked along a new leading axis."""
    draws = [tangents_like(args, dtype, seed) for seed in range(10, 10 + count)]
    return tuple(jnp.stack(column) for column in zip(*draws))


@pytest.mark.parametrize(("case", "assert_close"), CASES)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_jvp_matches_reference(case, assert_close, jit):
    with jax.enable_x64(True):
        args = case.args()
        tangents = tangents_like(args)

        def jvp(args, tangents):
            return jax.jvp(case.adapter, args, tangents)

        value, tangent = (jax.jit(jvp) if jit else jvp)(args, tangents)
        ref_value, jacobian = native(case)
        assert tangent.shape == ref_value.shape and tangent.dtype == np.float64
        assert_close((value, tangent), (ref_value, along(jacobian, tangents)))


@pytest.mark.parametrize(("case", "assert_close"), FLOAT32)
def test_jvp_float32(case, assert_close):
    with jax.enable_x64(False):
        args = case.args(np.float32)
        tangents = tangents_like(args, np.float32)
        got = jax.jit(lambda a, t: jax.jvp(case.adapter, a, t))(args, tangents)
        assert got[1].dtype == np.float32
        assert_close(got, jax.jvp(case.reference, args, tangents), np.float32)


@pytest.mark.parametrize(("case", "assert_close", "index"), ONE_ARGUMENT)
def test_jvp_in_one_argument(case, assert_close, index):
    """The other arguments held fixed: their tangents are symbolic zeros, never sent."""
    with jax.enable_x64(True):
        args = case.args()
        (tangent,) = tangents_like(args[index : index + 1])

        def moving(x):
            return case.adapter(*args[:index], x, *args[index + 1 :])

        value, got = jax.jvp(moving, (args[index],), (tangent,))
        ref_value, jacobian = native(case)
        assert_close((value, got), (ref_value, along(jacobian[index : index + 1], (tangent,))))


@pytest.mark.parametrize(("case", "assert_close"), CASES)
def test_jacfwd_matches_reference(case, assert_close):
    with jax.enable_x64(True):
        args = case.args()
        got = jax.jit(jax.jacfwd(case.adapter, tuple(range(len(args)))))(*args)
        _, expected = native(case)
        assert [g.shape for g in got] == [e.shape for e in expected]
        assert_close(got, expected)


@pytest.mark.slow
@pytest.mark.parametrize(("case", "assert_close"), CASES)
def test_linearize_and_vmap_of_the_linear_function(case, assert_close):
    with jax.enable_x64(True):
        args = case.args()
        ref_value, jacobian = native(case)
        value, linear = jax.linearize(case.adapter, *args)
        tangents = tangents_like(args)
        assert_close((value, linear(*tangents)), (ref_value, along(jacobian, tangents)))
        many = stacked_tangents(args, 4)
        got = jax.jit(jax.vmap(linear))(*many)
        assert got.shape == (4, *ref_value.shape)
        assert_close(got, jax.vmap(lambda *t: along(jacobian, t))(*many))


# ---------------------------------------------------------------- linear_in, integer parameter


class Roll(jb.Adapter):
    """``2 roll(x, k)``: linear in ``x`` (all its floating arguments, so it needs no
    forward-mode rule); ``k`` is an integer parameter."""

    signature = "(n),()->(n)"  # not vectorized: one core-shaped call at a time
    linear_in = ("x",)

    def forward(self, x, k):
        return 2 * np.roll(x, int(k), axis=-1)

    def backward(self, res, g):
        _, k, _ = res
        return 2 * np.roll(g, -int(k), axis=-1), None


ROLL_FORWARD_MODE = {
    "jvp": lambda f, x, t: jax.jvp(f, (x,), (t,)),
    "jit-jacfwd": lambda f, x, t: jax.jit(jax.jacfwd(f))(x),
}


@pytest.mark.parametrize("transform", ROLL_FORWARD_MODE)
def test_linear_in_adapter_keeps_its_integer_parameter_in_forward_mode(transform):
    """The automatic tangent map (forward on the tangents) holds ``k`` at its value: zeroing
    every argument without a tangent, as it once did, made it ``2 t`` instead of
    ``2 roll(t, k)``, silently."""
    with jax.enable_x64(True):
        x, t, k = jnp.arange(4.0), jnp.array([1.0, -2.0, 0.5, 3.0]), jnp.array(1)
        run = ROLL_FORWARD_MODE[transform]
        got = run(lambda x: Roll()(x, k), x, t)
        _cases.assert_close(got, run(lambda x: 2 * jnp.roll(x, 1), x, t))


class _SquareTimes(jb.Adapter):
    """``a b²`` with JAX rules."""

    signature = "(),()->()"

    def forward(self, a, b):
        return a * b * b

    def pushforward(self, res, tangents):
        a, b = res[:2]
        da, db = tangents
        return (0 if da is None else da * b * b) + (0 if db is None else 2 * a * b * db)

    def pullback(self, res, g):
        a, b = res[:2]
        return g * b * b, 2 * g * a * b


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_reverse_mode_over_a_tangent_map_with_a_constant_tangent(transform):
    """``t ↦ jvp(f, (x, y), (t, c))``: reverse mode transposes the tangent map in ``t`` alone,
    ``c`` a constant tangent (once an error: its cotangent was taken too). The derivative is
    ``∂f/∂a = y²``; in forward mode too."""
    f = _SquareTimes()
    x, y, c = 1.5, 2.0, 0.7

    def along(t):
        return jax.jvp(f, (x, y), (t, c))[1]

    assert transform(jax.grad(along))(0.3) == pytest.approx(y * y, rel=1e-6)
    assert transform(jax.jacfwd(along))(0.3) == pytest.approx(y * y, rel=1e-6)
    # and the constant term is there in the value: y² t + 2 x y c
    assert transform(along)(0.3) == pytest.approx(y * y * 0.3 + 2 * x * y * c, rel=1e-6)
