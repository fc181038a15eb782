"""The subclassing contract: parameters, residuals, batching, several outputs, dtypes."""

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _cases import assert_close

import jaxbridge as jb
from jaxbridge.testing import check_adapter

CALLS: list[tuple[str, tuple]] = []  # (method, shapes seen) for every host call below


class Norms(jb.Adapter):
    """Two outputs: the norm and the unit vector; records each host call and what it saw."""

    signature = "(n)->(),(n)"

    def forward(self, x):
        CALLS.append(("forward", (x.shape,), type(x)))
        norm = np.sqrt(np.sum(x * x, axis=-1))
        return norm, x / norm[..., None]

    def backward(self, res, g):
        x, norm, unit = res
        g_norm, g_unit = g
        CALLS.append(("backward", (x.shape, g_norm.shape), type(x)))
        radial = np.sum(g_unit * unit, axis=-1)
        return (g_norm[..., None] * unit + (g_unit - radial[..., None] * unit) / norm[..., None],)


class VectorizedNorms(Norms):
    vectorized = True


def _reference(x):
    norm = jnp.linalg.norm(x, axis=-1)
    return norm, x / norm[..., None]


def _loss(f):
    def loss(x):
        norm, unit = f(x)
        return jnp.sum(jnp.sin(norm)) + jnp.sum(jnp.cos(unit) * jnp.arange(3.0))

    return loss


@pytest.mark.parametrize("adapter", [Norms(), VectorizedNorms()], ids=["loop", "vectorized"])
def test_one_host_call_per_vmap_forward_and_backward(adapter):
    with jax.enable_x64(True):
        xs = jnp.asarray(np.random.default_rng(0).normal(size=(64, 3)))
        CALLS.clear()
        got = jax.jit(jax.vmap(jax.grad(_loss(adapter))))(xs)
        methods = [c[0] for c in CALLS]
        if adapter.vectorized:
            assert methods == ["forward", "backward"]
            assert CALLS[0][1] == ((64, 3),)
        else:  # one host call each, looping inside it: the method sees one element at a time
            assert methods == ["forward"] * 64 + ["backward"] * 64
            assert {c[1] for c in CALLS} == {((3,),), ((3,), ())}
        assert all(c[2] is np.ndarray for c in CALLS)
        assert_close(got, jax.vmap(jax.grad(_loss(_reference)))(xs))


def test_one_callback_per_vmap_in_the_compiled_program():
    xs = jnp.ones((64, 3))
    text = jax.jit(jax.vmap(jax.grad(_loss(Norms())))).lower(xs).as_text()
    assert len(re.findall(r"custom_call @\w*python\w*callback", text)) == 2


def test_several_outputs_and_their_cotangents():
    with jax.enable_x64(True):
        x = jnp.array([3.0, -4.0, 12.0])
        norm, unit = Norms()(x)
        assert_close((norm, unit), _reference(x))
        assert_close(jax.grad(_loss(Norms()))(x), jax.grad(_loss(_reference))(x))
        # only one output used: the other's cotangent arrives as zeros
        assert_close(jax.grad(lambda x: Norms()(x)[0])(x), x / 13.0)


def test_gufunc_batch_axes_broadcast_and_gradients_keep_argument_shapes():
    from jaxbridge.adapters import Linear

    with jax.enable_x64(True):
        rng = np.random.default_rng(1)
        x = jnp.asarray(rng.normal(size=(2, 1, 4, 3)))  # batch (2, 1)
        w = jnp.asarray(rng.normal(size=(5, 3, 2)))  # batch (5,)
        b = jnp.asarray(rng.normal(size=(2,)))  # no batch
        out = Linear()(x, w, b)
        assert out.shape == (2, 5, 4, 2)

        def loss(f):
            return lambda x, w, b: jnp.sum(jnp.sin(f(x, w, b)))

        got = jax.jit(jax.grad(loss(Linear()), (0, 1, 2)))(x, w, b)
        ref = jax.grad(loss(lambda x, w, b: x @ w + b), (0, 1, 2))(x, w, b)
        assert [g.shape for g in got] == [x.shape, w.shape, b.shape]
        assert_close(got, ref)


class Weighted(jb.Adapter):
    """``w x`` for a vector ``x`` and a scalar ``w``, vectorized. ``backward`` gives ``w``
    its cotangent per batch element (``"each"``, the contract), summed over the batch
    axes ``w`` was broadcast along, so shaped like ``w`` in ``res`` (``"summed"``), or
    ``np.zeros(())`` (``"zero"``)."""

    signature = "(n),()->(n)"
    vectorized = True
    cotangent: str = "each"

    def forward(self, x, w):
        return w[..., None] * x

    def backward(self, res, g):
        x, w, _ = res
        gw = np.sum(g * x, axis=-1)
        if self.cotangent == "summed":
            broadcast = tuple(i for i, size in enumerate(w.shape) if size < gw.shape[i])
            gw = gw.sum(axis=broadcast, keepdims=True)
        elif self.cotangent == "zero":
            gw = np.zeros(())
        return w[..., None] * g, gw


def _weighted_loss(f):
    return lambda x, w: jnp.sum(jnp.sin(f(x, w)))


def _native_weighted(x, w):
    return w[..., None] * x


def test_a_cotangent_per_batch_element_is_summed_where_its_argument_was_broadcast():
    # w broadcast along the first batch axis; under vmap with in_axes None, along every axis
    with jax.enable_x64(True):
        rng = np.random.default_rng(3)
        x, w = jnp.asarray(rng.normal(size=(2, 3, 4))), jnp.asarray(rng.normal(size=3))
        grad = jax.grad(_weighted_loss(Weighted()), (0, 1))
        expected = jax.grad(_weighted_loss(_native_weighted), (0, 1))(x, w)
        for transform in (lambda f: f, jax.jit):
            assert_close(transform(grad)(x, w), expected)
        mapped = jax.vmap(jax.vmap(Weighted(), (0, None)), (0, None))
        got = jax.jit(jax.grad(_weighted_loss(mapped), (0, 1)))(x, w[0])
        assert_close(got, jax.grad(_weighted_loss(_native_weighted), (0, 1))(x, w[0]))
        # the output's cotangent the same for every element (a loss linear in it): then
        # so is x's (size 1 on the batch axis, broadcast), and w's per-example gradients differ
        per_example = jax.vmap(jax.grad(lambda x, w: jnp.sum(Weighted()(x, w)), (0, 1)), (0, None))
        native = jax.vmap(jax.grad(lambda x, w: jnp.sum(x * w), (0, 1)), (0, None))
        assert_close(jax.jit(per_example)(x[0], w[0]), native(x[0], w[0]))


def test_a_cotangent_summed_over_the_batch_is_refused_unless_zero():
    with jax.enable_x64(True):
        x, w = jnp.ones((2, 3, 4)), jnp.ones(3)
        message = (
            r"Weighted.backward: the cotangent of 'w' has shape \(1, 3\), expected \(2, 3\): "
            r"size 1 on batch axis 0, where the output's cotangent has 2, as if summed over the "
            r"batch\. Return one per batch element; the bridge sums them where 'w' was broadcast\."
        )
        grad = jax.grad(_weighted_loss(Weighted("summed")), (0, 1))
        with pytest.raises(ValueError, match="^" + message):
            grad(x, w)
        with pytest.raises(Exception, match=message):  # (XLA's error, under jit)
            jax.jit(grad)(x, w)
        gx, gw = jax.jit(jax.grad(_weighted_loss(Weighted("zero")), (0, 1)))(x, w)
        assert_close(gx, jax.grad(_weighted_loss(_native_weighted))(x, w))
        np.testing.assert_array_equal(gw, np.zeros(3))


def test_a_cotangent_that_does_not_fit_names_its_argument():
    class Swapped(Weighted):
        def backward(self, res, g):
            return super().backward(res, g)[::-1]  # each cotangent where the other belongs

    with pytest.raises(
        ValueError,
        match=r"^Swapped.backward: the cotangent of 'x' has shape \(\), expected \(4,\)\.",
    ):
        jax.grad(lambda x: jnp.sum(Swapped()(x, 2.0)))(jnp.ones(4))


class CountingSolve(jb.Adapter):
    """Saves an LU factorization as a residual and checks the backward gets that very one."""

    signature = "(n,n),(n)->(n)"

    def residual_specs(self, a, b):
        n = a.shape[-1]
        return jax.ShapeDtypeStruct((n, n), a.dtype), jax.ShapeDtypeStruct((n,), np.int32)

    def forward(self, a, b):
        import scipy.linalg

        CALLS.append(("factorize", (a.shape,), type(a)))
        lu, piv = scipy.linalg.lu_factor(a)
        return scipy.linalg.lu_solve((lu, piv), b), lu, piv

    def backward(self, res, g):
        import scipy.linalg

        a, b, x, lu, piv = res
        assert piv.dtype == np.int32
        np.testing.assert_array_equal(lu, scipy.linalg.lu_factor(a)[0])
        lam = scipy.linalg.lu_solve((lu, piv), g, trans=1)
        return -np.outer(lam, x), lam


def test_residuals_are_computed_once_and_reach_backward():
    with jax.enable_x64(True):
        rng = np.random.default_rng(2)
        a, b = jnp.asarray(rng.normal(size=(4, 4)) + 4 * np.eye(4)), jnp.asarray(rng.normal(size=4))
        loss = lambda f: lambda a, b: jnp.sum(jnp.sin(f(a, b)))  # noqa: E731
        CALLS.clear()
        got = jax.jit(jax.grad(loss(CountingSolve()), (0, 1)))(a, b)
        assert [c[0] for c in CALLS] == ["factorize"]
        assert_close(got, jax.grad(loss(jnp.linalg.solve), (0, 1))(a, b))
        # the primal call alone asks nothing of the residuals
        assert_close(jax.jit(CountingSolve())(a, b), jnp.linalg.solve(a, b))


class Power(jb.Adapter):
    """``x ** k`` with an integer exponent argument, which gets no gradient."""

    signature = "(),()->()"
    vectorized = True

    def forward(self, x, k):
        return x**k

    def backward(self, res, g):
        x, k, _ = res
        return g * k * x ** (k - 1), None


def test_integer_arguments_get_float0_gradients():
    x, k = jnp.array([1.5, 2.0]), jnp.array([2, 3])
    gx, gk = jax.grad(lambda x, k: Power()(x, k).sum(), (0, 1), allow_int=True)(x, k)
    np.testing.assert_allclose(gx, [3.0, 12.0], rtol=1e-6)
    assert gk.dtype == jax.dtypes.float0 and gk.shape == (2,)
    assert Power()(x, k).dtype == x.dtype  # outputs take the floating inputs' dtype


class Histogram(jb.Adapter):
    """An output the signature cannot size: ``output_specs`` says what it is."""

    signature = "(n)->(k)"
    bins: int = 4

    def output_specs(self, x):
        return jax.ShapeDtypeStruct((self.bins,), x.dtype)

    def forward(self, x):
        return np.histogram(x, bins=self.bins, range=(0, 1))[0].astype(x.dtype)


class MaxWithIndex(jb.Adapter):
    """A floating and an integer output: the maximum and where it is."""

    signature = "(n)->(),()"

    def output_specs(self, x):
        return jax.ShapeDtypeStruct((), x.dtype), jax.ShapeDtypeStruct((), np.int32)

    def forward(self, x):
        return x.max(), np.argmax(x)

    def backward(self, res, g):
        x, _, index = res
        g_max, g_index = g
        assert g_index.dtype == np.int32 and not g_index.any()
        return (g_max * (np.arange(x.shape[-1]) == index),)


def test_integer_output_cotangent_reaches_the_host_as_zeros():
    x = jnp.array([[0.5, 3.0, 1.0], [4.0, -1.0, 2.0]])
    value, index = jax.vmap(MaxWithIndex())(x)
    np.testing.assert_array_equal(index, [1, 0])
    grad = jax.jit(
        jax.grad(lambda x: jnp.sum(jax.vmap(MaxWithIndex())(x)[0] * jnp.array([2.0, 3.0])))
    )
    np.testing.assert_array_equal(grad(x), [[0.0, 2.0, 0.0], [3.0, 0.0, 0.0]])


def test_output_specs_override_sizes_outputs():
    x = jnp.array([0.1, 0.2, 0.6, 0.9, 0.95])
    np.testing.assert_array_equal(Histogram()(x), [2, 0, 1, 2])
    np.testing.assert_array_equal(jax.jit(Histogram(bins=2))(x), [2, 3])
    assert jax.vmap(Histogram())(jnp.stack([x, x])).shape == (2, 4)


def test_static_parameters_are_frozen_comparable_and_hashable():
    assert Histogram(bins=3) == Histogram(bins=3) != Histogram(bins=4)
    assert hash(Histogram(bins=3)) == hash(Histogram(bins=3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        Histogram().bins = 5  # type: ignore[misc]


def test_arguments_by_keyword():
    from jaxbridge.adapters import Linear

    x, w, b = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.arange(4.0)
    assert_close(Linear()(x, b=b, w=w), x @ w + b, np.float32)


@pytest.mark.parametrize("x64", [False, True], ids=["x64-off", "x64-on"])
def test_host_float64_result_is_cast_to_the_declared_float32(x64):
    class Float64Host(jb.Adapter):
        signature = "()->()"
        vectorized = True

        def forward(self, x):
            return np.asarray(x, np.float64) / 3

    with jax.enable_x64(x64):
        x = jnp.array([1.0, 2.0], jnp.float32)
        for out in (Float64Host()(x), jax.jit(Float64Host())(x)):
            assert out.dtype == jnp.float32
            np.testing.assert_allclose(out, np.float32([1 / 3, 2 / 3]), rtol=1e-7)


def test_host_sees_plain_read_only_numpy():
    class Inspect(jb.Adapter):
        signature = "()->()"

        def forward(self, x):
            assert type(x) is np.ndarray
            with pytest.raises(ValueError, match="read-only"):
                x[...] = 0
            return x + 1

    np.testing.assert_array_equal(jax.jit(Inspect())(jnp.array(1.0)), 2.0)


class ThreadedNorms(Norms):
    threads = 2


def test_threaded_host_loop_matches_and_uses_the_pool():
    import threading
    import time

    seen: set[str] = set()

    class Recording(ThreadedNorms):
        def forward(self, x):
            seen.add(threading.current_thread().name)
            time.sleep(0.01)  # releases the GIL, as SciPy's solvers do (and lets the pool start)
            return super().forward(x)

    with jax.enable_x64(True):
        xs = jnp.asarray(np.random.default_rng(4).normal(size=(16, 3)))
        got = jax.jit(jax.vmap(jax.grad(_loss(Recording()))))(xs)
        assert_close(got, jax.vmap(jax.grad(_loss(_reference)))(xs))
    # two threads: the calling one takes the first share, a pool thread the other
    assert len(seen) == 2 and sum(name.startswith("jaxbridge-host") for name in seen) == 1


class Scale(jb.Adapter):
    """``x * k`` for an integer ``k``: linear in ``x`` with ``k`` held fixed, host rules only."""

    signature = "(),()->()"
    vectorized = True
    linear_in = ("x",)
    calls = []  # a class-level log of host calls (no annotation: not a parameter)

    def forward(self, x, k):
        Scale.calls.append("forward")
        return x * k

    def backward(self, res, g):
        Scale.calls.append("backward")
        return g * res[1], None


def test_linear_in_every_floating_argument_gives_every_derivative_and_keeps_integers():
    with jax.enable_x64(True):
        x, k = jnp.array([1.0, 2.0]), jnp.array([3, 5])
        loss = lambda x: jnp.sum(Scale()(x, k) ** 3)  # noqa: E731
        native = lambda x: jnp.sum((x * k) ** 3)  # noqa: E731
        for transform in (jax.grad, jax.hessian, lambda f: jax.jacfwd(jax.jacfwd(f))):
            assert_close(jax.jit(transform(loss))(x), transform(native)(x))
        _, tangent = jax.jvp(lambda x: Scale()(x, k), (x,), (jnp.ones(2),))
        np.testing.assert_array_equal(tangent, [3.0, 5.0])


def test_gradient_of_a_fully_linear_adapter_makes_one_host_call():
    with jax.enable_x64(True):
        x, k = jnp.array([1.0, 2.0]), jnp.array([3, 5])
        grad = jax.jit(jax.grad(lambda x: jnp.sum(Scale()(x, k))))
        Scale.calls.clear()
        np.testing.assert_array_equal(grad(x), [3.0, 5.0])
        assert Scale.calls == ["backward"]


class Product(jb.Adapter):
    """``a * b``, linear in ``b``; its pullback is told which cotangents will be used."""

    signature = "(),()->()"
    linear_in = ("b",)
    told = []  # a class-level log of what the pullback was told (no annotation: not a parameter)

    def forward(self, a, b):
        return a * b

    def pushforward(self, res, tangents):
        a, b = res[:2]
        da, db = tangents
        return (0 if da is None else da * b) + (0 if db is None else a * db)

    def pullback(self, res, g, *, wanted=None):
        Product.told.append(wanted)
        a, b = res[:2]
        return (g * b if "a" in wanted else None), (g * a if "b" in wanted else None)


def test_a_pullback_taking_wanted_is_told_which_cotangents_are_used():
    """Eager and jitted reverse mode, each argument alone and both, and linear_transpose:
    the pullback hears exactly the inputs differentiated, and its values are right (a
    pullback that skipped a wanted cotangent would give None, a zero)."""
    a, b = 2.0, 3.0
    for transform in (lambda f: f, jax.jit):
        for argnums, names, expected in [
            (0, {"a"}, 3.0),
            (1, {"b"}, 2.0),
            ((0, 1), {"a", "b"}, (3.0, 2.0)),
        ]:
            Product.told.clear()
            got = transform(jax.grad(Product(), argnums))(a, b)
            np.testing.assert_allclose(got, expected)
            assert Product.told == [frozenset(names)]
    Product.told.clear()
    transpose = jax.linear_transpose(lambda b: Product()(a, b), b)
    np.testing.assert_allclose(transpose(1.0)[0], a)
    assert Product.told == [frozenset({"b"})]


class CostlyResidual(jb.Adapter):
    """``x³``, saving ``3 x²`` as a residual only where it will be read (it stands for work
    that only the derivative needs)."""

    signature = "(n)->(n)"
    told = []  # a class-level log of what forward was told (no annotation: not a parameter)

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x, *, residuals=True):
        CostlyResidual.told.append(residuals)
        return (x**3, 3 * x**2) if residuals else x**3

    def backward(self, res, g):
        _, _, slope = res
        return (slope * g,)


def test_forward_told_whether_its_residuals_are_used():
    """A value-only call (eager, jitted, vmapped) tells ``forward`` residuals=False, and the
    outputs alone suffice; a differentiated one tells True and the rule reads them."""
    x = jnp.array([0.5, -2.0, 3.0])
    adapter = CostlyResidual()
    for call, arg in [
        (adapter, x),
        (jax.jit(adapter), x),
        (jax.jit(jax.vmap(adapter)), jnp.stack([x, 2 * x])),
    ]:
        CostlyResidual.told.clear()
        np.testing.assert_allclose(call(arg), arg**3, rtol=1e-6)
        assert CostlyResidual.told and not any(CostlyResidual.told)
    CostlyResidual.told.clear()
    for grad in (
        jax.grad(lambda x: adapter(x).sum()),
        jax.jit(jax.grad(lambda x: adapter(x).sum())),
    ):
        np.testing.assert_allclose(grad(x), 3 * x**2, rtol=1e-6)
    assert CostlyResidual.told and all(CostlyResidual.told)
    check_adapter(adapter, np.array([0.5, -2.0, 3.0], np.float32), checks=("specs", "grad"))
