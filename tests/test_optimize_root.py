"""``Root`` on Kepler's equation against bisection and the closed-form sensitivities, under
every transformation, and its failures."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _optimize_problems import SECOND_ORDER, Kepler, VectorizedKepler, kepler_reference

import jaxbridge as jb
from jaxbridge.adapters.optimize import OptimizeError, Root
from jaxbridge.testing import check_adapter

THETAS = np.array([[0.5, 1.2], [0.1, -0.4], [0.7, 2.5]])  # (e, M)


def _references(thetas):
    return np.array([kepler_reference(*t) for t in thetas])  # rows: E, dE/de, dE/dM


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("residual", [Kepler(), VectorizedKepler()], ids=["loop", "batched"])
def test_kepler_root_and_gradient(dtype, residual):
    root = Root(residual)
    expected = _references(THETAS)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    with jax.enable_x64(dtype == np.float64):
        for theta, (big_e, d_e, d_m) in zip(THETAS, expected):
            x0, t = jnp.asarray([theta[1]], dtype), jnp.asarray(theta, dtype)
            got = jax.jit(root)(x0, t)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, [big_e], rtol=tol)
            g0, gt = jax.grad(lambda x0, t: root(x0, t)[0], (0, 1))(x0, t)
            assert np.all(np.asarray(g0) == 0)  # exactly zero in the start
            np.testing.assert_allclose(gt, [d_e, d_m], rtol=tol * 10)


def test_vmap_jacrev_jvp_and_scan():
    root = Root(Kepler())
    expected = _references(THETAS)
    with jax.enable_x64(True):
        x0s, thetas = jnp.asarray(THETAS[:, 1:]), jnp.asarray(THETAS)
        np.testing.assert_allclose(jax.jit(jax.vmap(root))(x0s, thetas)[:, 0], expected[:, 0])
        jac = jax.vmap(jax.jacrev(root, 1))(x0s, thetas)[:, 0, :]
        np.testing.assert_allclose(jac, expected[:, 1:], rtol=1e-12)
        forward = jax.vmap(jax.jacfwd(root, 1))(x0s, thetas)[:, 0, :]
        np.testing.assert_allclose(forward, expected[:, 1:], rtol=1e-12)
        _, tangent = jax.jvp(lambda t: root(x0s[0], t), (thetas[0],), (jnp.array([1.0, -2.0]),))
        np.testing.assert_allclose(tangent, [expected[0, 1] - 2 * expected[0, 2]], rtol=1e-12)

        def step(carry, theta):
            return carry + root(theta[1:], theta)[0], jax.grad(lambda t: root(t[1:], t)[0])(theta)

        total, grads = jax.jit(lambda ts: jax.lax.scan(step, 0.0, ts))(thetas)
        np.testing.assert_allclose(total, expected[:, 0].sum(), rtol=1e-13)
        # d/dθ of root(M, θ): the start moves with M but contributes nothing
        np.testing.assert_allclose(grads, expected[:, 1:], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_adapter(dtype):
    with jax.enable_x64(dtype == np.float64):
        # second derivatives by differences (D and F'' by two schemes): they agree to 1e-10
        check_adapter(
            Root(Kepler()),
            np.array([1.0], dtype),
            np.array([0.5, 1.2], dtype),
            rtol={"hessian": SECOND_ORDER} if dtype == np.float64 else None,
        )


def test_other_methods_find_the_same_root():
    expected = kepler_reference(0.5, 1.2)
    with jax.enable_x64(True):
        for method in ("lm", "broyden1", "df-sane"):
            root = Root(Kepler(), method=method)
            x = root(jnp.array([1.0]), jnp.array([0.5, 1.2]))
            np.testing.assert_allclose(x, [expected[0]], rtol=1e-14)


# ----------------------------------------------------------------------------- failures


class Parabola(jb.Adapter):
    """``x² - θ``: two roots for θ > 0, none for θ < 0."""

    signature = "(n),(p)->(n)"

    def forward(self, x, theta):
        return x**2 - theta

    def backward(self, res, g):
        x, _, _ = res
        return 2 * x * g, -g


class Doubled(jb.Adapter):
    """``(s, 2 s)`` with ``s = x₀ + x₁ - θ``: a line of roots, a singular Jacobian."""

    signature = "(n),(p)->(n)"

    def forward(self, x, theta):
        s = x[0] + x[1] - theta[0]
        return np.array([s, 2 * s])

    def backward(self, res, g):
        x, theta, _ = res
        total = g[0] + 2 * g[1]
        return np.array([total, total]), np.array([-total])


def test_no_root_raises_with_scipys_status():
    with jax.enable_x64(True):
        with pytest.raises(OptimizeError, match=r"Root\.forward.*hybr.*status \d.*misses"):
            Root(Parabola())(jnp.array([1.0]), jnp.array([-1.0]))


def test_no_convergence_raises():
    with jax.enable_x64(True):
        root = Root(Kepler(), options=(("maxfev", 2),))
        with pytest.raises(OptimizeError, match="reported failure"):
            root(jnp.array([-3.0]), jnp.array([0.7, 2.5]))


def test_singular_jacobian_raises():
    with jax.enable_x64(True):
        with pytest.raises(OptimizeError, match="singular"):
            Root(Doubled())(jnp.array([0.3, 0.1]), jnp.array([1.0]))


def test_nan_per_element_under_vmap_forward_and_backward():
    root = Root(Parabola(), on_failure="nan")
    with jax.enable_x64(True):
        thetas = jnp.array([[1.0], [-1.0], [4.0]])
        x0s = jnp.ones((3, 1))
        np.testing.assert_array_equal(jax.jit(jax.vmap(root))(x0s, thetas)[:, 0], [1, np.nan, 2])
        grads = jax.vmap(jax.grad(lambda x0, t: root(x0, t)[0], 1))(x0s, thetas)[:, 0]
        np.testing.assert_allclose(grads, [0.5, np.nan, 0.25], rtol=1e-12)
        with pytest.raises(jax.errors.JaxRuntimeError, match="misses"):
            jax.jit(jax.vmap(Root(Parabola())))(x0s, thetas).block_until_ready()


def test_non_finite_input_refused_or_nan():
    with jax.enable_x64(True):
        with pytest.raises(OptimizeError, match="argument 'theta' has entries that are NaN or inf"):
            Root(Kepler())(jnp.array([1.0]), jnp.array([0.5, jnp.nan]))
        x = Root(Kepler(), on_failure="nan")(jnp.array([jnp.inf]), jnp.array([0.5, 1.0]))
        assert np.isnan(x).all()


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="'method' must be one of"):
        Root(Kepler(), method="newton")
    with pytest.raises(ValueError, match=r"'residual' \(Parabola2\) must have signature"):

        class Parabola2(Parabola):
            signature = "(n),(p)->()"

        Root(Parabola2())
    with pytest.raises(TypeError, match="must be a jaxbridge.Adapter"):
        Root(np.sin)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'options' must be a tuple"):
        Root(Kepler(), options={"maxfev": 2})  # type: ignore[arg-type]


class HookedKepler(Kepler):
    """With a host ``jacobian`` hook: the backward is then never called for Jacobians."""

    def jacobian(self, x, theta):
        e, m = theta
        return np.array([[1 - e * np.cos(x[0])]]), np.array([[-np.sin(x[0]), -1.0]])

    def backward(self, res, g):
        raise AssertionError("the hook should have been used")


class WrongHook(Kepler):
    def jacobian(self, x, theta):
        return np.ones((2, 2)), np.ones((1, 2))


def test_jacobian_hook_is_used_and_checked():
    expected = kepler_reference(0.5, 1.2)
    with jax.enable_x64(True):
        root = Root(HookedKepler())
        x0, theta = jnp.array([1.0]), jnp.array([0.5, 1.2])
        np.testing.assert_allclose(root(x0, theta), [expected[0]], rtol=1e-14)
        np.testing.assert_allclose(jax.grad(lambda t: root(x0, t)[0])(theta), expected[1:], 1e-12)
        with pytest.raises(ValueError, match=r"WrongHook\.jacobian returned an array of shape"):
            Root(WrongHook())(x0, theta)


def test_a_vmap_makes_one_host_call_in_each_direction():
    """Every batch element is its own solve, but the whole batch crosses to the host once
    for the values, once for the backward and once for the tangents."""
    root = Root(Kepler())
    with jax.enable_x64(True):
        x0s, thetas = jnp.asarray(THETAS[:, 1:]), jnp.asarray(THETAS)

        def callbacks(function):
            text = jax.jit(function).lower(x0s, thetas).as_text()
            assert "stablehlo.while" not in text  # no loop of host calls over the batch
            return len(re.findall(r"custom_call @\w*callback", text))

        solve = jax.vmap(root)
        assert callbacks(solve) == 1
        assert callbacks(jax.grad(lambda x0s, t: solve(x0s, t).sum(), 1)) == 2
        assert callbacks(lambda x0s, t: jax.jvp(lambda t: solve(x0s, t), (t,), (t,))) == 2
