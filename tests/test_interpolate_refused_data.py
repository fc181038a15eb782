"""Data an interpolant's forward refuses (non-finite values, SciPy's periodic data whose ends
differ, queries outside the grid) are refused by every derivative, reverse and forward mode,
eager and under ``jit`` (#54). Under ``jit`` XLA drops a host call whose value no one uses:
the forward's, when only a derivative is asked for; a rule whose helpers are not given the
data (the tangent of a linear interpolant is the interpolant of the tangent; its transpose
takes no values) then gave numbers, or NaN, for data that ``grad`` refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

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
)


@pytest.fixture(autouse=True)
def _precision():
    with jax.enable_x64(True):
        yield


RNG = np.random.default_rng(5)
X = jnp.linspace(0.0, 3.0, 6)
Y_NAN = jnp.sin(X).at[2].set(jnp.nan)
XQ = jnp.asarray([0.3, 1.7, 2.2])
SITES = jnp.asarray(RNG.uniform(0.0, 1.0, (8, 2)))
VALUES_NAN = jnp.asarray(RNG.normal(size=8)).at[1].set(jnp.nan)
XI = jnp.asarray([[0.4, 0.5], [0.5, 0.45]])
AXES = (jnp.linspace(0.0, 1.0, 7), jnp.linspace(0.0, 2.0, 8))
GRID = jnp.asarray(RNG.normal(size=(7, 8)))
OUTSIDE = jnp.asarray([[0.5, 1.0], [1.3, 1.0]])  # the second query past axis 0's end

NON_FINITE = "argument '{}' has non-finite entries"
# (id, adapter, arguments, the argument differentiated, the message after the adapter's name)
CASES = [
    ("InterpSpline(k=1)", InterpSpline(k=1), (X, Y_NAN, XQ), 1, NON_FINITE.format("y")),
    ("InterpSpline(k=3)", InterpSpline(k=3), (X, Y_NAN, XQ), 1, NON_FINITE.format("y")),
    ("CubicSpline", CubicSpline(), (X, Y_NAN, XQ), 1, NON_FINITE.format("y")),
    *[
        (
            f"CubicSpline(periodic) ends differ, in {name}",
            CubicSpline("periodic"),
            (X, jnp.sin(X), XQ),
            i,
            "SciPy refused the data",
        )
        for i, name in ((0, "x"), (1, "y"))
    ],
    ("PchipInterpolator", PchipInterpolator(), (X, Y_NAN, XQ), 1, NON_FINITE.format("y")),
    ("Akima1DInterpolator", Akima1DInterpolator(), (X, Y_NAN, XQ), 1, NON_FINITE.format("y")),
    (
        "LinearNDInterpolator",
        LinearNDInterpolator(),
        (SITES, VALUES_NAN, XI),
        1,
        NON_FINITE.format("values"),
    ),
    (
        "CloughTocher2DInterpolator",
        CloughTocher2DInterpolator(),
        (SITES, VALUES_NAN, XI),
        1,
        NON_FINITE.format("values"),
    ),
    ("RBFInterpolator", RBFInterpolator(), (SITES, VALUES_NAN, XI), 1, NON_FINITE.format("d")),
    (
        "RegularGridInterpolator(cubic)",
        RegularGridInterpolator("cubic"),
        (AXES, GRID.at[1, 1].set(jnp.nan), XI),
        1,
        NON_FINITE.format("values"),
    ),
    *[
        (
            f"RegularGridInterpolator(pchip) outside, in {name}",
            RegularGridInterpolator("pchip"),
            (AXES, GRID, OUTSIDE),
            i,
            "argument 'xi' has points outside the grid",
        )
        for i, name in ((1, "values"), (2, "xi"))
    ],
]


def _name(adapter):
    return "RegularGridInterpolator" if "Grid" in type(adapter).__name__ else type(adapter).__name__


def _calls(adapter, args, i):
    def value(a):
        return adapter(*args[:i], a, *args[i + 1 :])

    def total(a):
        return value(a).sum()

    tangent = jnp.ones_like(args[i])
    return {
        "grad": lambda: jax.grad(total)(args[i]),
        "jit(grad)": lambda: jax.jit(jax.grad(total))(args[i]),
        "jvp": lambda: jax.jvp(value, (args[i],), (tangent,))[1],
        "jit(jvp)": lambda: jax.jit(lambda a, t: jax.jvp(value, (a,), (t,))[1])(args[i], tangent),
        "jit(jacfwd)": lambda: jax.jit(jax.jacfwd(value))(args[i]),
    }


@pytest.mark.parametrize("mode", ("grad", "jit(grad)", "jvp", "jit(jvp)", "jit(jacfwd)"))
@pytest.mark.parametrize(
    ("adapter", "args", "argnum", "message"), [pytest.param(*c[1:], id=c[0]) for c in CASES]
)
def test_refused_data_are_refused_by_every_derivative(adapter, args, argnum, message, mode):
    # under jit the host's InterpolationFailure reaches the caller inside JAX's runtime error
    raises = (InterpolationFailure, jax.errors.JaxRuntimeError)
    with pytest.raises(raises, match=f"{_name(adapter)}: {message}"):
        jax.block_until_ready(_calls(adapter, args, argnum)[mode]())
