"""In float32 the distributions' derivatives in ``x`` (and the quantiles' in the probability,
``stats``' and ``special``'s) are the float64 ones rounded once: within 2 float32 ulps of
SciPy's density in float64, at shapes where the log-density's terms are large. Computed in
float32 from ``(a - 1) log x - x - log Γ(a)`` they cancel to 20-160 ulps (5e-6 to 1e-5
relative; more on a TPU, whose own ``exp`` and ``log`` round otherwise), which the previous
rules did."""

import jax
import numpy as np
import pytest
import scipy.stats

from jaxbridge.adapters import special, stats

ULP = 2.0**-24  # float32's unit roundoff, relative
# (shapes, x for the cdf-like kinds): the log-density's terms of size 30-300
POINTS = {
    "gamma": ((30.0,), 40.0),
    "chi2": ((60.0,), 75.0),
    "invgamma": ((30.0,), 0.025),
    "beta": ((40.0, 25.0), 0.7),
    "t": ((200.0,), 6.0),
    "f": ((300.0, 200.0), 1.3),
}
Q = 0.2  # the quantiles' probability


def _float32_derivative(function, point, shapes):
    argument = np.float32(point)
    return float(jax.grad(lambda v: function(v, *(np.float32(s) for s in shapes)))(argument))


def _reference(family: str, kind: str, shapes, point: float) -> float:
    """The derivative in float64 from SciPy's density, at the float32 inputs."""
    law = getattr(scipy.stats, family)
    shapes = [np.float64(np.float32(s)) for s in shapes]
    point = np.float64(np.float32(point))
    if kind in ("ppf", "isf"):
        quantile = getattr(law, kind)(point, *shapes)
        return (1 if kind == "ppf" else -1) / law.pdf(quantile, *shapes)
    density = law.pdf(point, *shapes)
    return {
        "cdf": density,
        "sf": -density,
        "logcdf": density / law.cdf(point, *shapes),
        "logsf": -density / law.sf(point, *shapes),
    }[kind]


@pytest.mark.parametrize("kind", ["cdf", "sf", "logcdf", "logsf", "ppf", "isf"])
@pytest.mark.parametrize("family", sorted(POINTS))
def test_float32_derivative_is_the_float64_one_rounded(family, kind):
    shapes, x = POINTS[family]
    point = Q if kind in ("ppf", "isf") else x
    got = _float32_derivative(getattr(getattr(stats, family), kind), point, shapes)
    want = _reference(family, kind, shapes, point)
    assert abs(got - want) <= 2 * ULP * abs(want), (family, kind, got, want)


@pytest.mark.parametrize(
    "name, family, shapes",
    [
        ("gammainc", "gamma", (30.0,)),
        ("gammaincc", "gamma", (30.0,)),
        ("betainc", "beta", (40.0, 25.0)),
    ],
)
def test_float32_incomplete_functions_derivative_in_x(name, family, shapes):
    x = POINTS[family][1]
    got = _float32_derivative(lambda v, *s: getattr(special, name)(*s, v), x, shapes)
    want = _reference(family, "sf" if name == "gammaincc" else "cdf", shapes, x)
    assert abs(got - want) <= 2 * ULP * abs(want), (name, got, want)


@pytest.mark.parametrize(
    "name, family, shapes",
    [("gammaincinv", "gamma", (30.0,)), ("betaincinv", "beta", (40.0, 25.0))],
)
def test_float32_inverse_incomplete_functions_derivative_in_the_probability(name, family, shapes):
    got = _float32_derivative(lambda v, *s: getattr(special, name)(*s, v), Q, shapes)
    want = _reference(family, "ppf", shapes, Q)
    assert abs(got - want) <= 2 * ULP * abs(want), (name, got, want)


def test_float32_shape_derivative_of_a_quantile_uses_the_host_density():
    """``∂x/∂a = -(∂P/∂a)/f(x)`` at the quantile: ``∂P/∂a`` is exact on the host, and the
    ``1/f`` the rules multiply it by is the host's too (compared with a float64 run)."""
    a, q = np.float32(30.0), np.float32(Q)
    got = float(jax.grad(lambda s: stats.gamma.ppf(q, s))(a))
    with jax.enable_x64():
        want = float(jax.grad(lambda s: stats.gamma.ppf(np.float64(q), s))(np.float64(a)))
    assert abs(got - want) <= 4 * ULP * abs(want), (got, want)
