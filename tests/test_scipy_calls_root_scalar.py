"""SciPy's ``root_scalar`` with a JAX function (``jaxbridge.adapters.optimize.root_scalar``):
SciPy's roots and counts for every method, and the root's derivatives in ``args`` against
closed forms and central differences of SciPy's own call, to second order."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
from _optimize_problems import assert_derivative_refused

from jaxbridge.adapters import optimize as jo
from jaxbridge.adapters.optimize import OptimizeError

pytestmark = pytest.mark.usefixtures("x64")

ECCENTRICITY, MEAN_ANOMALY = 0.3, 1.2
BRACKETING = ["brentq", "brenth", "bisect", "ridder", "toms748"]
FROM_A_START = ["newton", "secant", "halley"]


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def kepler(x, e, m):
    """Kepler's equation ``E - e sin E - M = 0``: its root ``E`` has closed-form derivatives
    ``∂E/∂M = 1 / (1 - e cos E)``, ``∂E/∂e = sin E / (1 - e cos E)``."""
    return x - e * jnp.sin(x) - m


def kepler_np(x, e, m):
    # the same float64 values as the bridge's (numpy's sin may differ in the last bit, and
    # change toms748's count of calls)
    with jax.default_device(jax.devices("cpu")[0]):
        return float(_kepler_jit(x, e, m))


_kepler_jit = jax.jit(kepler)


def held(v):
    """``v`` as the device holds it, which the bridge's host call reads (a TPU's float64
    keeps 48 bits: SciPy on 0.3 itself took one call more there)."""
    return float(np.asarray(jax.device_put(np.float64(v))))


def scipy_root(e, m, method, **tight):
    e, m = held(e), held(m)
    where = {"bracket": (0.0, 3.0)} if method in BRACKETING else {"x0": 1.0}
    if method == "newton":
        where["fprime"] = lambda x, e, m: 1 - e * np.cos(x)
    if method == "halley":
        where["fprime"] = lambda x, e, m: 1 - e * np.cos(x)
        where["fprime2"] = lambda x, e, m: e * np.sin(x)
    return scipy.optimize.root_scalar(kepler_np, args=(e, m), method=method, **where, **tight)


def ours(e, m, method, **given):
    where = {"bracket": (0.0, 3.0)} if method in BRACKETING else {"x0": 1.0}
    return jo.root_scalar(kepler, args=(e, m), method=method, **where, **given)


@pytest.mark.parametrize("method", BRACKETING + FROM_A_START)
def test_root_scalar_as_scipy(method):
    got = jax.jit(lambda e, m: ours(e, m, method))(ECCENTRICITY, MEAN_ANOMALY)
    expected = scipy_root(ECCENTRICITY, MEAN_ANOMALY, method)
    np.testing.assert_allclose(got.root, expected.root, rtol=1e-13)
    assert int(got.iterations) == expected.iterations
    assert int(got.function_calls) == expected.function_calls
    assert bool(got.converged) and int(got.flag) == 0


@pytest.mark.parametrize("method", BRACKETING + FROM_A_START)
def test_root_scalar_derivatives_in_args_as_closed_forms_and_scipy_differences(method):
    e, m = ECCENTRICITY, MEAN_ANOMALY
    root = float(ours(e, m, method).root)
    slope = 1 - e * np.cos(root)
    d_e, d_m = jax.jit(jax.grad(lambda e, m: ours(e, m, method).root, argnums=(0, 1)))(e, m)
    np.testing.assert_allclose(d_m, 1 / slope, rtol=1e-10)
    np.testing.assert_allclose(d_e, np.sin(root) / slope, rtol=1e-10)
    # central differences of SciPy's own call, at two steps (their error falls as h²)
    tight = {"xtol": 1e-15} if method in BRACKETING else {"xtol": 1e-15, "maxiter": 100}
    for h in (1e-3, 1e-4):
        up, down = (scipy_root(e, m + s, method, **tight).root for s in (h, -h))
        np.testing.assert_allclose(d_m, (up - down) / (2 * h), rtol=2e-6)
        up, down = (scipy_root(e + s, m, method, **tight).root for s in (h, -h))
        np.testing.assert_allclose(d_e, (up - down) / (2 * h), rtol=2e-6)


@pytest.mark.parametrize("method", ["brentq", "newton"])
def test_root_scalar_second_derivatives_as_closed_forms(method):
    e, m = ECCENTRICITY, MEAN_ANOMALY
    root = float(ours(e, m, method).root)
    s, c = np.sin(root), np.cos(root)
    slope = 1 - e * c
    # differentiate E_M = 1 / (1 - e cos E) and E_e = sin E / (1 - e cos E) again
    d_mm = -e * s / slope**3
    d_me = (c * slope - e * s * s) / slope**3  # ∂/∂M of E_e (= ∂/∂e of E_M)
    d_ee = 2 * c * s / slope**2 - e * s**3 / slope**3
    hess = jax.hessian(lambda p: ours(p[0], p[1], method).root)(jnp.array([e, m]))
    np.testing.assert_allclose(hess[1, 1], d_mm, rtol=1e-9)
    np.testing.assert_allclose(hess[0, 1], d_me, rtol=1e-9)
    np.testing.assert_allclose(hess[1, 0], d_me, rtol=1e-9)
    np.testing.assert_allclose(hess[0, 0], d_ee, rtol=1e-9)
    forward = jax.jacfwd(jax.jacfwd(lambda m: ours(e, m, method).root))(m)
    np.testing.assert_allclose(forward, d_mm, rtol=1e-9)


def test_root_scalar_is_not_differentiable_in_bracket_or_x0_and_runs_under_vmap():
    d_bracket = jax.grad(lambda a: jo.root_scalar(kepler, args=(0.3, 1.2), bracket=(a, 3.0)).root)(
        0.0
    )
    d_x0 = jax.grad(lambda x0: jo.root_scalar(kepler, args=(0.3, 1.2), x0=x0).root)(1.0)
    assert float(d_bracket) == 0.0 and float(d_x0) == 0.0
    anomalies = jnp.array([0.5, 1.2, 2.0])
    got = jax.jit(jax.vmap(lambda m: ours(0.3, m, "brentq").root))(anomalies)
    expected = [scipy_root(0.3, float(m), "brentq").root for m in anomalies]
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    grads = jax.vmap(jax.grad(lambda m: ours(0.3, m, "toms748").root))(anomalies)
    np.testing.assert_allclose(grads, 1 / (1 - 0.3 * np.cos(np.asarray(got))), rtol=1e-10)


@pytest.mark.parametrize(
    "method, power, where",
    [(m, 2, {"x0": 0.5}) for m in FROM_A_START]
    + [(m, 3, {"bracket": (0.3, 3.1)}) for m in ("bisect", "ridder", "toms748")],
)
def test_root_scalar_derivative_at_a_multiple_root_is_refused_by_name_or_nan(method, power, where):
    """At c = 0 the root 2 + c^(1/k) of (x - 2)^k - c is multiple, and has no derivative in
    c. Its value stands; its derivative, the implicit function theorem's 0/0, was returned
    silently (-4.5e7 from newton, 1 / f' at the root's error) and is refused by name now, in
    both modes and under jit, or NaN on request. A simple root of the same f keeps its."""

    def f(x, c):
        return (x - 2) ** power - c

    def root(c, **given):
        return jo.root_scalar(f, args=(c,), method=method, **where, **given).root

    refused = r"root_scalar: the root's derivative is refused at x = .* a multiple root"
    assert abs(float(root(0.0)) - 2) < 1e-7
    assert_derivative_refused(root, refused)
    # at c = 1 the root is simple: 2 - √c from x0 = 0.5 (d/dc = -1/2), 2 + ∛c in the bracket
    expected = -0.5 if power == 2 else 1 / 3
    np.testing.assert_allclose(jax.grad(root)(1.0), expected, rtol=1e-9)


def test_root_scalar_chooses_the_method_as_scipy():
    def called(**where):
        return jo.root_scalar(kepler, args=(0.3, 1.2), **where)

    expected = {
        "brentq": called(bracket=(0.0, 3.0), method="brentq"),
        "secant": called(x0=1.0, x1=1.5, method="secant"),
        "newton": called(x0=1.0, method="newton"),
        "halley": called(x0=1.0, method="halley"),
    }
    chosen = {
        "brentq": called(bracket=(0.0, 3.0)),
        "secant": called(x0=1.0, x1=1.5),
        "newton": called(x0=1.0, fprime=True),
        "halley": called(x0=1.0, fprime=True, fprime2=True),
    }
    for name, result in chosen.items():
        assert int(result.iterations) == int(expected[name].iterations), name
        np.testing.assert_allclose(result.root, expected[name].root, rtol=1e-15)


def test_root_scalar_refuses_bad_input_by_name():
    with pytest.raises(ValueError, match=r"root_scalar: method 'falsi' is not offered"):
        jo.root_scalar(kepler, args=(0.3, 1.2), bracket=(0.0, 3.0), method="falsi")
    with pytest.raises(ValueError, match=r"root_scalar: argument 'bracket' must hold a and b"):
        jax.block_until_ready(jo.root_scalar(kepler, args=(0.3, 1.2), bracket=(2.0, 3.0)).root)
    with pytest.raises(ValueError, match=r"root_scalar: method 'bisect' needs argument 'bracket'"):
        jo.root_scalar(kepler, args=(0.3, 1.2), x0=1.0, method="bisect")
    with pytest.raises(ValueError, match=r"root_scalar: method 'newton' needs argument 'x0'"):
        jo.root_scalar(kepler, args=(0.3, 1.2), bracket=(0.0, 3.0), method="newton")
    with pytest.raises(ValueError, match=r"root_scalar: pass argument 'bracket'"):
        jo.root_scalar(kepler, args=(0.3, 1.2))
    with pytest.raises(TypeError, match=r"root_scalar: argument 'fprime' must be None or True"):
        jo.root_scalar(kepler, args=(0.3, 1.2), x0=1.0, fprime=lambda x, e, m: 1.0)
    with pytest.raises(ValueError, match=r"root_scalar: 'f' must return one real number"):
        jo.root_scalar(lambda x: jnp.stack([x, x]), x0=1.0)


def test_root_scalar_unconverged_is_an_error_or_nan_on_request():
    with pytest.raises(OptimizeError, match=r"root_scalar: SciPy's bisect did not converge"):
        jax.block_until_ready(ours(0.3, 1.2, "bisect", maxiter=3).root)
    got = ours(0.3, 1.2, "bisect", maxiter=3, on_failure="nan")
    assert np.isnan(float(got.root)) and not bool(got.converged) and int(got.flag) == -2
