"""``check_adapter``'s "hessian" check runs for every mix of rules that defines second
derivatives (host ``jvp`` with a JAX ``pullback``, a JAX ``pushforward`` with a host
``backward``, one JAX rule alone, both), passes correct rules, and catches a second derivative
1% off in float32 and float64, a rule that reads a residual as if it were an input, and a
helper adapter with a wrong rule called from a pullback."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special

import jaxbridge as jb
from jaxbridge.testing import check_adapter


def _off_by(message: str) -> float:
    found = re.search(r"off by ([0-9.e+-]+) of that magnitude", message)
    assert found, message
    return float(found.group(1))


def _slope(x, off: bool):
    """``sigmoid(x)``, softplus's slope; with ``off``, its value is exact and its own
    derivative 1% short (what a wrong second-order term looks like)."""
    s = jax.nn.sigmoid(x)
    return 0.99 * s + 0.01 * jax.lax.stop_gradient(s) if off else s


class _Softplus(jb.Adapter):
    """``log(1 + exp(x))``; subclasses supply the rules, in JAX or on the host."""

    off: bool = False

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return np.logaddexp(0, x)


class HostJvpJaxPullback(_Softplus):
    """The recipe for Hessians (docs: Transformations): forward over reverse and reverse over reverse."""

    def jvp(self, res, tangents):
        x, _ = res
        return tangents[0] * scipy.special.expit(x)

    def pullback(self, res, g):
        x, _ = res
        return (g * _slope(x, self.off),)


class JaxPushforwardHostBackward(_Softplus):
    """Forward over forward and reverse over forward."""

    def pushforward(self, res, tangents):
        x, _ = res
        return tangents[0] * _slope(x, self.off)

    def backward(self, res, g):
        x, _ = res
        return (g * scipy.special.expit(x),)


class PullbackOnly(_Softplus):
    """Reverse over reverse only."""

    def pullback(self, res, g):
        x, _ = res
        return (g * _slope(x, self.off),)


class PushforwardOnly(_Softplus):
    """Forward over forward only, checked against differences of ``jax.jvp``."""

    def pushforward(self, res, tangents):
        x, _ = res
        return tangents[0] * _slope(x, self.off)


RULES = [HostJvpJaxPullback, JaxPushforwardHostBackward, PullbackOnly, PushforwardOnly]
COMPOSITIONS = {
    HostJvpJaxPullback: ["forward over reverse", "reverse over reverse"],
    JaxPushforwardHostBackward: ["reverse over forward", "forward over forward"],
    PullbackOnly: ["reverse over reverse"],
    PushforwardOnly: ["forward over forward"],
}
X = np.array([0.5, -1.25, 2.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("rules", RULES, ids=lambda c: c.__name__)
def test_every_mix_of_rules_is_checked(rules, dtype):
    with jax.enable_x64(dtype == np.float64):
        check_adapter(rules(), X.astype(dtype))
        message = _failure(rules(off=True), X.astype(dtype), checks=("hessian",))
    assert "the 'hessian' check failed" in message
    assert any(c in message for c in COMPOSITIONS[rules]), message
    assert 0.005 < _off_by(message) < 0.02  # the 1% it is off, measured


@pytest.mark.parametrize("rules", RULES, ids=lambda c: c.__name__)
def test_each_existing_composition_is_compared(rules, monkeypatch):
    """Each composition of ``COMPOSITIONS[rules]`` runs, and no other."""
    from jaxbridge.testing import _hessian

    seen = []
    program = _hessian._second_derivatives

    def spy(adapter, wrt, compositions, *args):
        seen.extend(compositions)
        return program(adapter, wrt, compositions, *args)

    monkeypatch.setattr(_hessian, "_second_derivatives", spy)
    check_adapter(rules(), X.astype(np.float32), checks=("hessian",))
    assert sorted(c.split(" (")[0] for c in seen) == sorted(COMPOSITIONS[rules])


def _failure(adapter: jb.Adapter, *args: np.ndarray, **options) -> str:
    with pytest.raises(AssertionError) as caught:
        check_adapter(adapter, *args, **options)
    return str(caught.value)


# --- a residual read as if it were an input


class CubeSlopeFromResidual(jb.Adapter):
    """``x³``, whose forward saves the slope ``3x²`` for the rules. The pullback reads it,
    but residuals are constants to the derivative rules: differentiated again, the slope's
    own derivative ``6x`` is lost (``jax.hessian`` gave 0.0 for 4.02)."""

    signature = "()->()"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x):
        return x**3, 3 * x**2

    def jvp(self, res, tangents):
        _, _, slope = res
        return tangents[0] * slope  # on the host: first order, right

    def pullback(self, res, g):
        _, _, slope = res
        return (g * slope,)


class CubeSlopeFromInput(CubeSlopeFromResidual):
    """The same, with the pullback's slope computed from the input: JAX differentiates it."""

    def pullback(self, res, g):
        x, _, _ = res
        return (g * 3 * x**2,)


class CubeSlopeFromStoppedResidual(CubeSlopeFromResidual):
    """The same, with the residual marked constant by ``stop_gradient``: the bridge takes
    the rule at its word (``Sigmoid`` does this rightly), so only the check can tell."""

    def pullback(self, res, g):
        _, _, slope = res
        return (g * jax.lax.stop_gradient(slope),)


def test_catches_a_pullback_that_reads_a_residual():
    x = np.array([0.5, 0.67, -1.5], np.float32)
    check_adapter(CubeSlopeFromResidual(), x, checks=("specs", "grad", "jvp", "transpose"))
    message = _failure(CubeSlopeFromResidual(), x)  # the bridge refuses it
    assert "the 'hessian' check failed" in message
    assert "it raised TypeError: CubeSlopeFromResidual.pullback computes with residual 0" in message
    message = _failure(CubeSlopeFromStoppedResidual(), x)  # the differences catch it
    assert "the 'hessian' check failed" in message
    assert "forward over reverse (jax.jvp of jax.grad, as jax.hessian)" in message
    assert _off_by(message) > 0.5
    check_adapter(CubeSlopeFromInput(), x)


# --- a helper adapter, called from a pullback, whose own forward-mode rule is wrong


class Logistic(jb.Adapter):
    """``sigmoid(x)`` on the host; with ``off``, its ``jvp`` is 1% off (its backward is right)."""

    off: bool = False

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return scipy.special.expit(x)

    def backward(self, res, g):
        _, y = res
        return (g * y * (1 - y),)

    def jvp(self, res, tangents):
        _, y = res
        return tangents[0] * y * (1 - y) * (1.01 if self.off else 1.0)


class SoftplusWithHelper(_Softplus):
    """Host ``jvp``; a pullback made of the bridged ``Logistic``."""

    def jvp(self, res, tangents):
        x, _ = res
        return tangents[0] * scipy.special.expit(x)

    def pullback(self, res, g):
        x, _ = res
        return (g * Logistic(off=self.off)(x),)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_catches_a_helper_whose_jvp_is_wrong(dtype):
    with jax.enable_x64(dtype == np.float64):
        check_adapter(SoftplusWithHelper(), X.astype(dtype))
        # the first derivatives are right, and reverse over reverse (the helper's backward)
        message = _failure(SoftplusWithHelper(off=True), X.astype(dtype))
    assert "the 'hessian' check failed" in message
    assert "forward over reverse (jax.jvp of jax.grad, as jax.hessian)" in message
    assert 0.005 < _off_by(message) < 0.02


def test_a_linear_adapter_has_zero_second_derivatives():
    """Linear in every argument: each composition exists, and is zero."""

    class Scaling(jb.Adapter):
        signature = "(n)->(n)"
        vectorized = True
        linear_in = ("x",)

        def forward(self, x):
            return 3 * x

        def backward(self, res, g):
            return (3 * g,)

    check_adapter(Scaling(), X.astype(np.float32), checks=("hessian",))
    with jax.enable_x64(True):
        f = lambda x: jnp.sum(jnp.sin(Scaling()(x)))  # noqa: E731
        np.testing.assert_allclose(jax.hessian(f)(X), np.diag(-9 * np.sin(3 * X)), rtol=1e-12)
