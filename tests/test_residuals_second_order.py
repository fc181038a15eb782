"""Residuals are constants to the derivative rules: a second derivative that would
differentiate a JAX rule through a residual is refused with an error that names the adapter
and says how to fix it, where it used to be silently wrong (``jax.hessian`` gave 0.0 for
4.02). First derivatives, and second derivatives where the residual cannot move or only
reaches bridged calls, are unaffected."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb


@pytest.fixture(autouse=True)
def _float64():
    with jax.enable_x64(True):
        yield


class CubeSlopeFromResidual(jb.Adapter):
    """``x³``, whose forward saves the slope ``3x²``, read by the rules."""

    signature = "()->()"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x):
        return x**3, 3 * x**2

    def jvp(self, res, tangents):
        _, _, slope = res
        return tangents[0] * slope

    def pullback(self, res, g):
        _, _, slope = res
        return (g * slope,)


class CubeSlopeFromInput(CubeSlopeFromResidual):
    """The right way: the pullback computes the slope from the input, in JAX."""

    def pullback(self, res, g):
        x, _, _ = res
        return (g * 3 * x**2,)


class CubePushforwardFromResidual(jb.Adapter):
    """The same mistake in a forward-mode rule written in JAX."""

    signature = "()->()"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x):
        return x**3, 3 * x**2

    def pushforward(self, res, tangents):
        _, _, slope = res
        return tangents[0] * jnp.sqrt(slope**2)  # through a jitted jnp function too


X = np.float64(0.67)

WRONG = {
    "hessian": lambda f: jax.hessian(f),
    "grad(grad)": lambda f: jax.grad(jax.grad(f)),
    "jit(hessian)": lambda f: jax.jit(jax.hessian(f)),
    "vmap(hessian)": lambda f: lambda x: jax.vmap(jax.hessian(f))(jnp.array([x, x])),
}


@pytest.mark.parametrize("transform", WRONG.values(), ids=WRONG.keys())
def test_a_second_derivative_through_a_residual_is_refused(transform):
    with pytest.raises(TypeError) as caught:
        transform(CubeSlopeFromResidual())(X)
    message = str(caught.value)
    assert message.startswith("CubeSlopeFromResidual.pullback computes with residual 0")
    assert "Residuals are constants to the derivative rules" in message
    assert "Compute what pullback needs from the inputs and outputs in `res`" in message
    assert "pass the residual only to a bridged call" in message


def test_the_same_mistake_in_a_pushforward_is_refused():
    f = CubePushforwardFromResidual()
    np.testing.assert_allclose(jax.jacfwd(f)(X), 3 * X**2, rtol=1e-15)  # first order: fine
    with pytest.raises(TypeError, match=r"CubePushforwardFromResidual.pushforward computes"):
        jax.jacfwd(jax.jacfwd(f))(X)


def test_first_derivatives_are_unaffected():
    f = CubeSlopeFromResidual()
    np.testing.assert_allclose(jax.grad(f)(X), 3 * X**2, rtol=1e-15)
    np.testing.assert_allclose(jax.jacfwd(f)(X), 3 * X**2, rtol=1e-15)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(f)))(jnp.array([X, -X])), [3 * X**2] * 2)


def test_the_right_way_gets_the_hessian():
    f = CubeSlopeFromInput()
    for transform in (jax.hessian, lambda f: jax.grad(jax.grad(f))):
        np.testing.assert_allclose(transform(f)(X), 6 * X, rtol=1e-15)


class ScaledSquare(jb.Adapter):
    """``exp(log_a) x²`` with ``log(a)`` saved, from ``a`` alone (``residuals_from``), and
    read by the pullback."""

    signature = "(),()->()"
    vectorized = True
    residuals_from = ("a",)

    def residual_specs(self, a, x):
        return jax.ShapeDtypeStruct(a.shape, a.dtype)

    def forward(self, a, x):
        return a * x**2, np.log(a)

    def jvp(self, res, tangents):
        a, x, _, log_a = res
        da, dx = tangents
        out = 0.0 if dx is None else 2 * np.exp(log_a) * x * dx
        return out if da is None else out + x**2 * da

    def pullback(self, res, g):
        a, x, _, log_a = res
        return g * x**2, g * 2 * jnp.exp(log_a) * x


def test_a_residual_whose_arguments_do_not_move_is_a_true_constant():
    """Differentiated in ``x`` alone, ``log(a)`` cannot move: the Hessian is exact; in ``a``,
    the residual moves, and the bridge refuses."""
    f = ScaledSquare()
    a = np.float64(1.5)
    np.testing.assert_allclose(jax.hessian(f, argnums=1)(a, X), 2 * a, rtol=1e-15)
    with pytest.raises(TypeError, match=r"ScaledSquare.pullback computes with residual 0"):
        jax.hessian(f, argnums=(0, 1))(a, X)


def test_residuals_passed_to_bridged_calls_are_allowed():
    """``LinearSolve`` hands its saved factors to a solve whose rules differentiate through
    ``a``: every order works, exactly as native JAX."""
    from jaxbridge.adapters import LinearSolve

    rng = np.random.default_rng(0)
    a = jnp.asarray(np.eye(3) + 0.3 * rng.normal(size=(3, 3)))
    b = jnp.asarray(rng.normal(size=3))

    def loss(solve):
        return lambda a: jnp.sum(jnp.sin(solve(a, b)))

    expected = jax.hessian(loss(jnp.linalg.solve))(a)
    got = jax.hessian(loss(LinearSolve()))(a)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_guide_example():
    """The guide's "Residuals and second derivatives" (docs/writing-an-adapter.md): the wrong
    pullback is refused as it says, and the right one (the commented lines) gets the
    Hessian."""
    import re
    import textwrap
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "writing-an-adapter.md").read_text()
    section = text.split("## Residuals and second derivatives", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    namespace: dict = {"jax": jax, "jaxbridge": jb}
    exec(compile(block, "docs residuals example", "exec"), namespace)
    cube = namespace["Cube"]()
    with pytest.raises(TypeError, match=r"Cube.pullback computes with residual 0"):
        jax.hessian(cube)(X)
    right = "\n".join(
        line.replace("# ", "", 1) for line in block.splitlines() if line.startswith("    # ")
    )
    right = right.split("\n", 1)[1]  # the comment line that introduces it
    exec(
        compile(
            "class Right(Cube):\n" + textwrap.indent(textwrap.dedent(right), "    "),
            "docs residuals example",
            "exec",
        ),
        namespace,
    )
    np.testing.assert_allclose(jax.hessian(namespace["Right"]())(X), 6 * X, rtol=1e-15)


class AbsFromSavedSign(jb.Adapter):
    """``|x|`` with its sign saved as a float: the pullback only compares it with 0, which
    has no derivative, so a second derivative is allowed (and zero)."""

    signature = "()->()"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x):
        return np.abs(x), np.where(x < 0, -1.0, 1.0).astype(x.dtype)

    def jvp(self, res, tangents):
        _, _, sign = res
        return tangents[0] * sign

    def pullback(self, res, g):
        _, _, sign = res
        return (jnp.where(sign < 0, -g, g),)


def test_a_residual_that_is_only_compared_is_allowed():
    f = AbsFromSavedSign()
    assert jax.hessian(f)(X) == 0.0
    assert jax.grad(jax.grad(lambda x: jnp.sin(f(x))))(-X) == pytest.approx(-np.sin(X), rel=1e-15)
