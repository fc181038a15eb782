"""A refused input is refused under every transformation (``Adapter.check``, and the
``"refused"`` check of ``check_adapter`` that finds a refusal some composition loses), and
``jaxbridge.host_errors`` gives a host error its own type under ``jit``."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters import InterpolationFailure, LinearSolve, interpolate
from jaxbridge.testing import applicable_checks, check_adapter


class Negative(ValueError):
    """The error the adapters below refuse a non-positive scale with."""


def refuse_negative(a):
    if (np.asarray(a) <= 0).any():
        raise Negative("argument 'a' must be > 0")


class Scale(jb.Adapter):
    """``a x``, ``a > 0``, refused in ``forward`` alone, with rules in JAX that read only
    the inputs: under ``jit``, a derivative never runs ``forward``."""

    signature = "(),(n)->(n)"
    vectorized = True
    domains = {"a": "positive"}

    def forward(self, a, x):
        refuse_negative(a)
        return a[..., None] * x

    def pullback(self, res, g):
        a, x = res[:2]
        return (g * x).sum(-1), a[..., None] * g

    def pushforward(self, res, tangents):
        a, x = res[:2]
        da, dx = tangents
        terms = [0 if da is None else da[..., None] * x, 0 if dx is None else a[..., None] * dx]
        return terms[0] + terms[1]


class CheckedScale(Scale):
    def check(self, a, x):
        refuse_negative(a)


SEEN = []  # the shapes of the scales LoopedScale.check saw


class LoopedScale(jb.Adapter):
    """``a x`` with host rules, looped over the batch: ``check`` sees one element."""

    signature = "(),(n)->(n)"
    domains = {"a": "positive"}

    def check(self, a, x):
        SEEN.append(np.shape(a))
        refuse_negative(a)

    def forward(self, a, x):
        return a * x

    def backward(self, res, g):
        a, x = res[:2]
        return (g * x).sum(), a * g

    def jvp(self, res, tangents):
        a, x = res[:2]
        da, dx = tangents
        return (0 if da is None else da * x) + (0 if dx is None else a * dx)


GOOD = (np.float32(2.0), np.array([1.0, 2.0], np.float32))
BAD = (np.float32(-1.0), np.array([1.0, 2.0], np.float32))


def test_a_refusal_in_forward_alone_is_lost_under_jit_grad_and_the_check_says_so():
    # the gradients are a * g and sum(g * x): no host call at all, so jit keeps nothing that
    # refuses (the check reports the first argument, a)
    loss = jax.jit(jax.grad(lambda x: Scale()(BAD[0], x).sum()))
    np.testing.assert_array_equal(loss(BAD[1]), [-1.0, -1.0])
    with pytest.raises(AssertionError, match=r"jax.jit\(jax.grad\) in 'a' it raised nothing"):
        check_adapter(Scale(), *GOOD, refused=BAD, checks=("refused",))


@pytest.mark.parametrize(
    "transform",
    [
        lambda f, a, x: jax.jit(jax.grad(lambda x: f(a, x).sum()))(x),
        lambda f, a, x: jax.jit(lambda x: jax.jvp(lambda x: f(a, x), (x,), (x,))[1])(x),
        lambda f, a, x: jax.vmap(jax.grad(lambda x: f(a, x).sum()))(x[None]),
    ],
    ids=["jit(grad)", "jit(jvp)", "vmap(grad)"],
)
def test_check_refuses_in_rules_written_in_jax(transform):
    with pytest.raises(Negative, match="CheckedScale.*argument 'a'"), jb.host_errors():
        jax.block_until_ready(transform(CheckedScale(), *BAD))
    good = transform(CheckedScale(), *GOOD)  # the zeros it adds change nothing
    np.testing.assert_array_equal(np.ravel(good), np.ravel(transform(Scale(), *GOOD)))


class CheckedVjpScale(CheckedScale):
    """Its rules from ``jax.vjp`` of the formula: the cotangent of an argument the batch
    broadcast comes back summed over the batch, in the argument's own shape."""

    def pullback(self, res, g):
        return jax.vjp(lambda a, x: a[..., None] * x, *res[:2])[1](g)


def test_check_leaves_a_summed_cotangent_of_a_broadcast_argument_as_it_is():
    """``check``'s zeros once had the batch's shape: added to ``a``'s summed cotangent they
    broadcast it back to the batch, and the bridge summed it again (3x for 3 elements)."""
    xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, -1.0]], np.float32)

    def loss(adapter, a):
        return jax.vmap(adapter, (None, 0))(a, xs).sum()

    got = jax.grad(lambda a: loss(CheckedVjpScale(), a))(GOOD[0])
    np.testing.assert_allclose(got, xs.sum(), rtol=1e-6)


def test_check_adapter_passes_an_adapter_that_refuses_in_check():
    check_adapter(CheckedScale(), *GOOD, refused=BAD)


def test_check_runs_before_each_host_method_on_one_element_of_a_looped_batch():
    a = np.array([1.0, 2.0, -1.0], np.float32)
    x = np.ones((3, 2), np.float32)
    SEEN.clear()
    with pytest.raises(Negative, match="LoopedScale"):
        LoopedScale()(a, x)
    assert SEEN == [(), (), ()]  # one element each, the third refused
    SEEN.clear()
    jax.grad(lambda x: LoopedScale()(a[:2], x).sum())(x[:2])
    assert SEEN == [()] * 4  # forward, then backward, on each of two elements
    SEEN.clear()
    jax.jvp(lambda x: LoopedScale()(a[:2], x), (x[:2],), (x[:2],))
    assert SEEN == [()] * 4  # forward, then jvp
    check_adapter(LoopedScale(), *GOOD, refused=BAD, checks=("refused",))


def test_the_refused_check_needs_arguments_the_eager_call_refuses():
    with pytest.raises(AssertionError, match="the eager call on the refused arguments raised"):
        check_adapter(CheckedScale(), *GOOD, refused=GOOD, checks=("refused",))
    with pytest.raises(TypeError, match=r"refused=...\) needs 2 arguments \(a, x\), got 1"):
        check_adapter(CheckedScale(), *GOOD, refused=BAD[:1])


# --- host_errors


def spline_inputs(increasing: bool):
    x = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
    if not increasing:
        x = x[[0, 2, 1, 3]]
    return x, np.arange(4.0, dtype=np.float32) ** 2, np.array([0.5, 1.5], np.float32)


def test_outside_host_errors_jit_reports_a_host_error_as_jax_does():
    spline = jax.jit(interpolate.CubicSpline())
    with pytest.raises(InterpolationFailure):  # eagerly: its own type
        interpolate.CubicSpline()(*spline_inputs(False))
    with pytest.raises(Exception, match="strictly increasing") as raised:
        spline(*spline_inputs(False)).block_until_ready()
    assert not isinstance(raised.value, InterpolationFailure)


@pytest.mark.parametrize("compiled_before", [False, True], ids=["first call", "cached"])
def test_inside_host_errors_jit_raises_the_adapters_own_error(compiled_before):
    spline = jax.jit(interpolate.CubicSpline())
    if compiled_before:  # a compiled call's fast path wraps the error in a bare ValueError
        spline(*spline_inputs(True)).block_until_ready()
    with pytest.raises(InterpolationFailure) as raised, jb.host_errors():
        spline(*spline_inputs(False)).block_until_ready()
    first = str(raised.value).splitlines()[0]
    assert first.startswith("CubicSpline.forward raised InterpolationFailure on the host")
    assert "argument 'x' must be strictly increasing" in first
    assert "INTERNAL" in str(raised.value.__context__)  # JAX's wrapper, kept as its context


def test_host_errors_is_a_decorator_too_and_passes_other_errors_through():
    @jb.host_errors()
    def gradient(x, y, xq):
        f = jax.jit(jax.grad(lambda y: interpolate.CubicSpline()(x, y, xq).sum()))
        return f(y).block_until_ready()

    with pytest.raises(InterpolationFailure, match="strictly increasing"):
        gradient(*spline_inputs(False))

    @jb.host_errors()
    def unrelated():
        raise KeyError("not from the host")

    with pytest.raises(KeyError, match="not from the host"):
        unrelated()


# --- the interpolants: every helper a rule calls refuses as the forward does


def _one_d(name):
    x = np.array([0.0, 2.0, 1.0, 3.0, 4.0])
    good = (np.sort(x), np.arange(5.0) ** 2, np.array([0.5, 1.5]))
    return getattr(interpolate, name)(), good, (x, *good[1:])


def _grid():
    points = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0])
    adapter = interpolate.RegularGridInterpolator(shape=(3, 3))
    return (
        adapter,
        (points, np.arange(9.0), np.array([[0.5, 1.5]])),
        (
            points,
            np.arange(9.0),
            np.array([[0.5, 2.5]]),  # outside the grid, with bounds_error=True (SciPy's default)
        ),
    )


def _rbf():
    sites = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.3]])
    repeated = sites.copy()
    repeated[4] = sites[1]
    query = np.array([[0.3, 0.4]])
    return (
        interpolate.RBFInterpolator(),
        (sites, np.arange(5.0), query),
        (
            repeated,
            np.arange(5.0),
            query,
        ),
    )


def _scattered(name):
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    collinear = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    query = np.array([[0.3, 0.4]])
    return (
        getattr(interpolate, name)(),
        (points, np.arange(4.0), query),
        (
            collinear,
            np.arange(4.0),
            query,
        ),
    )


REFUSED = {
    "CubicSpline": lambda: _one_d("CubicSpline"),
    "make_interp_spline": lambda: _one_d("InterpSpline"),
    "PchipInterpolator": lambda: _one_d("PchipInterpolator"),
    "Akima1DInterpolator": lambda: _one_d("Akima1DInterpolator"),
    "RegularGridInterpolator": _grid,
    "RBFInterpolator": _rbf,
    "LinearNDInterpolator": lambda: _scattered("LinearNDInterpolator"),
    "CloughTocher2DInterpolator": lambda: _scattered("CloughTocher2DInterpolator"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_interpolants_refuse_under_every_transformation(name):
    adapter, good, bad = REFUSED[name]()
    with jax.enable_x64(True):
        check_adapter(adapter, *good, refused=bad, checks=("refused",))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_with_nan_on_failure_refused_data_give_nan_values_and_derivatives(name):
    adapter, _, bad = REFUSED[name]()
    adapter = dataclasses.replace(adapter, on_failure="nan")
    with jax.enable_x64(True):
        bad = tuple(jnp.asarray(a) for a in bad)
        for i in range(3):

            def loss(ai, i=i):
                return adapter(*bad[:i], ai, *bad[i + 1 :]).sum()

            try:
                value, grad = jax.jit(jax.value_and_grad(loss))(bad[i])
            except TypeError:  # an argument held fixed (the grid's points)
                continue
            assert np.isnan(value), (name, i, value)
            if name != "LinearNDInterpolator":  # (its rule in JAX gives 0 where refused: the
                # NaN value makes any loss of it NaN, and so its gradient)
                assert np.isnan(np.asarray(grad)).any(), (name, i, grad)


def test_applicable_checks_names_refused_only_with_refused_arguments():
    plain = applicable_checks(CheckedScale(), *GOOD)
    assert "refused" not in plain and {"grad", "jvp", "hessian"} <= set(plain)
    assert applicable_checks(CheckedScale(), *GOOD, refused=BAD) == (*plain, "refused")
    assert "jvp" not in applicable_checks(_ReverseOnly(), *GOOD)


class _ReverseOnly(jb.Adapter):
    signature = "(),(n)->(n)"
    vectorized = True

    def forward(self, a, x):
        return a[..., None] * x

    def backward(self, res, g):
        a, x = res[:2]
        return (g * x).sum(-1), a[..., None] * g


def test_a_refused_value_in_a_linear_argument_is_not_sought_in_its_transpose():
    # jax.linear_transpose in b reads b's shape alone: a NaN there has nothing to refuse
    a, b = np.eye(2) * 2.0, np.ones(2)
    with jax.enable_x64(True):
        check_adapter(
            LinearSolve(), a, b, refused=(a, np.array([1.0, np.nan])), checks=("refused",)
        )


def test_a_refusal_in_check_is_named_as_checks_eagerly_and_under_jit():
    message = r"^CheckedScale\.check raised Negative on the host: argument 'a' must be > 0"
    with pytest.raises(Negative, match=message):
        CheckedScale()(*BAD)
    with pytest.raises(Negative, match=message), jb.host_errors():
        jax.jit(CheckedScale())(*BAD).block_until_ready()


def _sparse_cases():
    import scipy.sparse

    from jaxbridge.adapters import SparseSolve, sparse

    n = 12
    m = scipy.sparse.diags(
        [np.arange(1.0, n + 1), -0.3 * np.ones(n - 1), -0.3 * np.ones(n - 1)], [0, 1, -1]
    ).tocsr()
    pattern = (tuple(m.indices.tolist()), tuple(m.indptr.tolist()), m.shape)
    nan_data = m.data.copy()
    nan_data[3] = np.nan
    b, t = np.ones((n, 2)), np.array(0.5)
    return {
        "Eigsh": (sparse.Eigsh(*pattern, k=3, which="LA"), (m.data,), (nan_data,)),
        "Svds": (sparse.Svds(*pattern, k=3), (m.data,), (nan_data,)),
        "SparseSolve": (SparseSolve(*pattern), (m.data, b[:, 0]), (nan_data, b[:, 0])),
        "ExpmMultiply, data": (sparse.ExpmMultiply(*pattern), (m.data, b, t), (nan_data, b, t)),
        # (its rules in data and t never read b: XLA dropped the forward that refused it)
        "ExpmMultiply, b": (sparse.ExpmMultiply(*pattern), (m.data, b, t), (m.data, b * np.nan, t)),
    }


@pytest.mark.parametrize("name", sorted(_sparse_cases()))
def test_sparse_adapters_refuse_under_every_transformation(name):
    adapter, good, bad = _sparse_cases()[name]
    with jax.enable_x64(True):
        check_adapter(adapter, *good, refused=bad, checks=("refused",))
