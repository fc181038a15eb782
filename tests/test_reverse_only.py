"""Adapters with fewer rules: reverse-only ones keep reverse mode and refuse forward mode
with an error that names them and the method to add, only when a tangent reaches them; host
(first-order) rules give first derivatives in both modes and refuse to be differentiated
again, naming the JAX-level method that would allow it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters import Doubling

pytestmark = pytest.mark.slow  # every transform of reverse-only adapters, compiled per case

FORWARD_CALLS = []


class ReverseCube(jb.Adapter):
    """``x³`` with a host backward and no forward-mode rule."""

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        FORWARD_CALLS.append(x.shape)
        return x**3

    def backward(self, res, g):
        x, _ = res
        return (3 * x**2 * g,)


class HostCube(ReverseCube):
    """``x³`` with host rules in both modes: first order only."""

    def jvp(self, res, tangents):
        x, _ = res
        (dx,) = tangents
        return 3 * x**2 * dx


class HostSquare(jb.Adapter):
    """``x²`` with a host jvp and a pullback made of a bridged call (``Doubling``)."""

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return x**2

    def jvp(self, res, tangents):
        x, _ = res
        (dx,) = tangents
        return 2 * x * dx

    def pullback(self, res, g):
        x, _ = res
        return (Doubling()(x) * g,)


def cube(x):
    return x**3


X = np.array([0.5, -1.25, 2.0])
T = np.array([0.3, 1.0, -0.7])


def _x64_arrays():
    return jnp.asarray(X), jnp.asarray(T)


def _loss(f):
    return lambda x: jnp.sum(jnp.sin(f(x)))


def _close(actual, expected):
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- reverse-only adapters

REVERSE = {
    "grad": lambda f: jax.grad(_loss(f)),
    "jit-grad": lambda f: jax.jit(jax.grad(_loss(f))),
    "jacrev": lambda f: jax.jacrev(f),
    "vjp": lambda f: lambda x: jax.vjp(f, x)[1](jnp.cos(x)),
    "vmap-grad": lambda f: jax.jit(jax.vmap(jax.grad(lambda x: jnp.sin(f(x))))),
    "grad-of-scan": lambda f: jax.grad(
        lambda x: jax.lax.scan(lambda c, _: (c + jnp.sum(f(x * c)), None), 1.0, None, length=2)[0]
    ),
    "grad-of-checkpoint": lambda f: jax.grad(_loss(jax.checkpoint(f))),
}


@pytest.mark.parametrize("transform", REVERSE)
def test_reverse_only_adapter_keeps_reverse_mode(transform):
    with jax.enable_x64(True):
        x, _ = _x64_arrays()
        make = REVERSE[transform]
        _close(make(ReverseCube())(x), make(cube)(x))


FORWARD = {
    "jvp": lambda f, x, t: jax.jvp(f, (x,), (t,)),
    "jit-jvp": lambda f, x, t: jax.jit(lambda x, t: jax.jvp(f, (x,), (t,)))(x, t),
    "jacfwd": lambda f, x, t: jax.jacfwd(f)(x),
    "jit-jacfwd": lambda f, x, t: jax.jit(jax.jacfwd(f))(x),
    "hessian": lambda f, x, t: jax.hessian(_loss(f))(x),
    "vmap-jvp": lambda f, x, t: jax.vmap(lambda t: jax.jvp(f, (x,), (t,)))(jnp.stack([t, t])),
    # the tangent map is staged at linearize and runs when the linear function is applied
    "linearize": lambda f, x, t: jax.linearize(f, x)[1](t),
    "jit-linearize": lambda f, x, t: jax.jit(lambda x, t: jax.linearize(f, x)[1](t))(x, t),
    "jvp-of-scan": lambda f, x, t: jax.jvp(
        lambda x: jax.lax.scan(lambda c, _: (c + f(x), None), x, None, length=2)[0], (x,), (t,)
    ),
}


@pytest.mark.parametrize("transform", FORWARD)
def test_forward_mode_through_a_reverse_only_adapter_names_it_and_the_fix(transform):
    with jax.enable_x64(True):
        x, t = _x64_arrays()
        with pytest.raises(TypeError) as raised:
            FORWARD[transform](ReverseCube(), x, t)
        message = str(raised.value)
        assert message.startswith("ReverseCube has no forward-mode rule")
        assert "`jvp(self, res, tangents)`" in message and "`pushforward(" in message


def test_under_jit_the_error_comes_before_anything_runs():
    with jax.enable_x64(True):
        x, t = _x64_arrays()
        FORWARD_CALLS.clear()
        with pytest.raises(TypeError, match="ReverseCube has no forward-mode rule"):
            jax.jit(lambda x, t: jax.jvp(ReverseCube(), (x,), (t,)))(x, t)
        assert FORWARD_CALLS == []


NO_TANGENT_REACHES = {
    # jvp in y only: x is a constant of the differentiated function
    "jvp-other-argument": lambda f, x, y, t: jax.jvp(lambda y: f(x, y), (y,), (t,)),
    "jit-jvp-other-argument": lambda f, x, y, t: jax.jit(
        lambda x, y, t: jax.jvp(lambda y: f(x, y), (y,), (t,))
    )(x, y, t),
    "jacfwd-argnums": lambda f, x, y, t: jax.jacfwd(f, argnums=1)(x, y),
    "hessian-argnums": lambda f, x, y, t: jax.hessian(lambda x, y: jnp.sum(f(x, y) ** 2), 1)(x, y),
    "stop_gradient": lambda f, x, y, t: jax.jvp(
        lambda x: f(jax.lax.stop_gradient(x), x), (x,), (t,)
    ),
}


@pytest.mark.parametrize("transform", NO_TANGENT_REACHES)
def test_forward_mode_that_does_not_reach_the_adapter_works(transform):
    with jax.enable_x64(True):
        x, t = _x64_arrays()
        y = x[::-1]
        run = NO_TANGENT_REACHES[transform]
        got = run(lambda x, y: ReverseCube()(x) * jnp.sin(y), x, y, t)
        _close(got, run(lambda x, y: cube(x) * jnp.sin(y), x, y, t))


# ---------------------------------------------------------------- host rules, both modes

FIRST_ORDER = {
    "jvp": lambda f: lambda x, t: jax.jvp(f, (x,), (t,)),
    "jit-jvp": lambda f: jax.jit(lambda x, t: jax.jvp(f, (x,), (t,))),
    "jacfwd": lambda f: lambda x, t: jax.jit(jax.jacfwd(f))(x),
    "linearize-vmap": lambda f: lambda x, t: jax.vmap(jax.linearize(f, x)[1])(jnp.stack([t, x])),
    "grad": lambda f: lambda x, t: jax.grad(_loss(f))(x),
    "jacrev": lambda f: lambda x, t: jax.jit(jax.jacrev(f))(x),
    "vmap-jvp": lambda f: (
        lambda x, t: jax.jit(jax.vmap(lambda x, t: jax.jvp(f, (x,), (t,))))(
            jnp.stack([x, t]), jnp.stack([t, x])
        )
    ),
}


@pytest.mark.parametrize("transform", FIRST_ORDER)
def test_host_jvp_gives_first_derivatives_in_both_modes(transform):
    with jax.enable_x64(True):
        x, t = _x64_arrays()
        make = FIRST_ORDER[transform]
        _close(make(HostCube())(x, t), make(cube)(x, t))


SECOND_ORDER = {
    "hessian": lambda f: jax.hessian(_loss(f)),
    "jacfwd(jacfwd)": lambda f: jax.jacfwd(jax.jacfwd(_loss(f))),
    "jacrev(jacfwd)": lambda f: jax.jacrev(jax.jacfwd(_loss(f))),
    "jacrev(jacrev)": lambda f: jax.jacrev(jax.jacrev(_loss(f))),
    "grad(grad)": lambda f: jax.grad(lambda x: jnp.sum(jax.grad(_loss(f))(x) ** 2)),
}


@pytest.mark.parametrize(
    ("transform", "needs"),
    [
        ("jacfwd(jacfwd)", "pushforward"),
        ("jacrev(jacfwd)", "pushforward"),
        ("hessian", "pullback"),
        ("jacrev(jacrev)", "pullback"),
        ("grad(grad)", "pullback"),
    ],
)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_host_rules_refuse_second_derivatives_naming_the_method_to_override(transform, needs, jit):
    with jax.enable_x64(True):
        x, _ = _x64_arrays()
        second = SECOND_ORDER[transform](HostCube())
        with pytest.raises(TypeError) as raised:
            (jax.jit(second) if jit else second)(x)
        message = str(raised.value)
        assert message.startswith("HostCube.")
        assert "cannot be differentiated again" in message
        assert f"`{needs}`" in message, message


@pytest.mark.parametrize("transform", ["jacrev(jacrev)", "grad(grad)"])
def test_reverse_only_adapter_refuses_reverse_over_reverse_naming_pullback(transform):
    with jax.enable_x64(True):
        x, _ = _x64_arrays()
        with pytest.raises(TypeError) as raised:
            SECOND_ORDER[transform](ReverseCube())(x)
        message = str(raised.value)
        assert message.startswith("ReverseCube.backward") and "`pullback`" in message, message


@pytest.mark.parametrize(
    ("transform", "works"),
    [
        ("hessian", True),
        ("jacrev(jacrev)", True),
        ("grad(grad)", True),
        ("jacfwd(jacfwd)", False),  # the host jvp is first order
        ("jacrev(jacfwd)", False),
    ],
)
def test_host_jvp_with_a_bridged_pullback(transform, works):
    """The table in JAX-NOTES: ``hessian``, ``jacrev(jacrev)`` and ``grad(grad)``
    differentiate the JAX pullback, and work; ``jacfwd(jacfwd)`` and ``jacrev(jacfwd)``
    differentiate the host jvp, and need a JAX ``pushforward``."""
    with jax.enable_x64(True):
        x, _ = _x64_arrays()
        second = jax.jit(SECOND_ORDER[transform](HostSquare()))
        if works:
            _close(second(x), SECOND_ORDER[transform](jnp.square)(x))
        else:
            with pytest.raises(
                TypeError, match=r"^HostSquare\.jvp runs on the host.*`pushforward`"
            ):
                second(x)


# ---------------------------------------------------------------- several outputs


class Stats(jb.Adapter):
    """``(n)->(),(n),()``: the sum of squares, ``3 x`` and the index of the largest entry
    (an integer output, which gets no tangent), with host rules in both modes."""

    signature = "(n)->(),(n),()"
    vectorized = True

    def output_specs(self, x):
        return (
            jax.ShapeDtypeStruct((), x.dtype),
            jax.ShapeDtypeStruct(x.shape, x.dtype),
            jax.ShapeDtypeStruct((), np.int32),
        )

    def forward(self, x):
        return (x**2).sum(-1), 3 * x, np.argmax(x, -1).astype(np.int32)

    def backward(self, res, g):
        x = res[0]
        g_sum, g_scaled, _ = g
        return (2 * x * g_sum[..., None] + 3 * g_scaled,)

    def jvp(self, res, tangents):
        x = res[0]
        (dx,) = tangents
        return (2 * x * dx).sum(-1), 3 * dx, None


def stats(x):
    return jnp.sum(x**2, -1), 3 * x, jnp.argmax(x, -1).astype(np.int32)


def _floating(outputs):
    return outputs[:2]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_host_jvp_of_several_outputs_with_an_integer_one(jit):
    with jax.enable_x64(True):
        x, t = _x64_arrays()

        def jvp(f):
            return lambda x, t: jax.jvp(f, (x,), (t,))

        (values, tangents) = (jax.jit(jvp(Stats())) if jit else jvp(Stats()))(x, t)
        ref_values, ref_tangents = jvp(stats)(x, t)
        _close(values, ref_values)
        assert values[2].dtype == np.int32
        _close(_floating(tangents), _floating(ref_tangents))
        assert tangents[2].dtype == jax.dtypes.float0


def test_jacfwd_and_vmap_of_jvp_of_several_outputs():
    with jax.enable_x64(True):
        x, t = _x64_arrays()
        xs, ts = jnp.stack([x, t, -x]), jnp.stack([t, x, t])

        def transforms(f):
            floating = lambda x: _floating(f(x))  # noqa: E731
            jvps = jax.vmap(lambda x, t: jax.jvp(floating, (x,), (t,)))
            return jax.jit(lambda x, xs, ts: (jax.jacfwd(floating)(x), jvps(xs, ts)))

        _close(transforms(Stats())(x, xs, ts), transforms(stats)(x, xs, ts))
