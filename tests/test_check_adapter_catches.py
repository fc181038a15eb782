"""``check_adapter`` fails on deliberately broken adapters, saying which check failed, where
and by how much, and passes on correct adapters of every kind of contract: host or JAX rules,
reverse mode only or both modes, ``linear_in``. Also runs the snippets of the documentation's
page "Testing adapters" (docs/testing.md), so that they cannot rot."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st

import jaxbridge as jb
from jaxbridge.adapters import Linear
from jaxbridge.testing import check_adapter, inputs

RNG = np.random.default_rng(0)


def _normal(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return RNG.normal(size=shape).astype(dtype)


def _failure(adapter: jb.Adapter, *args: np.ndarray, **options) -> str:
    with pytest.raises(AssertionError) as caught:
        check_adapter(adapter, *args, **options)
    return str(caught.value)


def _off_by(message: str) -> float:
    """The relative error a failure message reports."""
    found = re.search(r"off by ([0-9.e+-]+) of that magnitude", message)
    assert found, message
    return float(found.group(1))


# --- correct adapters, each a different kind of contract


class Cube(jb.Adapter):
    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return x**3

    def backward(self, res, g):
        x, _ = res
        return (3 * x**2 * g,)


class SeedLinear(jb.Adapter):
    """``x @ w + b`` with the seed article's host rules: the backward dx = g wᵀ, dw = xᵀ g,
    db = sum g, and its forward-mode twin."""

    signature = "(k,n),(n,m),(m)->(k,m)"
    vectorized = True

    def forward(self, x, w, b):
        return x @ w + b[..., None, :]

    def backward(self, res, g):
        x, w, _, _ = res
        return g @ np.swapaxes(w, -1, -2), np.swapaxes(x, -1, -2) @ g, g.sum(axis=-2)

    def jvp(self, res, tangents):
        x, w, _, out = res
        dx, dw, db = tangents
        terms = [
            np.zeros_like(out),
            0 if dx is None else dx @ w,
            0 if dw is None else x @ dw,
            0 if db is None else db[..., None, :],
        ]
        return sum(terms[1:], terms[0])


class MatVec(jb.Adapter):
    """``a @ x``, one matrix at a time (not vectorized), with a host jvp."""

    signature = "(m,n),(n)->(m)"

    def forward(self, a, x):
        return a @ x

    def backward(self, res, g):
        a, x, _ = res
        return np.outer(g, x), a.T @ g

    def jvp(self, res, tangents):
        a, x, _ = res
        da, dx = tangents
        return (0 if da is None else da @ x) + (0 if dx is None else a @ dx)


class Solve(jb.Adapter):
    """``a⁻¹ b`` with a residual: the LU factors, reused by the backward."""

    signature = "(n,n),(n)->(n)"
    domains = {"a": "well_conditioned"}

    def residual_specs(self, a, b):
        return jax.ShapeDtypeStruct(a.shape, a.dtype), jax.ShapeDtypeStruct(b.shape, np.int32)

    def forward(self, a, b):
        lu, piv = scipy.linalg.lu_factor(a)
        return scipy.linalg.lu_solve((lu, piv), b), lu, piv.astype(np.int32)

    def backward(self, res, g):
        _, _, x, lu, piv = res
        lam = scipy.linalg.lu_solve((lu, piv), g, trans=1)
        return -np.outer(lam, x), lam


class InverseQuadratic(jb.Adapter):
    """``xᵀ a⁻¹ x`` for symmetric positive definite ``a``, reading only its lower triangle:
    right only for symmetric perturbations of ``a``, as its domain says."""

    signature = "(n,n),(n)->()"
    domains = {"a": "spd"}

    def forward(self, a, x):
        return x @ scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=True), x)

    def backward(self, res, g):
        a, x, _ = res
        y = scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=True), x)
        return -g * np.outer(y, y), 2 * g * y

    def jvp(self, res, tangents):  # right for symmetric da only, which the domain promises
        a, x, _ = res
        da, dx = tangents
        y = scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=True), x)
        return (0 if da is None else -y @ da @ y) + (0 if dx is None else 2 * y @ dx)


class Log(jb.Adapter):
    signature = "()->()"
    vectorized = True
    domains = {"x": "positive"}

    def forward(self, x):
        return np.log(x)

    def backward(self, res, g):
        x, _ = res
        return (g / x,)


class Power(jb.Adapter):
    """``x ** k`` with an integer exponent: an argument without a gradient."""

    signature = "(),()->()"
    vectorized = True
    domains = {"k": "integer"}

    def forward(self, x, k):
        return (x**k).astype(x.dtype)  # float32 ** int32 is float64 in NumPy

    def backward(self, res, g):
        x, k, _ = res
        return (g * k * x ** np.maximum(k - 1, 0)).astype(x.dtype), None

    def jvp(self, res, tangents):
        x, k, _ = res
        dx, dk = tangents
        assert dk is None  # an integer argument has no tangent
        return (dx * k * x ** np.maximum(k - 1, 0)).astype(x.dtype)


class Moments(jb.Adapter):
    """The first ``order`` moments: an output sized by a parameter, through output_specs."""

    order: int = 3

    signature = "(n)->(k)"

    def output_specs(self, x):
        return jax.ShapeDtypeStruct((self.order,), x.dtype)

    def forward(self, x):
        return np.stack([np.mean(x**p) for p in range(1, self.order + 1)]).astype(x.dtype)

    def backward(self, res, g):
        x, _ = res
        return (sum(g[p - 1] * p * x ** (p - 1) for p in range(1, self.order + 1)) / x.size,)


class MaxAndArgmax(jb.Adapter):
    """Two outputs, one of them integer (no cotangent flows into it)."""

    signature = "(n)->(),()"

    def output_specs(self, x):
        return jax.ShapeDtypeStruct((), x.dtype), jax.ShapeDtypeStruct((), np.int32)

    def forward(self, x):
        i = np.argmax(x)
        return x[i], np.int32(i)

    def backward(self, res, g):
        x, _, i = res
        dx = np.zeros_like(x)
        dx[i] = g[0]
        return (dx,)

    def jvp(self, res, tangents):
        _, _, i = res
        (dx,) = tangents
        return dx[i], None  # no tangent for the integer output


class Halving(jb.Adapter):
    """A backward written in JAX (``pullback``), not on the host; no forward-mode rule."""

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return x / 2

    def pullback(self, res, g):
        return (g / 2,)


class Axpy(jb.Adapter):
    """``a x + y``: linear in ``x`` and ``y`` together, not in ``a``."""

    signature = "(),(n),(n)->(n)"
    vectorized = True
    linear_in = ("x", "y")

    def forward(self, a, x, y):
        return a[..., None] * x + y

    def backward(self, res, g):
        a, x, _, _ = res
        return np.sum(g * x, axis=-1), a[..., None] * g, g

    def jvp(self, res, tangents):
        a, x, _, _ = res
        da, dx, dy = tangents
        terms = [
            t
            for t in (
                None if da is None else da[..., None] * x,
                None if dx is None else a[..., None] * dx,
                dy,
            )
            if t is not None
        ]
        return sum(terms[1:], terms[0]) if terms else None


class Scaling(jb.Adapter):
    """``3 x``, linear in its only argument: ``forward`` is its own forward-mode rule."""

    signature = "(n)->(n)"
    vectorized = True
    linear_in = ("x",)

    def forward(self, x):
        return 3 * x

    def backward(self, res, g):
        return (3 * g,)


class Softplus(jb.Adapter):
    """``log(1 + exp(x))`` with both rules in JAX (the slope ``sigmoid(x)``, from the input
    in ``res``), so that they differentiate again."""

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return np.logaddexp(0, x)

    def pushforward(self, res, tangents):
        (dx,) = tangents
        return dx * _softplus_slope(res)

    def pullback(self, res, g):
        return (g * _softplus_slope(res),)


def _softplus_slope(res):
    x, _ = res
    return jax.nn.sigmoid(x)


CORRECT = [
    (Cube(), (_normal(4),)),
    (Cube(), (_normal(),)),
    (MatVec(), (_normal(2, 3), _normal(3))),
    (Solve(), (np.eye(3, dtype=np.float32) + 0.3 * _normal(3, 3), _normal(3))),
    (InverseQuadratic(), (np.array([[2.0, 0.5], [0.5, 1.0]], np.float32), _normal(2))),
    (Log(), (np.array([0.5, 1.0, 3.0], np.float32),)),
    (Power(), (_normal(3), np.array([0, 1, 3], np.int32))),
    (Moments(order=4), (_normal(5),)),
    (MaxAndArgmax(), (np.array([0.5, 2.0, -1.0], np.float32),)),
    (Halving(), (_normal(2, 3),)),
    (SeedLinear(), (_normal(2, 2, 3), _normal(3, 4), _normal(4))),  # with a batch axis
    (Linear(), (_normal(2, 2, 3), _normal(3, 4), _normal(4))),  # rules in JAX
    (Axpy(), (_normal(2), _normal(2, 3), _normal(3))),
    (Scaling(), (_normal(4),)),
    (Softplus(), (_normal(3),)),
]


@pytest.mark.slow
@pytest.mark.parametrize("adapter,args", CORRECT, ids=[type(a).__name__ for a, _ in CORRECT])
def test_passes_on_correct_adapters(adapter, args):
    check_adapter(adapter, *args)


def test_passes_in_float64():
    with jax.enable_x64(True):
        check_adapter(Solve(), np.eye(3) + 0.3 * RNG.normal(size=(3, 3)), RNG.normal(size=3))


@pytest.mark.slow
@pytest.mark.parametrize("adapter", [Power(), Moments(), InverseQuadratic(), Log()], ids=repr)
@given(data=st.data())
def test_passes_on_drawn_inputs(adapter, input_limits, data):
    batch = st.sampled_from(input_limits.batches)
    args = data.draw(inputs(adapter, batch=batch, max_size=input_limits.max_size), label="args")
    check_adapter(adapter, *args)


# --- broken adapters: one mistake each


class LinearOnePercentOff(SeedLinear):
    def backward(self, res, g):
        dx, dw, db = super().backward(res, g)
        return dx, 1.01 * dw, db


def test_catches_a_backward_one_percent_off():
    message = _failure(LinearOnePercentOff(), _normal(2, 3), _normal(3, 2), _normal(2))
    assert "the 'grad' check failed" in message
    assert "the gradient of argument 'w'" in message
    assert 0.005 < _off_by(message) < 0.011  # the 1% shows, as a share of the largest entry


class LinearSlightlyOff(SeedLinear):
    """A backward 2e-5 off in ``w``: what a solver's derivative accurate to its tolerance
    looks like (the jvp stays exact, so the two rules disagree by as much)."""

    def backward(self, res, g):
        dx, dw, db = super().backward(res, g)
        return dx, (1 + 2e-5) * dw, db


def test_tolerances_per_check():
    args = (
        _normal(2, 3, dtype=np.float64),
        _normal(3, 2, dtype=np.float64),
        _normal(2, dtype=np.float64),
    )
    with jax.enable_x64(True):
        # by default the gradient must be good to 1e-6 against finite differences
        assert "the 'grad' check failed" in _failure(LinearSlightlyOff(), *args)
        # loosened for "grad" alone, the rules' identity (at rounding) still catches it
        message = _failure(LinearSlightlyOff(), *args, rtol={"grad": 1e-4})
        assert "the 'transpose' check failed" in message
        # loosened for the derivatives' checks, it passes; one number loosens every check
        check_adapter(LinearSlightlyOff(), *args, rtol={"grad": 1e-4, "transpose": 1e-4})
        check_adapter(LinearSlightlyOff(), *args, rtol=1e-4)
    with pytest.raises(ValueError, match=r"`rtol` names unknown checks \['gradient'\]"):
        check_adapter(Cube(), _normal(3), rtol={"gradient": 1e-3})
    with pytest.raises(ValueError, match="`atol` for 'grad' must be a number >= 0"):
        check_adapter(Cube(), _normal(3), atol={"grad": -1.0})


class MatVecTransposed(MatVec):
    def backward(self, res, g):
        a, x, _ = res
        return np.outer(g, x), a @ g  # should be a.T @ g


def test_catches_a_transposed_matrix():
    message = _failure(MatVecTransposed(), _normal(3, 3), _normal(3))
    assert "the 'grad' check failed" in message
    assert "the gradient of argument 'x'" in message
    assert _off_by(message) > 0.05


class LinearJvpOnePercentOff(SeedLinear):
    def jvp(self, res, tangents):
        x, w, b, _ = res
        dx, dw, db = tangents
        right = super().jvp(res, (dx, None, db))
        return right if dw is None else right + 1.01 * (x @ dw)


class LinearJvpIgnoresB(SeedLinear):
    def jvp(self, res, tangents):
        dx, dw, _ = tangents  # the tangent of b is dropped
        return super().jvp(res, (dx, dw, None))


@pytest.mark.slow
def test_catches_a_jvp_one_percent_off():
    message = _failure(LinearJvpOnePercentOff(), _normal(2, 3), _normal(3, 2), _normal(2))
    assert "the 'jvp' check failed" in message
    assert "the tangent of output 0 along argument 'w'" in message
    assert 0.003 < _off_by(message) < 0.011


@pytest.mark.slow
def test_catches_a_jvp_that_ignores_a_tangent():
    message = _failure(LinearJvpIgnoresB(), _normal(2, 3), _normal(3, 2), _normal(2))
    assert "the 'jvp' check failed" in message
    assert "the tangent of output 0 along argument 'b'" in message
    assert _off_by(message) > 0.5  # the whole tangent is missing


class MatVecJvpTransposed(MatVec):
    def jvp(self, res, tangents):
        a, x, _ = res
        da, dx = tangents
        return (0 if da is None else da @ x) + (0 if dx is None else a.T @ dx)  # not a @ dx


@pytest.mark.slow
def test_catches_a_transposed_jvp():
    args = (_normal(3, 3), _normal(3))
    message = _failure(MatVecJvpTransposed(), *args)
    assert "the 'jvp' check failed" in message
    assert "along argument 'x'" in message
    assert _off_by(message) > 0.05
    # the transpose check alone catches it too, without finite differences
    message = _failure(MatVecJvpTransposed(), *args, checks=("transpose",))
    assert "the 'transpose' check failed" in message
    assert "along argument 'x', <g, J t> is" in message


class AffineDeclaredLinear(jb.Adapter):
    """``2 x + b``, declared linear in ``x``: it is affine in ``x`` for ``b`` fixed."""

    signature = "(n),(n)->(n)"
    vectorized = True
    linear_in = ("x",)

    def forward(self, x, b):
        return 2 * x + b

    def backward(self, res, g):
        return 2 * g, g


class SolveDeclaredLinearInA(Solve):
    linear_in = ("a",)  # should be ("b",)


class ProductDeclaredLinear(jb.Adapter):
    """``x y``, linear in ``x`` and in ``y`` but not in both together, as declared."""

    signature = "(),()->()"
    vectorized = True
    linear_in = ("x", "y")

    def forward(self, x, y):
        return x * y

    def backward(self, res, g):
        x, y, _ = res
        return g * y, g * x


@pytest.mark.parametrize(
    "adapter,args,which",
    [
        (AffineDeclaredLinear(), (_normal(3), _normal(3)), "argument 'x'"),
        (
            SolveDeclaredLinearInA(),
            (np.eye(3, dtype=np.float32) + 0.3 * _normal(3, 3), _normal(3)),
            "argument 'a'",
        ),
        (ProductDeclaredLinear(), (_normal(3), _normal(3)), "arguments 'x' and 'y' together"),
    ],
    ids=["affine", "solve-in-a", "product"],
)
def test_catches_a_wrong_linear_in(adapter, args, which):
    message = _failure(adapter, *args)
    assert "the 'linear_transpose' check failed" in message
    assert f"forward is not linear in {which}, as linear_in = " in message
    assert _off_by(message) > 0.05


_WEIGHTS = np.array([1.0, -2.0, 3.0, 0.5])


class WeightedSum(jb.Adapter):
    """``x · w``, linear in ``x``, drawn as the raw draws in [-1, 1]: with seed 37940 the
    linearity check's ``0.5 f(u) + 1.5 f(v)`` is -2.8e-4 from terms of 4.6 in all."""

    signature = "(n)->()"
    linear_in = ("x",)
    domains = {"x": lambda raw: raw}

    def forward(self, x):
        return x @ _WEIGHTS

    def backward(self, res, g):
        return (g[..., None] * _WEIGHTS,)


class ScaleWithoutBackward(jb.Adapter):
    """``x s``, declared linear in ``x``, with no reverse-mode rule: ``jax.linear_transpose``
    and ``jax.grad`` raise "defines no `backward`"."""

    signature = "(n),()->(n)"
    vectorized = True
    linear_in = ("x",)

    def forward(self, x, s):
        return x * s[..., None]


class DoublingWithoutBackward(jb.Adapter):
    """``2 x``, linear in all it takes: forward mode from ``forward``, no reverse mode."""

    signature = "()->()"
    vectorized = True
    linear_in = ("x",)

    def forward(self, x):
        return 2 * x


@pytest.mark.parametrize(
    "adapter,args",
    [
        (ScaleWithoutBackward(), (_normal(3), np.float32(2.0))),
        (DoublingWithoutBackward(), (_normal(3),)),
    ],
    ids=["linear-in-some", "linear-in-all"],
)
def test_linear_in_without_a_reverse_mode_rule_fails_as_transpose_and_grad_do(adapter, args):
    """Once passed quietly, while ``jax.linear_transpose`` (which ``linear_in`` offers) and
    ``jax.grad`` raised."""
    name = type(adapter).__name__
    x = jnp.asarray(args[0])
    with pytest.raises(NotImplementedError, match="defines no `backward`"):
        jax.linear_transpose(lambda x: adapter(x, *args[1:]), x)(x)
    message = _failure(adapter, *args)
    assert "the 'linear_transpose' check failed" in message
    assert f"but {name} has none: jax.linear_transpose, jax.grad" in message
    assert "Define `backward`" in message


def test_linearity_is_judged_on_the_terms_not_their_cancelled_sum():
    """Both sides of the linearity check round at the size of ``f(u)`` and ``f(v)`` (6e-16
    here); their sum may cancel far below that, and is no measure of that rounding."""
    with jax.enable_x64(True):
        check_adapter(WeightedSum(), np.zeros(4), seed=37940, checks=("linear_transpose",))


class SoftplusSlopeFromOutput(Softplus):
    """The slope as ``1 - exp(-y)`` from the saved output ``y``: right, but the output is a
    residual-like constant of the rules, so their own derivatives lose a term."""

    def pushforward(self, res, tangents):
        (dx,) = tangents
        return dx * _slope_from_output(res)

    def pullback(self, res, g):
        return (g * _slope_from_output(res),)


def _slope_from_output(res):
    _, y = res
    return 1 - jnp.exp(-jax.lax.stop_gradient(y))  # stop_gradient: as a saved residual is


@pytest.mark.slow
def test_catches_rules_whose_own_derivatives_are_wrong():
    x = _normal(3)
    check_adapter(SoftplusSlopeFromOutput(), x, checks=("grad", "jvp", "transpose"))
    message = _failure(SoftplusSlopeFromOutput(), x)
    assert "the 'hessian' check failed" in message
    assert "the Hessian-vector product's entries for argument 'x'" in message
    assert "by central differences of the gradient" in message
    assert _off_by(message) > 0.1


class XSinX(jb.Adapter):
    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return x * np.sin(x)

    def backward(self, res, g):
        x, _ = res
        return (g * np.sin(x),)  # the product rule's second term, x cos x, is missing


class Product(jb.Adapter):
    signature = "(),()->()"
    vectorized = True

    def forward(self, x, y):
        return x * y

    def backward(self, res, g):
        x, y, _ = res
        return g * y, None  # the cotangent of y is missing


@pytest.mark.parametrize(
    "adapter,args,argument",
    [
        (XSinX(), (np.array([0.5, 1.0, -2.0], np.float32),), "x"),
        (Product(), (np.array([0.5, 1.0], np.float32), np.array([2.0, -1.0], np.float32)), "y"),
    ],
    ids=["product-rule", "whole-cotangent"],
)
def test_catches_a_missing_term(adapter, args, argument):
    message = _failure(adapter, *args)
    assert "the 'grad' check failed" in message
    assert f"the gradient of argument {argument!r}" in message
    assert _off_by(message) > 0.1


class ReversesTheBatch(jb.Adapter):
    """Right for one row; on a batch of rows it hands each row another row's result."""

    signature = "(n)->(n)"
    vectorized = True

    def forward(self, x):
        return 2 * x[::-1] if x.ndim > 1 else 2 * x

    def backward(self, res, g):
        return (2 * g[::-1] if g.ndim > 1 else 2 * g,)


class CentresTheBatch(jb.Adapter):
    """``x - mean(x)``, but the mean is taken over the whole batch, not each row."""

    signature = "(n)->(n)"
    vectorized = True

    def forward(self, x):
        return x - np.mean(x)

    def backward(self, res, g):
        return (g - np.mean(g),)


@pytest.mark.slow
@pytest.mark.parametrize("adapter", [ReversesTheBatch(), CentresTheBatch()], ids=repr)
def test_catches_a_vectorized_adapter_that_mixes_batch_elements(adapter):
    # its own generator: how far off the batch mean is depends on the draw (0.046 to 0.59
    # over seeds 0 to 7), and the module's generator depends on the tests run before
    x = np.random.default_rng(0).normal(size=3).astype(np.float32)
    message = _failure(adapter, x)
    assert "the 'vmap' check failed" in message
    assert re.search(r"output 0 at batch element \d", message)
    assert _off_by(message) > 0.05
    assert (
        f"{type(adapter).__name__} declares `vectorized = True`, so the bridge hands forward "
        "the whole batch in one call: that may be wrong" in message
    )
    # the same adapter is right on one row at a time: grad and jit pass
    check_adapter(adapter, x, checks=("specs", "jit", "grad"))


class ReversesTheBatchBackward(jb.Adapter):
    """A batch-aware forward; a backward that hands each row another row's cotangent."""

    signature = "(n)->(n)"
    vectorized = True

    def forward(self, x):
        return x / 2

    def backward(self, res, g):
        return (g[::-1] / 2 if g.ndim > 1 else g / 2,)


def test_a_backward_that_mixes_batch_elements_is_named():
    x = np.random.default_rng(0).normal(size=3).astype(np.float32)
    message = _failure(ReversesTheBatchBackward(), x)
    assert "the 'vmap' check failed" in message
    assert "the cotangent of 'x'" in message
    assert "so the bridge hands backward the whole batch in one call" in message


class UpcastingSine(jb.Adapter):
    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return np.sin(x.astype(np.float64))  # float64 where float32 is declared

    def backward(self, res, g):
        x, _ = res
        return (g * np.cos(x),)


class FloatArgmax(jb.Adapter):
    signature = "(n)->()"

    def output_specs(self, x):
        return jax.ShapeDtypeStruct((), np.int32)

    def forward(self, x):
        return np.float32(np.argmax(x))  # an index declared int32, returned as a float


class UpcastingBackward(Cube):
    def backward(self, res, g):
        (dx,) = super().backward(res, g)
        return (dx.astype(np.float64),)


class UpcastingJvp(MatVec):
    def jvp(self, res, tangents):
        return np.asarray(super().jvp(res, tangents), np.float64)


@pytest.mark.parametrize(
    "adapter,pattern",
    [
        (
            UpcastingSine(),
            r"output 0 of forward .* has dtype float64, but output_specs "
            r"declares float32\. The bridge would cast it to float32 without a word",
        ),
        (
            FloatArgmax(),
            r"output 0 of forward .* has dtype float32, but output_specs "
            r"declares int32\. The bridge would refuse it",
        ),
        (
            UpcastingBackward(),
            r"the cotangent of 'x' from backward .* has dtype float64, but "
            r"its argument is float32",
        ),
        (
            UpcastingJvp(),
            r"the tangent of output 0 from jvp .* has dtype float64, but "
            r"output_specs declares float32",
        ),
    ],
    ids=["float64-for-float32", "float-for-int32", "backward", "jvp"],
)
def test_catches_a_host_result_of_the_wrong_dtype(adapter, pattern):
    args = (_normal(2, 3), _normal(3)) if isinstance(adapter, MatVec) else (_normal(3),)
    message = _failure(adapter, *args)
    assert "the 'specs' check failed" in message
    assert re.search(pattern, message), message


class OneTooMany(jb.Adapter):
    signature = "(n)->(n)"

    def forward(self, x):
        return np.append(x, x[-1])

    def backward(self, res, g):
        return (g[:-1],)


class ForgetsItsResidual(Cube):
    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)  # declared, never returned


class CotangentOneTooShort(jb.Adapter):
    signature = "(n)->(n)"

    def forward(self, x):
        return 2 * x

    def backward(self, res, g):
        return (2 * g[:-1],)


@pytest.mark.parametrize(
    "adapter,pattern",
    [
        (
            OneTooMany(),
            r"output 0 of forward on one unbatched call has shape \(4,\), but "
            r"output_specs declares the core shape \(3,\)",
        ),
        (
            ForgetsItsResidual(),
            r"forward returned 1 values on one unbatched call, but it "
            r"should return 2: the 1 outputs .* then the 1 residuals",
        ),
        (
            CotangentOneTooShort(),
            r"the cotangent of 'x' from backward on one unbatched call "
            r"has shape \(2,\), but its argument has the core shape \(3,\)",
        ),
    ],
    ids=["output", "residual-count", "cotangent"],
)
def test_catches_a_host_result_of_the_wrong_shape(adapter, pattern):
    message = _failure(adapter, _normal(3))
    assert "the 'specs' check failed" in message
    assert re.search(pattern, message), message


class Impure(Cube):
    """A forward that is not a function of its inputs: it counts its calls."""

    calls = itertools.count()

    def forward(self, x):
        return x**3 + 1e-3 * next(self.calls)


@pytest.mark.parametrize("check", ["jit", "vmap", "scan"])
def test_catches_a_forward_that_is_not_a_function(check):
    message = _failure(Impure(), _normal(3), checks=(check,))
    assert f"the {check!r} check failed" in message


def test_the_message_says_what_to_rerun():
    message = _failure(LinearOnePercentOff(), _normal(1, 2), _normal(2, 2), _normal(2), seed=7)
    assert "reverse-mode gradients equal central finite differences in float64" in message
    assert "(check_adapter options: seed=7, batch=3)" in message
    # the inputs, as Python that rebuilds them exactly
    listed = re.findall(r"^  (\w+) = np\.array\(.*?, np\.float32\)  # shape", message, re.M | re.S)
    assert listed == ["x", "w", "b"]


# --- what check_adapter refuses to check


def test_refuses_bad_arguments():
    with pytest.raises(TypeError, match=r"needs 3 arguments \(x, w, b\), got 1"):
        check_adapter(Linear(), _normal(2, 3))
    with (
        jax.enable_x64(False),
        pytest.raises(TypeError, match="'x' is float64.*64-bit mode is off"),
    ):
        check_adapter(Cube(), np.ones(3))
    with pytest.raises(ValueError, match="'x' has entries that are not positive.*'positive'"):
        check_adapter(Log(), np.array([1.0, -1.0], np.float32))
    with pytest.raises(ValueError, match="'a' is not exactly symmetric.*'spd'"):
        check_adapter(InverseQuadratic(), np.array([[2, 1], [0, 2]], np.float32), _normal(2))
    with pytest.raises(ValueError, match="unknown checks"):
        check_adapter(Cube(), _normal(3), checks=("grad", "jacobian"))
    with pytest.raises(ValueError, match="`batch` must be an integer of at least 2"):
        check_adapter(Cube(), _normal(3), batch=1)


class ForwardModeSine(jb.Adapter):
    """``sin x`` with a host ``jvp`` and no reverse-mode rule."""

    signature = "()->()"
    vectorized = True

    def forward(self, x):
        return np.sin(x)

    def jvp(self, res, tangents):
        x, _ = res
        return np.cos(x) * tangents[0]


class ForwardModeSineWithoutCosine(ForwardModeSine):
    def jvp(self, res, tangents):
        return tangents[0]


@pytest.mark.slow
def test_checks_that_do_not_apply_are_skipped():
    # Cube has no forward-mode rule and no linear_in: nothing to check, and no error
    check_adapter(Cube(), _normal(3), checks=("jvp", "transpose", "hessian", "linear_transpose"))
    # no reverse-mode rule: "grad" and "transpose" are skipped, and no check takes gradients
    check_adapter(ForwardModeSine(), _normal(3))
    # while the forward-mode checks still run
    assert "the 'jvp' check failed" in _failure(ForwardModeSineWithoutCosine(), _normal(3))


def test_an_error_on_the_host_is_a_failed_check():
    class Raises(Cube):
        def forward(self, x):
            raise np.linalg.LinAlgError("Singular matrix")

    message = _failure(Raises(), _normal(3))
    assert "the 'specs' check failed" in message
    assert "it raised LinAlgError: Singular matrix" in message


# --- the documentation's snippet


def _docs_snippet() -> str:
    """The Python blocks of the documentation's page "Testing adapters" (docs/testing.md)."""
    text = (Path(__file__).parent.parent / "docs" / "testing.md").read_text()
    assert text.startswith("# Testing adapters\n"), "docs/testing.md is not the testing page"
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "docs/testing.md has no ```python block"
    return "\n".join(blocks)


@pytest.mark.slow
def test_docs_snippet_runs():
    namespace: dict = {"__name__": "docs_snippet"}
    exec(compile(_docs_snippet(), "docs/testing.md snippet", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, "the snippet should show a Hypothesis test"
    for test in tests:
        test()


def test_docs_snippet_catches_a_wrong_backward():
    namespace: dict = {"__name__": "docs_snippet"}
    snippet = _docs_snippet()
    wrong = snippet.replace("3 * x**2 * g", "3 * x * g")
    assert wrong != snippet, "the snippet's backward changed: update this test"
    with pytest.raises(AssertionError, match="the 'grad' check failed"):
        exec(compile(wrong, "docs/testing.md snippet", "exec"), namespace)


@pytest.mark.slow
def test_jnp_inputs_are_accepted():
    check_adapter(Cube(), jnp.arange(3.0))


class EnergyAndWave(jb.Adapter):
    """``(100 |x|², sin x)``: two outputs two orders of magnitude apart. ``share`` scales
    the part of the gradient that comes from the small one."""

    signature = "(n)->(),(n)"
    vectorized = True
    share: float = 1.0

    def forward(self, x):
        return 100 * np.sum(x**2, -1), np.sin(x)

    def backward(self, res, g):
        x, _, _ = res
        g_energy, g_wave = g
        return (200 * x * g_energy[..., None] + self.share * g_wave * np.cos(x),)


@pytest.mark.slow
def test_catches_one_percent_in_the_share_of_a_small_output():
    """In float32 the drawn cotangent of both outputs together gives a gradient whose
    tolerance (1e-4 of its largest entry) hides a 1% error in the small output's share; the
    check of each output alone does not."""
    x = np.array([0.5, -1.0, 2.0], np.float32)
    check_adapter(EnergyAndWave(), x)
    message = _failure(EnergyAndWave(share=1.01), x)
    assert "the gradient of argument 'x' through output 1 alone" in message
    assert 0.005 < _off_by(message) < 0.02


def test_passes_a_correct_adapter_on_an_empty_batch():
    """A batch of size 0 is a valid call; the "specs" check took its element 0."""
    check_adapter(Cube(), np.zeros((0,), np.float32))


def test_a_host_error_under_jit_is_reported_in_one_line_not_a_whole_traceback():
    class Unbatchable(jb.Adapter):
        signature = "()->()"
        vectorized = True

        def forward(self, x):
            if x.ndim:
                raise ValueError("no batches here")
            return x**3

    with pytest.raises(AssertionError) as caught:
        check_adapter(Unbatchable(), np.float32(0.5), checks=["vmap"])
    message = str(caught.value)
    # before: the JaxRuntimeError's whole traceback was embedded in the message
    assert "Traceback" not in message and "File " not in message
    assert (
        "it raised ValueError: Unbatchable.forward raised ValueError on the host: no batches here"
        in message
    )


class CostlyResidualChangesOutput(jb.Adapter):
    """A forward told its residuals go unused that returns another output: wrong."""

    signature = "()->()"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct((), x.dtype)

    def forward(self, x, *, residuals=True):
        return (x**3, 3 * x**2) if residuals else x**3 + 1e-3

    def backward(self, res, g):
        return (res[2] * g,)


def test_catches_a_forward_whose_outputs_change_without_residuals():
    message = _failure(CostlyResidualChangesOutput(), _normal(3), checks=("specs",))
    assert "the 'specs' check failed" in message
    assert "forward(residuals=False)" in message and "must not change the outputs" in message
