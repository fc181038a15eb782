"""``Sigmoid``: the logistic function, differentiated from its saved output."""

import jax
import scipy.special

import jaxbridge as jb


class Sigmoid(jb.Adapter):
    """``1 / (1 + exp(-x))`` elementwise, finite for any finite ``x`` (±100 included).

    The derivative rules use only what the forward saved: ``y`` and ``1 - y``, the latter
    computed as ``expit(-x)`` because ``1 - y`` rounds to 0 once ``y`` is within an ulp of
    1. ``dy/dx = y (1 - y)``. They are JAX code, so derivatives of every order work.
    """

    signature = "()->()"
    vectorized = True

    def residual_specs(self, x):
        return (jax.ShapeDtypeStruct(x.shape, x.dtype),)

    def forward(self, x):
        return scipy.special.expit(x), scipy.special.expit(-x)

    def pushforward(self, res, tangents):
        (dx,) = tangents
        return dx * _slope(res)

    def pullback(self, res, g):
        return (g * _slope(res),)


def _slope(res):
    """``y (1 - y)``, differentiable to every order: the saved ``1 - y`` supplies the value,
    as a constant (``stop_gradient``: residuals are constants to the rules, and the bridge
    refuses a second derivative through one that is not marked so), and ``-y`` its
    derivative."""
    _, y, one_minus_y = res
    return y * (jax.lax.stop_gradient(one_minus_y) - (y - jax.lax.stop_gradient(y)))
