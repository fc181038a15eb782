"""``OperatorEigsh``: a matrix-free chain of springs (``tests/_chain.py``) against dense
``numpy.linalg.eigh`` of the same operator, derivatives in ``theta`` (both modes, second
order) against float64 central differences, shift-invert, and errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _chain import Chain

import jaxbridge as jb
from jaxbridge.adapters import Doubling
from jaxbridge.adapters.sparse import OperatorEigsh


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


N = 40
CHAIN = Chain(N)
THETA = 1 + 0.5 * np.random.default_rng(0).uniform(size=N + 1)
LOWEST = float(np.linalg.eigvalsh(CHAIN.dense(THETA))[0])


def _dense_pairs(theta, select):
    w, v = np.linalg.eigh(CHAIN.dense(theta))
    w, v = w[select], v[:, select]
    return w, v * np.sign(v[np.argmax(np.abs(v), axis=0), np.arange(v.shape[1])])


def _central(f, x, direction, h=1e-5):
    d1 = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
    d2 = (f(x + 2 * h * direction) - f(x - 2 * h * direction)) / (4 * h)
    return (4 * d1 - d2) / 3


@pytest.mark.parametrize(
    ("which", "sigma", "select"),
    [("SA", None, slice(0, 3)), ("LA", None, slice(-3, None)), ("LM", 0.0, slice(0, 3))],
)
def test_values_match_dense_eigh(which, sigma, select):
    w, v = OperatorEigsh(CHAIN, k=3, which=which, sigma=sigma)(THETA)
    w_ref, v_ref = _dense_pairs(THETA, select)
    np.testing.assert_allclose(w, w_ref, rtol=1e-10)
    np.testing.assert_allclose(v, v_ref, atol=1e-8)


def test_derivatives_match_dense_central_differences():
    eigsh = OperatorEigsh(CHAIN, k=3, which="SA")
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((N, 3))

    def f(w, v):
        return jnp.sum(w**2) + jnp.sum(weights * v)

    direction = rng.standard_normal(N + 1)
    expected = _central(lambda th: f(*_dense_pairs(th, slice(0, 3))), THETA, direction)
    g = jax.jit(jax.grad(lambda th: f(*eigsh(th))))(THETA)
    np.testing.assert_allclose(g @ direction, expected, rtol=1e-7)
    _, tangent = jax.jvp(lambda th: f(*eigsh(th)), (THETA,), (direction,))
    np.testing.assert_allclose(tangent, expected, rtol=1e-7)


def test_eigenvalue_gradient_is_hellmann_feynman():
    """``dw_i / d theta_j = (v_i[j - 1] - v_i[j])²``: spring ``j``'s energy in mode ``i``."""
    eigsh = OperatorEigsh(CHAIN, k=2, which="SA")
    jacobian = jax.jacrev(lambda th: eigsh(th)[0])(THETA)
    _, v = _dense_pairs(THETA, slice(0, 2))
    padded = np.pad(v.T, [(0, 0), (1, 1)])
    np.testing.assert_allclose(jacobian, (padded[:, :-1] - padded[:, 1:]) ** 2, atol=1e-12)


@pytest.mark.slow
def test_second_derivative_of_eigenvalues():
    eigsh = OperatorEigsh(CHAIN, k=2, which="SA")
    gradient = jax.grad(lambda th: jnp.sum(eigsh(th)[0] ** 2))
    direction = np.random.default_rng(2).standard_normal(N + 1)
    expected = _central(lambda th: np.asarray(gradient(th)), THETA, direction, h=1e-4)
    np.testing.assert_allclose(
        jax.jacfwd(gradient)(THETA) @ direction, expected, atol=1e-6 * np.abs(expected).max()
    )


def test_repeated_eigenvalues_refuse_the_eigenvector_derivative():
    """Two identical chains side by side: every eigenvalue is double."""
    eigsh = OperatorEigsh(_Twice(2 * N), k=2, which="SA")
    with pytest.raises(Exception, match=r"OperatorEigsh: eigenvalues 0 and 1 .* apart"):
        jax.grad(lambda th: eigsh(th)[1][0, 0])(THETA)
    assert np.isfinite(jax.grad(lambda th: jnp.sum(eigsh(th)[0]))(THETA)).all()


@pytest.mark.parametrize("gap", [0.0, 1e-12])
def test_a_twin_not_returned_is_refused_too(gap):
    """The lowest eigenvalue's twin ``gap`` (relative) above it, not among the ``k=1``
    returned: the vector's derivative is refused as a returned twin's would be, or NaN."""
    eigsh = OperatorEigsh(_Twice(2 * N, gap), k=1, which="SA")
    with pytest.raises(
        np.linalg.LinAlgError,
        match=r"OperatorEigsh: eigenvalues 0 \(.*\) and one not returned are at most .* apart",
    ):
        jax.grad(lambda th: eigsh(th)[1][0, 0])(THETA)
    nan = OperatorEigsh(_Twice(2 * N, gap), k=1, which="SA", on_failure="nan")
    assert np.isnan(jax.grad(lambda th: nan(th)[1][0, 0])(THETA)).all()


def test_eigenvalue_tangents_at_a_repeated_eigenvalue():
    """Every eigenvalue double: ``jvp`` computes both outputs' tangents, used or not, so the
    vectors' are NaN (not an error, which would stop the eigenvalues'), eagerly and under
    jit; the sum of the two lowest eigenvalues, twice the chain's lowest, has the tangent of
    Hellmann-Feynman on the dense chain: ``2 Σ_j (v[j - 1] - v[j])² dtheta_j``."""
    eigsh = OperatorEigsh(_Twice(2 * N), k=2, which="SA")
    direction = np.random.default_rng(3).standard_normal(N + 1)
    _, v = _dense_pairs(THETA, slice(0, 1))
    expected = 2 * np.diff(np.pad(v[:, 0], 1)) ** 2 @ direction

    def jvp(th, t):
        return jax.jvp(eigsh, (th,), (t,))[1]

    for dw, dv in (jvp(THETA, direction), jax.jit(jvp)(THETA, direction)):
        assert np.isnan(dv).all()
        np.testing.assert_allclose(jnp.sum(dw), expected, rtol=1e-10)


class _Twice(jb.Adapter):
    """Two copies of ``CHAIN``, uncoupled, the second's on-site term raised by ``gap`` times
    the chain's lowest eigenvalue at ``THETA``; rules in JAX (linear in ``x`` and ``theta``)."""

    n: int
    gap: float = 0.0

    signature = "(n),(p)->(n)"

    def forward(self, x, theta):
        return self._halves(CHAIN.forward, np, x, theta)

    def _halves(self, chain, xp, x, theta):
        first, second = x[..., :N], x[..., N:]
        shift = self.gap * LOWEST
        return xp.concatenate([chain(first, theta), chain(second, theta) + shift * second], -1)

    def pushforward(self, res, tangents):
        x, theta, _ = res
        tangents = [jnp.zeros_like(p) if t is None else t for p, t in zip((x, theta), tangents)]
        return jax.jvp(functools.partial(self._halves, CHAIN, jnp), (x, theta), tuple(tangents))[1]

    def pullback(self, res, g):
        x, theta, _ = res
        return jax.vjp(functools.partial(self._halves, CHAIN, jnp), x, theta)[1](g)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"matvec": CHAIN, "k": 40}, r"OperatorEigsh: parameter 'k' must satisfy 1 <= k < n = 40"),
        ({"matvec": CHAIN, "which": "XX"}, r"OperatorEigsh: parameter 'which'"),
        (
            {"matvec": Doubling()},
            r"OperatorEigsh: parameter 'matvec' must be an adapter with signature",
        ),
        (
            {"matvec": _Twice(3), "n": 1},
            r"OperatorEigsh: the operator's size must be an int n >= 2",
        ),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OperatorEigsh(**kwargs)


def test_zero_operator_is_a_clear_failure():
    """Springs of stiffness 0 (and no on-site term): the operator is zero, so ARPACK cannot
    start; the error says so and names the arguments (NaN on request)."""
    zero = np.zeros(N + 1)
    with pytest.raises(
        np.linalg.LinAlgError,
        match=r"OperatorEigsh.forward .*the operator is zero, .*ARPACK error -9.*'matvec'",
    ):
        OperatorEigsh(CHAIN, k=2)(zero)
    w, v = OperatorEigsh(CHAIN, k=2, on_failure="nan")(zero)
    assert w.shape == (2,) and v.shape == (N, 2)
    assert np.isnan(w).all() and np.isnan(v).all()
