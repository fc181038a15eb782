"""``vmap`` of forward- and reverse-mode transforms through the ready adapters, against
native JAX; and the host-call count: one ``vmap`` (or one ``jacfwd``) makes one host call per
method, in every direction.

The references for ``vmap`` of ``jvp``, ``jacfwd`` and ``grad`` are contractions of the native
reference's Jacobians, computed once per case by ``vmap(jacrev)`` under ``jit``.
"""

import functools
import itertools

import _cases
import _solver_cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve
from jaxbridge.adapters.linalg.linear_solve import _LUSolve

pytestmark = pytest.mark.slow  # every transform under vmap, compiled per case

CASES = [pytest.param(c, _cases.assert_close, id=f"simple-{c.name}") for c in _cases.CASES] + [
    pytest.param(c, _solver_cases.assert_close, id=f"solver-{c.name}") for c in _solver_cases.CASES
]

BATCH = 3


def stacked(case, seed=0):
    """``BATCH`` independent draws of the case's arguments, stacked along a new axis."""
    draws = [case.args(seed=s) for s in range(seed, seed + BATCH)]
    return tuple(jnp.stack(column) for column in zip(*draws))


def stacked_tangents(args, seed=10):
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(rng.normal(size=(BATCH, *a.shape))) for a in args)


@functools.cache
def native(case):
    """The native reference's values and Jacobians on ``stacked(case)``, batch axis first."""
    args = stacked(case)
    argnums = tuple(range(len(args)))
    with_value = lambda *a: (case.reference(*a),) * 2  # noqa: E731
    jacobians, values = jax.jit(jax.vmap(jax.jacrev(with_value, argnums, has_aux=True)))(*args)
    return values, jacobians


def along(jacobian, tangents):
    """``J · t`` for one batch element."""
    return sum(jnp.tensordot(j, t, axes=t.ndim) for j, t in zip(jacobian, tangents))


# ---------------------------------------------------------------- values


# primals and tangents batched together for every case; either one alone for the cases with
# several arguments of different roles
JVP_BATCHING = [
    pytest.param(*p.values, batched, id=f"{batched}-{p.id}")
    for p in CASES
    for batched in ("both", "primals", "tangents")
    if batched == "both" or p.id in {"simple-linear", "solver-linear", "solver-sylvester"}
]


@pytest.mark.parametrize(("case", "assert_close", "batched"), JVP_BATCHING)
def test_vmap_of_jvp(case, assert_close, batched):
    """Primals and tangents batched together, or either one alone (the other shared)."""
    with jax.enable_x64(True):
        args, tangents = stacked(case), stacked_tangents(case.args())
        values, jacobians = native(case)
        if batched == "primals":  # one tangent for every element
            tangents = tuple(t[0] for t in tangents)
            axes = (0, None)
            expected = jax.vmap(along, (0, None))(jacobians, tangents)
        elif batched == "tangents":  # every tangent at the first element
            args, values = tuple(a[0] for a in args), values[0]
            axes = (None, 0)
            expected = jax.vmap(along, (None, 0))(tuple(j[0] for j in jacobians), tangents)
        else:
            axes = (0, 0)
            expected = jax.vmap(along)(jacobians, tangents)

        def jvp(args, tangents):
            return jax.jvp(case.adapter, args, tangents)

        value, tangent = jax.jit(jax.vmap(jvp, axes))(args, tangents)
        assert tangent.shape == expected.shape
        assert_close((value, tangent), (jnp.broadcast_to(values, expected.shape), expected))


@pytest.mark.parametrize(("case", "assert_close"), CASES)
def test_vmap_of_jacfwd(case, assert_close):
    with jax.enable_x64(True):
        args = stacked(case)
        got = jax.jit(jax.vmap(jax.jacfwd(case.adapter, tuple(range(len(args))))))(*args)
        assert_close(got, native(case)[1])


@pytest.mark.parametrize(("case", "assert_close"), CASES)
def test_vmap_of_grad(case, assert_close):
    """The gradient of ``sum(f(*args) * ct)`` is ``ctᵀ J``."""
    with jax.enable_x64(True):
        args = stacked(case)
        values, jacobians = native(case)
        ct = jnp.asarray(np.random.default_rng(7).normal(size=values.shape[1:]))
        loss = lambda *a: jnp.sum(case.adapter(*a) * ct)  # noqa: E731
        got = jax.jit(jax.vmap(jax.grad(loss, tuple(range(len(args))))))(*args)
        expected = [jax.vmap(lambda j: jnp.tensordot(ct, j, axes=ct.ndim))(j) for j in jacobians]
        assert_close(got, expected)


@pytest.mark.parametrize(("case", "assert_close"), CASES)
def test_vmap_of_grad_with_arguments_shared(case, assert_close):
    """Every way of sharing arguments across the ``vmap``, under a loss linear in the output,
    so that its cotangent is shared too: residuals computed from shared arguments alone
    (``residuals_from``) then have no batch at all, in the pullback as in the forward."""
    with jax.enable_x64(True):
        args, plain = stacked(case), case.args()
        argnums = tuple(range(len(args)))
        ct = jnp.asarray(np.random.default_rng(7).normal(size=native(case)[0].shape[1:]))
        for in_axes in itertools.product([0, None], repeat=len(args)):
            if 0 not in in_axes:
                continue
            given = [a if axis == 0 else p for a, p, axis in zip(args, plain, in_axes)]
            expected = jax.vmap(jax.grad(_cases.projected(case.reference, ct), argnums), in_axes)
            grad = jax.vmap(jax.grad(_cases.projected(case.adapter, ct), argnums), in_axes)
            for transform in (lambda f: f, jax.jit):
                assert_close(transform(grad)(*given), expected(*given))


# the simple adapters and three solvers (the Schur-based ones' Hessians are checked one
# problem at a time in test_higher_order.py; their native references take a second each here)
HESSIAN_CASES = [p for p in CASES if p.id not in {"solver-sylvester", "solver-lyapunov"}]


@pytest.mark.parametrize(("case", "assert_close"), HESSIAN_CASES)
def test_vmap_of_hessian(case, assert_close):
    """Of ``sum(sin(f(*args)) * ct)``, each batch element's arguments flattened to one vector."""
    with jax.enable_x64(True):
        args = stacked(case)
        _, unravel = ravel_pytree(case.args())
        z = jax.vmap(lambda *a: ravel_pytree(a)[0])(*args)
        shape = jax.eval_shape(case.reference, *case.args()).shape
        ct = jnp.asarray(np.random.default_rng(7).normal(size=shape))

        def hessians(function):
            loss = lambda z: jnp.sum(jnp.sin(function(*unravel(z))) * ct)  # noqa: E731
            return jax.jit(jax.vmap(jax.hessian(loss)))

        got = hessians(case.adapter)(z)
        assert got.shape == (BATCH, z.shape[1], z.shape[1])
        assert_close(got, hessians(case.reference)(z))


# ---------------------------------------------------------------- host calls

CALLS = []


class CountingCube(jb.Adapter):
    """``x³`` with host rules that record each call and the shape of what they were given."""

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        CALLS.append(("forward", x.shape))
        return x**3

    def backward(self, res, g):
        CALLS.append(("backward", g.shape))
        x, _ = res
        return (3 * x**2 * g,)

    def jvp(self, res, tangents):
        (dx,) = tangents
        CALLS.append(("jvp", dx.shape))
        x, _ = res
        return 3 * x**2 * dx


CUBE = CountingCube()


@pytest.fixture
def calls():
    CALLS.clear()
    yield CALLS
    CALLS.clear()


def _points(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape))


def _close(actual, expected):
    """float32, with room for the rounding of ``sin`` and ``x³`` on the host and in XLA."""
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def _methods(calls):
    return sorted(method for method, _ in calls)


def test_jit_vmap_jvp_makes_one_forward_and_one_jvp_call(calls):
    xs, ts = _points(4, 3), _points(4, 3, seed=1)
    jvp = jax.jit(jax.vmap(lambda x, t: jax.jvp(CUBE, (x,), (t,))))
    value, tangent = jvp(xs, ts)
    _close(value, xs**3)
    _close(tangent, 3 * xs**2 * ts)
    assert _methods(calls) == ["forward", "jvp"]
    assert dict(calls)["jvp"] == (4, 3)  # the whole batch in one call
    calls.clear()
    jvp(xs, ts)  # compiled: the same again, nothing at trace time
    assert _methods(calls) == ["forward", "jvp"]


def test_nested_vmap_of_jvp_makes_one_call_each(calls):
    xs, ts = _points(2, 3, 4), _points(2, 3, 4, seed=1)
    jvp = jax.vmap(jax.vmap(lambda x, t: jax.jvp(CUBE, (x,), (t,))))
    _, tangent = jax.jit(jvp)(xs, ts)
    _close(tangent, 3 * xs**2 * ts)
    assert _methods(calls) == ["forward", "jvp"]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_jacfwd_makes_one_jvp_call_for_all_its_tangents(calls, jit):
    x = _points(5)
    jacobian = (jax.jit(jax.jacfwd(CUBE)) if jit else jax.jacfwd(CUBE))(x)
    _close(jacobian, jnp.diag(3 * x**2))
    assert _methods(calls) == ["forward", "jvp"]
    assert dict(calls)["forward"][-1] == 5 and dict(calls)["jvp"] == (5, 5)


def test_vmap_of_jacfwd_makes_one_jvp_call(calls):
    xs = _points(4, 3)
    jacobians = jax.jit(jax.vmap(jax.jacfwd(CUBE)))(xs)
    _close(jacobians, jax.vmap(jnp.diag)(3 * xs**2))
    assert _methods(calls) == ["forward", "jvp"]
    # the 3 basis tangents are the same for every point: they reach the host unbatched
    # (size 1 along the vmap axis), broadcast there against the 4 points
    assert np.prod(dict(calls)["forward"]) == 12 and sorted(dict(calls)["jvp"]) == [1, 3, 3]


def test_vmap_over_tangents_alone_makes_one_jvp_call(calls):
    x, ts = _points(3), _points(6, 3, seed=1)
    _, tangents = jax.jit(jax.vmap(lambda t: jax.jvp(CUBE, (x,), (t,))))(ts)
    _close(tangents, 3 * x**2 * ts)
    assert _methods(calls) == ["forward", "jvp"]
    assert dict(calls)["forward"][-1] == 3 and dict(calls)["jvp"] == (6, 3)


def test_linearize_then_vmap_makes_one_jvp_call_and_no_forward(calls):
    x, ts = _points(3), _points(6, 3, seed=1)
    value, linear = jax.linearize(CUBE, x)
    _close(value, x**3)
    assert _methods(calls) == ["forward"]
    calls.clear()
    _close(jax.jit(jax.vmap(linear))(ts), 3 * x**2 * ts)
    assert calls == [("jvp", (6, 3))]


def test_jit_vmap_grad_makes_one_forward_and_one_backward_call(calls):
    xs = _points(4, 3)
    grads = jax.jit(jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(CUBE(x))))))(xs)
    _close(grads, jnp.cos(xs**3) * 3 * xs**2)
    assert _methods(calls) == ["backward", "forward"]
    assert dict(calls)["backward"] == (4, 3)


def test_vmap_of_jacrev_makes_one_backward_call(calls):
    xs = _points(4, 3)
    jacobians = jax.jit(jax.vmap(jax.jacrev(CUBE)))(xs)
    _close(jacobians, jax.vmap(jnp.diag)(3 * xs**2))
    assert _methods(calls) == ["backward", "forward"]


def _counted(method, label, log):
    @functools.wraps(method)  # (the bridge reads forward's signature: its `out` too)
    def counting(self, *args, **kwargs):
        log.append((label, args[-1].shape))
        return method(self, *args, **kwargs)

    return counting


@pytest.mark.parametrize("how", ["jacfwd", "linearize-vmap"])
def test_solver_forward_mode_factorizes_once_and_solves_once(monkeypatch, how):
    """``jacfwd`` of ``LinearSolve`` in ``a`` and ``b`` (20 tangents), or ``linearize`` then
    ``vmap`` of the linear function: one LU factorization and one batched solve."""
    log = []
    monkeypatch.setattr(LinearSolve, "forward", _counted(LinearSolve.forward, "factorize", log))
    monkeypatch.setattr(_LUSolve, "forward", _counted(_LUSolve.forward, "solve", log))
    with jax.enable_x64(True):
        a, b = _solver_cases.CASES[0].args()
        if how == "jacfwd":
            got = jax.jit(jax.jacfwd(LinearSolve(), (0, 1)))(a, b)
            _solver_cases.assert_close(got, jax.jacfwd(jnp.linalg.solve, (0, 1))(a, b))
            assert log == [("factorize", (4,)), ("solve", (20, 4))]
        else:
            _, linear = jax.linearize(LinearSolve(), a, b)
            assert log == [("factorize", (4,))]
            das, dbs = _points(5, 4, 4), _points(5, 4, seed=1)
            got = jax.jit(jax.vmap(linear))(das, dbs)
            _, ref_linear = jax.linearize(jnp.linalg.solve, a, b)
            _solver_cases.assert_close(got, jax.vmap(ref_linear)(das, dbs))
            assert log == [("factorize", (4,)), ("solve", (5, 4))]
