"""Refusals of the solver families (linalg, optimize, integrate, signal) hold under every
transformation: where a rule reads neither the forward's results nor the refused argument on
the host, XLA drops the forward under ``jit`` and only ``Adapter.check`` can refuse; and with
``on_failure="nan"`` a refused input's derivatives are NaN in both modes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.signal
from _integrate_cases import Decay
from _optimize_problems import Kepler

import jaxbridge as jb
from jaxbridge.adapters.integrate import OdeSolve
from jaxbridge.adapters.linalg import DiscreteLyapunovSolve, SolveFailure
from jaxbridge.adapters.optimize import Root
from jaxbridge.adapters.signal import LinearFilter, SosFilter

NAN = np.nan


def compositions(adapter, args, i):
    """``jit(grad)``, ``vmap(grad)`` and ``jit(jvp)`` of the summed outputs in argument ``i``,
    each a function of the arguments. (Written out here: check_adapter's "refused" check
    binds its per-argument function late, so every argument but the last is checked in the
    last one's place.)"""

    def total(ai, *a):
        return jnp.sum(adapter(*a[:i], ai, *a[i + 1 :]))

    def grad(*a):
        return jax.grad(total)(a[i], *a)

    def jvp(*a):
        return jax.jvp(lambda ai: total(ai, *a), (a[i],), (jnp.ones_like(a[i]),))[1]

    def vmap_grad(*a):
        return jax.vmap(grad)(*(x[None] for x in a))

    return {"jit(grad)": jax.jit(grad), "vmap(grad)": vmap_grad, "jit(jvp)": jax.jit(jvp)}


def assert_refused(adapter, args, error, match):
    """The eager call and every composition in every argument raise ``error``."""
    args = tuple(jnp.asarray(a) for a in args)
    with pytest.raises(error, match=match):
        jax.block_until_ready(adapter(*args))
    for i in range(len(args)):
        for name, run in compositions(adapter, args, i).items():
            with pytest.raises(error, match=match), jb.host_errors():
                got = jax.block_until_ready(run(*args))
                print(f"{name} in argument {i} gave {got}")  # (shown when nothing raised)


B, A, X = np.array([1.0, 0.5]), np.array([1.0, -0.3]), np.array([1.0, 2.0, -1.0, 0.5])
SOS = np.array([[1.0, 0.5, 0.2, 1.0, -0.3, 0.1], [0.5, 0.1, 0.0, 1.0, 0.2, 0.05]])
Q = np.array([[1.0, 0.2, 0.0], [0.3, 2.0, NAN], [0.0, 0.1, 1.0]])

# Each lost its refusal under jit(grad) (and jit(jvp), vmap(grad)) in some argument before
# the adapter refused in `check`: x̄ of lfilter is Bᵀ A⁻ᵀ ḡ (no host call reads b or x),
# sosfilt's x̄ the cascade on ḡ, and the Stein equation's q̄ a solve with a alone.
REFUSED = {
    "lfilter-nan-b": (LinearFilter(), (np.array([NAN, 0.5]), A, X), ValueError, "'b'"),
    "lfilter-nan-x": (LinearFilter(), (B, A, np.array([1.0, NAN, -1, 0])), ValueError, "'x'"),
    "lfilter-inf-x": (LinearFilter(), (B, A, np.array([np.inf, 1, -1, 0])), ValueError, "'x'"),
    "sosfilt-nan-x": (SosFilter(), (SOS, np.array([1.0, NAN, -1, 0])), ValueError, "'x'"),
    "stein-nan-q": (DiscreteLyapunovSolve(), (0.5 * np.eye(3), Q), SolveFailure, "'q'"),
}


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_a_refusal_holds_under_every_composition(case):
    adapter, args, error, match = case
    with jax.enable_x64(True):
        assert_refused(adapter, args, error, match)


def all_nan(value):
    return bool(np.isnan(np.asarray(value)).all())


def test_a_singular_stein_equation_with_on_failure_nan_has_nan_derivatives_under_jit():
    solve = DiscreteLyapunovSolve(on_failure="nan")
    a, q = jnp.eye(2), jnp.array([[1.0, 0.5], [0.0, 2.0]])  # eigenvalue products 1
    for i in range(2):
        (grad, _, jvp) = compositions(solve, (a, q), i).values()
        assert all_nan(grad(a, q)) and all_nan(jvp(a, q))


def test_a_failed_root_with_on_failure_nan_has_a_nan_tangent_in_x0_too():
    # the backward gave NaN in every argument; the tangent in x0 alone was 0, as for a solve
    # that succeeded
    with jax.enable_x64(True):
        root = Root(Kepler(), on_failure="nan")
        x0, theta = jnp.array([1.0]), jnp.array([NAN, 1.0])
        for i in range(2):
            (grad, _, jvp) = compositions(root, (x0, theta), i).values()
            assert all_nan(grad(x0, theta)) and all_nan(jvp(x0, theta))
        ok = jnp.array([0.3, 1.0])  # a solve that succeeds: x0 moves nothing, exactly
        assert compositions(root, (x0, ok), 0)["jit(jvp)"](x0, ok) == 0


def test_an_ode_refused_with_on_failure_nan_has_nan_derivatives_under_jit():
    with jax.enable_x64(True):
        solve = OdeSolve(Decay(), on_failure="nan")
        args = (jnp.array([1.0]), jnp.array([NAN]), jnp.array([0.0, 1.0]))
        for i in range(3):
            (grad, _, jvp) = compositions(solve, args, i).values()
            assert all_nan(grad(*args)) and all_nan(jvp(*args))


def test_check_leaves_good_inputs_alone():
    # the zeros a check adds, and the check itself, change no value or derivative
    with jax.enable_x64(True):
        b, a, x = (jnp.asarray(v) for v in (B, A, X))
        got = jax.jit(jax.grad(lambda x: LinearFilter()(b, a, x) @ jnp.arange(4.0)))(x)
        # x̄ = Bᵀ A⁻ᵀ ḡ: the reversed filter on the reversed cotangent
        expected = scipy.signal.lfilter(B, A, np.arange(4.0)[::-1])[::-1]
        np.testing.assert_allclose(got, expected, rtol=1e-14)
        q = jnp.array([[1.0, 0.2], [0.3, 2.0]])
        dq = jax.jit(jax.grad(lambda q: DiscreteLyapunovSolve()(0.5 * jnp.eye(2), q).sum()))(q)
        # x = Σ aᵏ q aᵏᵀ with a = I/2: ∂(Σ x)/∂q = Σ 4⁻ᵏ = 4/3 in every entry
        np.testing.assert_allclose(dq, np.full((2, 2), 4 / 3), rtol=1e-14)
