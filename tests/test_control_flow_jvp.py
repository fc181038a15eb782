"""Forward and reverse mode through adapters called inside ``lax.scan``, ``fori_loop``,
``while_loop``, ``cond`` and ``jax.checkpoint``, against the same code on native references.

Each wrapper turns the adapter into a scalar loss of all its arguments. In the loops the
adapter's last argument depends on the carry, so tangents flow into the adapter on every
step, not only from outside. ``while_loop`` has no reverse mode in JAX (native code neither):
it is checked in forward mode only. One case's wrappers run in one jitted function
(compiling the native references inside the loops is most of this file's time).
"""

import functools

import _cases
import _solver_cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.slow  # jvp and grad through a loop: ~35 s a case on 2 busy cores

CASES = [pytest.param(c, _cases.assert_close, id=f"simple-{c.name}") for c in _cases.CASES] + [
    pytest.param(c, _solver_cases.assert_close, id=f"solver-{c.name}") for c in _solver_cases.CASES
]

STEPS = 3


def _step(f, args, carry):
    """One loop step: the adapter with its last argument scaled by a carry-dependent factor
    near 1 (so the solvers' matrices stay as they are and the problems well posed)."""
    scaled = args[-1] * (1 + 0.1 * jnp.tanh(carry))
    return carry + jnp.sum(jnp.sin(f(*args[:-1], scaled)))


def _scan(f):
    def loss(*args):
        total, _ = jax.lax.scan(lambda c, _: (_step(f, args, c), None), 0.5, None, length=STEPS)
        return total

    return loss


def _fori_loop(f):
    return lambda *args: jax.lax.fori_loop(0, STEPS, lambda i, c: _step(f, args, c), 0.5)


def _while_loop(f):
    def loss(*args):
        def body(state):
            i, c = state
            return i + 1, _step(f, args, c)

        return jax.lax.while_loop(lambda state: state[0] < STEPS, body, (0, 0.5))[1]

    return loss


def _cond(f):
    """The adapter inside both branches; which one runs depends on the data."""

    def loss(*args):
        return jax.lax.cond(
            jnp.sum(args[-1]) > 0,
            lambda args: jnp.sum(jnp.sin(f(*args))),
            lambda args: jnp.sum(jnp.cos(2 * f(*args))),
            args,
        )

    return loss


def _checkpoint(f):
    return lambda *args: jnp.sum(jnp.sin(jax.checkpoint(f)(*args)) ** 2)


WRAPPERS = {
    "scan": _scan,
    "fori_loop": _fori_loop,
    "while_loop": _while_loop,
    "cond": _cond,
    "checkpoint": _checkpoint,
}
REVERSE = [name for name in WRAPPERS if name != "while_loop"]


def _wrappers(case):
    """All of them for the simple adapters; for the solvers, whose native references are slow
    to compile, all but ``fori_loop``, which with static bounds JAX runs as a ``scan``."""
    if isinstance(case, _cases.Case):
        return list(WRAPPERS)
    return [name for name in WRAPPERS if name != "fori_loop"]


# The control-flow rules are the same for every adapter; the solvers are here for the bridged
# calls nested in their rules (LU, Schur and sparse LU solves). LinearSolve(assume_a="pos") and
# LyapunovSolve nest the same kinds of call as LinearSolve and SylvesterSolve: left out, their
# native references being slow to compile inside loops.
CONTROL_FLOW_CASES = [p for p in CASES if p.id not in {"solver-linear-pos", "solver-lyapunov"}]


@pytest.mark.parametrize(("case", "assert_close"), CONTROL_FLOW_CASES)
def test_jvp_and_grad_through_control_flow(case, assert_close):
    with jax.enable_x64(True):
        args = case.args()
        rng = np.random.default_rng(3)
        tangents = tuple(jnp.asarray(rng.normal(size=a.shape)) for a in args)
        argnums = tuple(range(len(args)))
        names = _wrappers(case)

        @functools.partial(jax.jit, static_argnums=0)
        def transforms(f, args, tangents):
            jvps = {n: jax.jvp(WRAPPERS[n](f), args, tangents) for n in names}
            grads = {n: jax.grad(WRAPPERS[n](f), argnums)(*args) for n in names if n in REVERSE}
            return jvps, grads

        got = transforms(case.adapter, args, tangents)
        expected = transforms(case.reference, args, tangents)
        _compare(got[0], expected[0], assert_close, "jvp")
        _compare(got[1], expected[1], assert_close, "grad")


def _compare(got, expected, assert_close, kind):
    assert got.keys() == expected.keys()
    for name, reference in expected.items():
        try:
            assert_close(got[name], reference)
        except AssertionError as error:
            raise AssertionError(f"{kind} through {name}: {error}") from None


def test_vmap_of_jvp_through_loops():
    """Batched primals and tangents through ``scan`` and ``while_loop``, for one solver."""
    case = _solver_cases.CASES[0]
    with jax.enable_x64(True):
        args = case.batched_args()
        tangents = tuple(jnp.ones_like(a) for a in args)

        def jvps(f):
            def run(args, tangents):
                return {
                    name: jax.vmap(lambda a, t: jax.jvp(WRAPPERS[name](f), a, t))(args, tangents)
                    for name in ("scan", "while_loop")
                }

            return jax.jit(run)(args, tangents)

        _compare(
            jvps(case.adapter), jvps(case.reference), _solver_cases.assert_close, "vmap of jvp"
        )
