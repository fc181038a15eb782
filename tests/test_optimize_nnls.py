"""``Nnls``: SciPy's values; derivatives on the active set against central differences of
``scipy.optimize.nnls`` and a closed form; degenerate solutions refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxbridge import host_errors
from jaxbridge.adapters.optimize import Nnls, OptimizeError
from jaxbridge.testing import check_adapter

RNG = np.random.default_rng(3)
A = RNG.normal(size=(8, 5))
B = RNG.normal(size=8)


def central(fun, args, index, h=1e-6):
    base = np.asarray(args[index], np.float64)
    columns = []
    for i in np.ndindex(base.shape):
        step = np.zeros_like(base)
        step[i] = h
        up, down = list(args), list(args)
        up[index], down[index] = base + step, base - step
        columns.append((np.asarray(fun(*up)) - np.asarray(fun(*down))) / (2 * h))
    return np.stack(columns, -1).reshape(np.shape(fun(*args)) + base.shape)


def test_values_are_scipys_with_zeros_in_the_solution():
    with jax.enable_x64(True):
        x, rnorm = Nnls()(A, B)
    expected = scipy.optimize.nnls(A, B)
    np.testing.assert_array_equal(x, expected[0])
    assert float(rnorm) == expected[1]
    assert 0 < (expected[0] == 0).sum() < 5  # (a problem with an active set to test)


@pytest.mark.parametrize("output", [0, 1], ids=["x", "rnorm"])
@pytest.mark.parametrize("index", [0, 1], ids=["A", "b"])
def test_derivatives_match_central_differences_of_scipy(output, index):
    with jax.enable_x64(True):
        reverse = jax.jacrev(lambda *a: Nnls()(*a)[output], argnums=index)(A, B)
        forward = jax.jacfwd(lambda *a: Nnls()(*a)[output], argnums=index)(A, B)
    expected = central(lambda *a: scipy.optimize.nnls(*a)[output], (A, B), index)
    np.testing.assert_allclose(reverse, expected, atol=1e-8)
    np.testing.assert_allclose(forward, reverse, rtol=1e-12, atol=1e-14)
    assert np.abs(expected).max() > 0.1


def test_closed_form_of_one_positive_entry():
    """``A = [[1, 0], [0, 1], [0, 0]]``, ``b = (2, -1, 3)``: ``x = (2, 0)``, ``r = (0, -1,
    3)``; ``∂x0/∂b0 = 1``, the second entry's multiplier ``1`` keeps it at zero, and
    ``∂rnorm/∂b = r/‖r‖``."""
    a, b = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([2.0, -1.0, 3.0])
    with jax.enable_x64(True):
        x, rnorm = Nnls()(a, b)
        dx = jax.jacrev(lambda b: Nnls()(a, b)[0])(jnp.asarray(b))
        dr = jax.grad(lambda b: Nnls()(a, b)[1])(jnp.asarray(b))
    np.testing.assert_array_equal(x, [2.0, 0.0])
    np.testing.assert_allclose(rnorm, np.sqrt(10.0), rtol=1e-15)
    np.testing.assert_array_equal(dx, [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(dr, np.array([0.0, -1.0, 3.0]) / np.sqrt(10.0), rtol=1e-15)


def test_check_adapter_and_vmap():
    bs = np.stack([B, B + 0.1, -B])
    with jax.enable_x64(True):
        check_adapter(Nnls(), A, B, seed=0, checks=("specs", "jit", "grad", "jvp", "transpose"))
        xs, _ = jax.jit(jax.vmap(Nnls(), (None, 0)))(A, bs)
    for x, b in zip(xs, bs):
        np.testing.assert_array_equal(x, scipy.optimize.nnls(A, b)[0])


def test_a_degenerate_solution_has_no_derivative_and_says_so():
    """``b = (2, 0, 3)``: the second entry is 0 with a zero multiplier."""
    a, b = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([2.0, 0.0, 3.0])
    with jax.enable_x64(True):
        with host_errors(), pytest.raises(OptimizeError, match="Nnls.*degenerate.*zero multiplier"):
            jax.jacrev(lambda b: Nnls()(a, b)[0])(jnp.asarray(b))
        nan = jax.jacrev(lambda b: Nnls(on_failure="nan")(a, b)[0])(jnp.asarray(b))
    assert np.isnan(nan).all()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="Nnls.*'maxiter'"):
        Nnls(maxiter=0)
    with jax.enable_x64(True), pytest.raises(OptimizeError, match="Nnls.*'A'.*non-finite"):
        Nnls()(np.full((3, 2), np.nan), np.ones(3))


def test_no_unknowns_gives_the_norm_of_b_without_calling_scipy():
    """SciPy 1.17's nnls aborts the process ("double free") on an (m, 0) matrix: x is empty
    and rnorm = ‖b‖, whose gradient is b / ‖b‖; with no equations x = 0 and rnorm = 0."""
    with jax.enable_x64(True):
        b = np.array([1.0, -2.0, 2.0])
        x, rnorm = Nnls()(np.zeros((3, 0)), b)
        assert x.shape == (0,) and float(rnorm) == 3.0
        grad = jax.grad(lambda b: Nnls()(np.zeros((3, 0)), b)[1])(jnp.asarray(b))
        np.testing.assert_allclose(grad, b / 3.0, rtol=1e-15)
        x, rnorm = Nnls()(np.zeros((0, 2)), np.zeros(0))
        np.testing.assert_array_equal(x, [0.0, 0.0])
        assert float(rnorm) == 0.0


def test_rnorm_at_an_exact_fit_has_the_subgradient_zero_not_rounding_noise():
    """At b = A x with every entry positive, the residual is rounding: its direction turned
    completely when b moved by one ulp. The documented derivative there is 0; just off the
    fit, it is r / ‖r‖ as SciPy's differences say."""
    with jax.enable_x64(True):
        a = RNG.normal(size=(6, 4))
        fit = a @ np.array([1.0, 2.0, 0.5, 3.0])
        for b in (fit, np.nextafter(fit, np.inf)):
            grad = jax.grad(lambda b: Nnls()(a, b)[1])(jnp.asarray(b))
            np.testing.assert_array_equal(grad, np.zeros(6))
            tangent = jax.jvp(lambda b: Nnls()(a, b)[1], (jnp.asarray(b),), (jnp.ones(6),))[1]
            assert float(tangent) == 0.0
        off = fit + 1e-3 * RNG.normal(size=6)
        grad = jax.grad(lambda b: Nnls()(a, b)[1])(jnp.asarray(off))
        expected = central(lambda a, b: scipy.optimize.nnls(a, b)[1], (a, off), 1)
        np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)


def test_a_multiplier_is_judged_against_its_own_terms_not_the_whole_residual():
    """x1 = 0 held by a multiplier of -1e-3 while the residual is 1e7 in a row column 1 does
    not touch: ‖A_1‖ ‖r‖ = 1e7 read the multiplier as zero and refused a clean point
    (#54's search). SciPy's differences: x follows b[0] alone."""
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    b = np.array([1.0, -1e-3, 1e7])
    with jax.enable_x64(True):
        reverse = jax.jacrev(lambda b: Nnls()(a, b)[0])(b)
        forward = jax.jacfwd(lambda b: Nnls()(a, b)[0])(b)
    expected = central(lambda a, b: scipy.optimize.nnls(a, b)[0], (a, b), 1, h=1e-5)
    np.testing.assert_allclose(expected, [[1, 0, 0], [0, 0, 0]], atol=1e-9)
    np.testing.assert_allclose(reverse, expected, atol=1e-9)
    np.testing.assert_allclose(forward, expected, atol=1e-9)


@pytest.mark.parametrize("relative", [1e-8, 1e-4])
def test_rnorms_gradient_in_b_is_the_unit_residual_when_the_fit_is_nearly_exact(relative):
    """A small but real residual (relative 1e-8): d rnorm / d b = r / |r|, with r = b - A x,
    for x in the interior of the positive cone (only exact fits were tested, where the
    residual's direction is undefined)."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((6, 3))
    x = np.array([1.0, 2.0, 0.5])  # all positive: the free set is every unknown
    q, _ = np.linalg.qr(a, mode="complete")
    off = q[:, 3] * relative * np.linalg.norm(a @ x)  # orthogonal to A's range
    b = a @ x + off
    with jax.enable_x64(True):
        got = jax.grad(lambda b: Nnls()(a, b)[1])(b)
        got_jit = jax.jit(jax.grad(lambda b: Nnls()(a, b)[1]))(b)
    unit = off / np.linalg.norm(off)  # the residual's direction, by construction
    np.testing.assert_allclose(got, unit, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got_jit, unit, rtol=1e-6, atol=1e-9)
