"""Data whose sizes alone leave an interpolant nothing to build (no sites, a space of no
dimensions, a grid of no axes) are refused when the call is traced, with the host check's
error naming the adapter and the argument, in every mode: the derivative rules are traced
before the host runs (under ``jit`` XLA may even drop the host call), so a check on the host
alone let them fail with an IndexError deep in JAX, or return NaN."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.interpolate

from jaxbridge.adapters._shared._failure import InterpolationFailure
from jaxbridge.adapters.interpolate import (
    Akima1DInterpolator,
    CloughTocher2DInterpolator,
    CubicSpline,
    InterpSpline,
    LinearNDInterpolator,
    PchipInterpolator,
    RBFInterpolator,
    RegularGridInterpolator,
    make_interp_spline,
)


@pytest.fixture(autouse=True)
def _precision():
    with jax.enable_x64(True):
        yield


ONE_D = "argument 'x' has 0 points; this interpolant needs at least"
TRIANGULATION = "argument 'points' has 0 points; a triangulation in 2 dimensions needs at least 3"
QUERIES_2D = jnp.ones((3, 2))

# (id, adapter, arguments, the message after the adapter's name, differentiable arguments)
CASES = [
    *[
        (name, adapter, (jnp.zeros(0), jnp.zeros(0), jnp.ones(3)), ONE_D, argnums)
        for name, adapter, argnums in [
            ("InterpSpline(k=0)", InterpSpline(k=0), (1, 2)),
            ("InterpSpline(k=1)", InterpSpline(k=1), (0, 1, 2)),
            ("InterpSpline(k=3)", InterpSpline(k=3), (0, 1, 2)),
            ("InterpSpline(k=3,clamped)", InterpSpline(k=3, bc_type="clamped"), (0, 1, 2)),
            ("InterpSpline(k=3,periodic)", InterpSpline(k=3, bc_type="periodic"), (0, 1, 2)),
            ("make_interp_spline", make_interp_spline, (0, 1, 2)),
            ("CubicSpline", CubicSpline(), (0, 1, 2)),
            ("CubicSpline(natural)", CubicSpline("natural"), (0, 1, 2)),
            ("CubicSpline(clamped)", CubicSpline("clamped"), (0, 1, 2)),
            ("CubicSpline(periodic)", CubicSpline("periodic"), (0, 1, 2)),
            ("CubicSpline(nu=2)", CubicSpline(nu=2), (0, 1, 2)),
            ("PchipInterpolator", PchipInterpolator(), (0, 1, 2)),
            ("Akima1DInterpolator", Akima1DInterpolator(), (0, 1, 2)),
            ("Akima1DInterpolator(makima)", Akima1DInterpolator("makima"), (0, 1, 2)),
        ]
    ],
    (
        "LinearNDInterpolator",
        LinearNDInterpolator(),
        (jnp.zeros((0, 2)), jnp.zeros(0), QUERIES_2D),
        TRIANGULATION,
        (0, 1, 2),
    ),
    (
        "CloughTocher2DInterpolator",
        CloughTocher2DInterpolator(),
        (jnp.zeros((0, 2)), jnp.zeros(0), QUERIES_2D),
        TRIANGULATION,
        (1, 2),
    ),
    (
        "RBFInterpolator",
        RBFInterpolator(),
        (jnp.zeros((0, 2)), jnp.zeros(0), QUERIES_2D),
        "argument 'y' has 0 sites; degree 1 in 2 dimensions needs at least 3",
        (0, 1, 2),
    ),
    (
        "RBFInterpolator(gaussian)",
        RBFInterpolator("gaussian", epsilon=1.0),
        (jnp.zeros((0, 2)), jnp.zeros(0), QUERIES_2D),
        "argument 'y' has 0 sites; degree 0 in 2 dimensions needs at least 1",
        (0, 1, 2),
    ),
    (
        "RBFInterpolator(gaussian,n=0)",
        RBFInterpolator("gaussian", epsilon=1.0),
        (jnp.zeros((4, 0)), jnp.ones(4), jnp.zeros((3, 0))),
        "argument 'y' must be \\(p, n\\) with n >= 1; got n = 0",
        (0, 1, 2),
    ),
    (
        "RegularGridInterpolator(d=0)",
        RegularGridInterpolator(),
        ((), jnp.ones(()), jnp.zeros((3, 0))),
        "argument 'points' has no axes; a grid needs at least one",
        (1, 2),
    ),
    (
        "RegularGridInterpolator(axis of 0)",
        RegularGridInterpolator(),
        ((jnp.zeros(0), jnp.arange(3.0)), jnp.zeros((0, 3)), QUERIES_2D),
        "argument 'points' has 0 points along axis 0; method 'linear' needs at least 2",
        (1, 2),
    ),
]


def _name(adapter):
    return "RegularGridInterpolator" if "Grid" in type(adapter).__name__ else type(adapter).__name__


def _calls(adapter, args, i):
    """Each way of calling ``adapter`` on ``args`` that must refuse them: plain, jit, vmap,
    and grad, jit(grad), jvp, jit(jvp) in argument ``i``."""

    def total(a):
        return adapter(*args[:i], a, *args[i + 1 :]).sum()

    def value(a):
        return adapter(*args[:i], a, *args[i + 1 :])

    batched = jax.tree.map(lambda a: jnp.stack([a, a]), args[i])
    tangent = jnp.ones_like(args[i])
    return {
        "plain": lambda: adapter(*args),
        "jit": lambda: jax.jit(adapter)(*args),
        "vmap": lambda: jax.vmap(value)(batched),
        "grad": lambda: jax.grad(total)(args[i]),
        "jit(grad)": lambda: jax.jit(jax.grad(total))(args[i]),
        "jvp": lambda: jax.jvp(value, (args[i],), (tangent,)),
        "jit(jvp)": lambda: jax.jit(lambda a, t: jax.jvp(value, (a,), (t,)))(args[i], tangent),
    }


MODES = ("plain", "jit", "vmap", "grad", "jit(grad)", "jvp", "jit(jvp)")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("adapter", "args", "message", "argnums"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_no_data_is_refused_when_traced(adapter, args, message, argnums, mode):
    # InterpolationFailure itself, not the bridge's JaxRuntimeError from the host under jit:
    # refused before anything is traced
    for i in argnums:
        with pytest.raises(InterpolationFailure, match=f"{_name(adapter)}: {message}"):
            jax.block_until_ready(_calls(adapter, args, i)[mode]())


def test_clough_tocher_gradient_in_xi_is_not_a_silent_nan():
    """XLA dropped the host call that would have refused the data, so ``jit(grad)`` in
    ``xi`` returned NaN with no error."""
    adapter = CloughTocher2DInterpolator()
    points, values = jnp.zeros((0, 2)), jnp.zeros(0)
    with pytest.raises(InterpolationFailure, match="CloughTocher2DInterpolator: argument 'points'"):
        jax.jit(jax.grad(lambda q: adapter(points, values, q).sum()))(QUERIES_2D)


@pytest.mark.parametrize(
    ("make", "args"),
    [
        (lambda: InterpSpline(on_failure="nan"), (jnp.zeros(3), jnp.zeros(3), jnp.ones(2))),
        (
            lambda: RBFInterpolator(on_failure="nan"),
            (jnp.zeros((2, 2)), jnp.zeros(2), QUERIES_2D),
        ),
        (
            lambda: LinearNDInterpolator(on_failure="nan"),
            (jnp.zeros((2, 2)), jnp.zeros(2), QUERIES_2D),
        ),
    ],
)
def test_on_failure_nan_still_gives_nan_for_too_few_sites(make, args):
    assert np.isnan(jax.jit(make())(*args)).all()


@pytest.mark.parametrize("method", ["linear", "cubic", "pchip"])
def test_grid_empty_batch_of_values_gives_an_empty_result(method):
    """An empty batch of grids (``values`` (0, 7, 8)) is SciPy's values with an empty
    trailing axis: an empty result, in every mode (the flattening's ``reshape(…, -1)`` was
    a ZeroDivisionError)."""
    a, b = np.linspace(0.0, 1.0, 7), np.linspace(0.0, 2.0, 8)
    xi = np.full((3, 2), 0.5)
    expected = scipy.interpolate.RegularGridInterpolator(
        (a, b), np.zeros((7, 8, 0)), method=method
    )(xi)  # (3, 0): SciPy's batch axes trail
    adapter = RegularGridInterpolator(method)
    values = jnp.zeros((0, 7, 8))
    for call in (adapter, jax.jit(adapter)):
        np.testing.assert_array_equal(call((a, b), values, xi), expected.T)
    in_values = jax.jit(jax.grad(lambda v: adapter((a, b), v, xi).sum()))(values)
    assert in_values.shape == values.shape
    # the sum of SciPy's empty result is 0 wherever the queries are
    in_xi = jax.jit(jax.grad(lambda q: adapter((a, b), values, q).sum()))(xi)
    np.testing.assert_array_equal(in_xi, np.full(xi.shape, expected.sum()))
    _, tangent = jax.jvp(lambda v: adapter((a, b), v, xi), (values,), (values,))
    assert tangent.shape == expected.T.shape
