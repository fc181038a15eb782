"""``jaxbridge.adapters.linalg.eig`` / ``eigvals`` / ``Eig``: SciPy's eigenvalues and
normalized right eigenvectors of a general real matrix, and their derivatives against
central differences of SciPy's own ``eig``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from jaxbridge import host_errors
from jaxbridge.adapters.linalg import Eig, SolveFailure, eig, eigvals
from jaxbridge.testing import check_adapter

RNG = np.random.default_rng(1)
GENERAL = RNG.normal(size=(4, 4))  # two real eigenvalues and a complex pair
ROTATION = np.array([[0.0, -2.0, 0.3], [2.0, 0.1, 0.0], [0.2, 0.0, 1.5]])  # a complex pair


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("a", [GENERAL, ROTATION, np.diag([3.0, -1.0, 2.0])])
def test_eig_is_scipy_eig(a):
    w, v = jax.jit(eig)(a)
    expected_w, expected_v = scipy.linalg.eig(a)
    assert w.dtype == np.complex128 and v.dtype == np.complex128
    # SciPy's own numbers; on a TPU, complex128 is two emulated float64 parts (measured
    # 1.8e-15 off there), not IEEE's bits
    rtol = 1e-14 if jax.default_backend() == "tpu" else 0.0
    np.testing.assert_allclose(w, expected_w, rtol=rtol, atol=0)
    np.testing.assert_allclose(v, expected_v, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(jax.jit(eigvals)(a), scipy.linalg.eigvals(a), rtol=rtol, atol=0)


def test_eig_of_integers_and_float32():
    a = np.array([[2, 1], [0, 3]])
    np.testing.assert_allclose(eigvals(a), scipy.linalg.eigvals(a), rtol=1e-15)
    with jax.enable_x64(False):
        w = eigvals(GENERAL.astype(np.float32))
        assert w.dtype == np.complex64
        np.testing.assert_allclose(w, scipy.linalg.eigvals(GENERAL), rtol=1e-6)


def _scipy_parts(a):
    w, v = scipy.linalg.eig(a)
    return w, v


@pytest.mark.parametrize("a", [GENERAL, ROTATION])
def test_eig_jvp_is_scipy_differences(a):
    direction = RNG.normal(size=a.shape)
    (w, v), (dw, dv) = jax.jvp(eig, (jnp.asarray(a),), (jnp.asarray(direction),))
    h = 1e-6
    up, down = _scipy_parts(a + h * direction), _scipy_parts(a - h * direction)
    np.testing.assert_allclose(dw, (up[0] - down[0]) / (2 * h), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(dv, (up[1] - down[1]) / (2 * h), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("a", [GENERAL, ROTATION])
def test_eig_gradient_is_the_transpose_of_its_jvp(a):
    """A real loss of the complex results: its gradient against the jvp along the unit
    directions, which the test above holds to SciPy's differences."""

    def loss(a):
        w, v = eig(a)
        return (
            # |w|² as re² + im²: jnp.abs of complex128 aborts XLA's TPU compiler (jax 0.10.2)
            jnp.sum(jnp.real(w) ** 2 + jnp.imag(w) ** 2)
            + jnp.sum(jnp.real(v) * jnp.arange(v.size).reshape(v.shape))
            + jnp.sum(jnp.imag(v) ** 3)
        )

    gradient = jax.jit(jax.grad(loss))(jnp.asarray(a))
    for i, j in [(0, 0), (1, 2), (2, 1)]:
        e = np.zeros_like(a)
        e[i, j] = 1.0
        along = jax.jvp(loss, (jnp.asarray(a),), (jnp.asarray(e),))[1]
        np.testing.assert_allclose(gradient[i, j], along, rtol=1e-10)


def test_eig_passes_check_adapter():
    check_adapter(Eig(), GENERAL, checks=("grad", "jvp", "transpose", "vmap", "jit"))


def test_eig_derivative_at_a_repeated_eigenvalue_is_refused_by_name_or_nan():
    a = np.diag([1.0, 1.0, 3.0]) + np.triu(np.ones((3, 3)), 1) * 0.0
    np.testing.assert_allclose(eigvals(a), [1, 1, 3])  # the values are SciPy's either way
    with pytest.raises(SolveFailure, match=r"Eig\..*eigenvalues 0 and 1 of 'a' are repeated"):
        with host_errors():
            jax.block_until_ready(
                jax.jit(jax.grad(lambda a: jnp.sum(eigvals(a).real)))(jnp.asarray(a))
            )
    w_re = jax.jvp(lambda a: Eig(on_failure="nan")(a)[0], (jnp.asarray(a),), (jnp.ones((3, 3)),))[1]
    assert np.isnan(np.asarray(w_re)).all()


def test_eig_refuses_what_it_does_not_offer():
    with pytest.raises(ValueError, match=r"eig: the generalized problem"):
        eig(GENERAL, GENERAL)
    with pytest.raises(SolveFailure, match=r"Eig.*'a'"):
        with host_errors():
            jax.block_until_ready(eigvals(np.full((2, 2), np.nan)))


@pytest.mark.parametrize("jitted", [False, True], ids=["eagerly", "under jit"])
@pytest.mark.parametrize("mode", ["jvp", "vjp"])
def test_eig_refuses_a_repeated_eigenvalue_the_same_eagerly_and_under_jit(mode, jitted):
    """#64's eager/jit symmetry for the eigen rules: both modes, both ways, the same
    refusal (the sparse solvers once returned a number under jit that raised eagerly)."""
    a = jnp.asarray(np.diag([1.0, 1.0, 3.0]))

    def derivative(a):
        if mode == "jvp":
            return jax.jvp(lambda a: eigvals(a).real, (a,), (jnp.ones((3, 3)),))[1]
        return jax.grad(lambda a: jnp.sum(eigvals(a).real))(a)

    run = jax.jit(derivative) if jitted else derivative
    with pytest.raises(SolveFailure, match=r"Eig\..*eigenvalues 0 and 1 of 'a' are repeated"):
        with host_errors():
            jax.block_until_ready(run(a))
