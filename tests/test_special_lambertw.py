"""The ``lambertw`` adapter: values against mpmath, derivatives of orders 1 to 3 against
mpmath.diff, the branch point and below it, and ``check_adapter``."""

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
from _special_references import EPS, mp_derivative, mp_float

from jaxbridge.adapters.special import LambertW, lambertw
from jaxbridge.testing import check_adapter

X = np.array([-0.36, -0.3, -0.1, 1e-5, 0.5, 1.0, 10.0, 1e5, 1e300])


def test_values_match_mpmath():
    """Within 2 ulps of mpmath's principal branch (measured: 1.3 ulps at x = -0.36, near the
    branch point; 0 elsewhere)."""
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(lambertw)(X))
    expected = [mp_float(mpmath.lambertw(x)) for x in X]
    np.testing.assert_allclose(got, expected, rtol=2 * EPS, atol=0)
    with jax.enable_x64(True):
        assert lambertw(0.0) == 0 and lambertw(np.inf) == np.inf
        assert lambertw(jnp.float32(1.0)).dtype == jnp.float32


def test_integer_inputs_give_floating_values():
    got = jax.jit(lambertw)(np.arange(3))
    assert jnp.issubdtype(got.dtype, jnp.floating)
    expected = [mp_float(mpmath.lambertw(x)) for x in range(3)]
    np.testing.assert_allclose(got, expected, rtol=2 * float(jnp.finfo(got.dtype).eps))


def test_below_the_branch_point_is_nan():
    """The principal branch is complex below -1/e, where SciPy returns a complex number:
    this adapter gives NaN there (never a complex result)."""
    with jax.enable_x64(True):
        got = lambertw(np.array([-1.0, -0.37, np.nan]))
    assert np.all(np.isnan(got))
    assert got.dtype == jnp.float64


def test_values_and_derivatives_just_above_the_branch_point():
    """From one ulp above -1/e to 1e-5 above: W to 1e-15 of 1 + W and W' to 1e-8 relative
    against mpmath (SciPy's W was 4e-9 off one ulp above, and W' 20%); at the double
    nearest -1/e (just below it), W = -1."""
    inverse_e = np.exp(-1.0)
    x = np.array([np.nextafter(-inverse_e, 0.0), -inverse_e + 1e-14, -inverse_e + 1e-10])
    x = np.append(x, [-inverse_e + 1e-7, -inverse_e + 1e-5])
    with jax.enable_x64(True):
        w = np.asarray(lambertw(x))
        slope = np.asarray(jax.vmap(jax.grad(lambertw))(x))
        assert lambertw(-inverse_e) == -1.0
    with mpmath.workdps(40):
        exact = [mpmath.lambertw(mpmath.mpf(t)) for t in x]
        one_plus = np.array([mp_float(1 + v) for v in exact])
        slopes = [mp_float(mpmath.exp(-v) / (1 + v)) for v in exact]
    np.testing.assert_allclose(1 + w, one_plus, rtol=0, atol=2.3e-16)  # 2 ulps of W near -1
    np.testing.assert_allclose(slope, slopes, rtol=1e-8)


def test_derivatives_match_mpmath():
    """W', W'', W''' by grad, grad of grad, jacfwd of jacfwd, hessian and a third order mix,
    under jit and vmap, against mpmath.diff at 30 digits; W'(0) = 1 exactly."""
    x = X[1:-1]  # the derivatives of W near the branch point and at 1e300 are extreme
    d1 = jax.grad(lambertw)
    fns = (d1, jax.grad(d1), jax.jacfwd(jax.jacfwd(lambertw)), jax.hessian(lambertw))
    d3 = jax.jacfwd(jax.grad(d1))
    with jax.enable_x64(True):
        got = jax.jit(jax.vmap(lambda t: [f(t) for f in (*fns, d3)]))(x)
        assert d1(0.0) == 1.0
    for i, n in enumerate((1, 2, 2, 2, 3)):
        expected = [mp_derivative(mpmath.lambertw, t, n) for t in x]
        np.testing.assert_allclose(got[i], expected, rtol=1e-14, atol=0, err_msg=f"{n}")


def test_check_adapter():
    with jax.enable_x64(True):
        check_adapter(LambertW(), np.array([-0.2, 0.0, 3.0]))
    check_adapter(lambertw, np.array([-0.1, 2.0], np.float32))
