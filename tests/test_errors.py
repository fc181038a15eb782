"""Bad input and bad host results give clear errors naming the adapter, argument and shapes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters import Doubling, Linear


class Faulty(jb.Adapter):
    """Misbehaves on the host in the way ``fault`` names."""

    signature = "(n)->(n)"
    fault: str = "raise"

    def forward(self, x):
        if self.fault == "raise":
            raise np.linalg.LinAlgError("Matrix is singular.")
        if self.fault == "shape":
            return x[..., :-1]
        if self.fault == "kind":
            return np.ones(x.shape, np.int64)
        if self.fault == "count":
            return x, x
        return x

    def backward(self, res, g):
        if self.fault == "backward_shape":
            return (g[..., :-1],)
        if self.fault == "backward_count":
            return g
        raise ValueError("no gradient here")


class FaultyWhole(Faulty):
    """The same faults from a vectorized adapter, whose results are checked on the whole
    batch at once (one result: the fast path of every call)."""

    vectorized = True


class TwoResults(jb.Adapter):
    """A vectorized adapter with two results (the general path of the result check)."""

    signature = "(n)->(n),(n)"
    vectorized = True
    second: str = "ok"

    def forward(self, x):
        if self.second == "kind":
            return x, np.ones(x.shape, np.int64)
        if self.second == "wide":
            return x, x.astype(np.float64) * 2  # float64 where float32 was declared: cast
        return x, x[..., :-1]


FAULTY = pytest.mark.parametrize("faulty", [Faulty, FaultyWhole], ids=["looped", "whole"])


def test_wrong_number_of_arguments():
    with pytest.raises(TypeError, match=r"Doubling takes 1 array arguments \(x\).*too many"):
        Doubling()(1.0, 2.0)
    with pytest.raises(TypeError, match=r"Linear takes 3 array arguments \(x, w, b\).*missing"):
        Linear()(jnp.ones((2, 3)), jnp.ones((3, 2)))


def test_core_shape_contradicting_the_signature_names_argument_and_shapes():
    x, b = jnp.ones((4, 3)), jnp.ones(2)
    with pytest.raises(
        ValueError, match=r"Linear: argument 'w' has shape \(4, 2\).*\(n, m\).*n = 3"
    ):
        jax.jit(Linear())(x, jnp.ones((4, 2)), b)
    with pytest.raises(ValueError, match=r"Linear: argument 'x' should have core shape \(k, n\)"):
        Linear()(jnp.ones(3), jnp.ones((3, 2)), b)


def test_batch_axes_that_do_not_broadcast():
    with pytest.raises(
        ValueError, match=r"Linear: the leading \(batch\) axes.*'x': \(2,\).*'w': \(3,\)"
    ):
        Linear()(jnp.ones((2, 4, 3)), jnp.ones((3, 3, 2)), jnp.ones(2))


def test_non_array_argument():
    with pytest.raises(TypeError, match=r"Doubling: argument 'x' must be an array, got str"):
        Doubling()("two")


def test_complex_arguments_are_refused():
    with pytest.raises(TypeError, match=r"Doubling: argument 'x' is complex"):
        Doubling()(jnp.ones(2, jnp.complex64))


def test_host_exception_keeps_its_type_outside_jit():
    with pytest.raises(
        np.linalg.LinAlgError,
        match=r"^Faulty.forward raised LinAlgError on the host: Matrix is singular",
    ):
        Faulty()(jnp.ones(3))


def test_host_exception_inside_jit_names_adapter_and_original():
    with pytest.raises(
        Exception,
        match=r"LinAlgError: Faulty.forward raised LinAlgError on the host: Matrix is singular",
    ):
        jax.block_until_ready(jax.jit(Faulty())(jnp.ones(3)))


def test_host_exception_inside_jit_is_logged_in_one_line_as_it_happens(caplog):
    with pytest.raises(Exception, match="Matrix is singular"):
        jax.block_until_ready(jax.jit(Faulty())(jnp.ones(3)))
    messages = [r.getMessage() for r in caplog.records if r.name == "jaxbridge"]
    assert messages == [
        "LinAlgError: Faulty.forward raised LinAlgError on the host: Matrix is singular."
    ]


def test_host_exception_in_backward_outside_jit():
    with pytest.raises(
        ValueError, match=r"^Faulty.backward raised ValueError on the host: no gradient"
    ):
        jax.grad(lambda x: Faulty("none")(x).sum())(jnp.ones(3))


@FAULTY
@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_wrong_shape_from_host(faulty, transform):
    name = faulty.__name__
    with pytest.raises(
        Exception, match=rf"{name}: result 0 of forward has shape \(2,\), expected \(3,\)"
    ):
        jax.block_until_ready(transform(faulty("shape"))(jnp.ones(3)))


def test_wrong_shape_under_vmap_names_the_batched_shape():
    with pytest.raises(
        Exception, match=r"Faulty: result 0 of forward has shape \(2,\), expected \(3,\)"
    ):
        jax.block_until_ready(jax.vmap(Faulty("shape"))(jnp.ones((4, 3))))
    with pytest.raises(
        Exception, match=r"FaultyWhole: result 0 of forward has shape \(4, 2\), expected \(4, 3\)"
    ):
        jax.block_until_ready(jax.vmap(FaultyWhole("shape"))(jnp.ones((4, 3))))


@FAULTY
def test_wrong_kind_from_host(faulty):
    name = faulty.__name__
    with pytest.raises(
        TypeError, match=rf"{name}: result 0 of forward has dtype int64, but float32 was declared"
    ):
        faulty("kind")(jnp.ones(3, jnp.float32))
    with pytest.raises(Exception, match=rf"{name}: result 0 of forward has dtype int64"):
        jax.block_until_ready(jax.jit(faulty("kind"))(jnp.ones(3, jnp.float32)))


@FAULTY
def test_wrong_number_of_results(faulty):
    with pytest.raises(
        TypeError, match=rf"{faulty.__name__}: forward returned 2 values, expected 1"
    ):
        faulty("count")(jnp.ones(3))


@FAULTY
def test_backward_returning_wrong_shape_or_count(faulty):
    name = faulty.__name__
    with pytest.raises(
        ValueError,
        match=rf"^{name}.backward: the cotangent of 'x' has shape \(2,\), expected \(3,\)\.",
    ):
        jax.grad(lambda x: faulty("backward_shape")(x).sum())(jnp.ones(3))
    with pytest.raises(TypeError, match=rf"^{name}.backward must return a tuple of 1 cotangents"):
        jax.grad(lambda x: faulty("backward_count")(x).sum())(jnp.ones(3))


class CumulativeSum(jb.Adapter):
    """``cumsum(x)`` with rules in JAX, which return what ``fault`` names."""

    signature = "(n)->(n)"
    vectorized = True
    fault: str = "ok"

    def forward(self, x):
        return np.cumsum(x, axis=-1)

    def pushforward(self, res, tangents):
        (t,) = tangents
        if self.fault == "core":  # broadcast, it would be wrong, not an error
            return jnp.cumsum(t, axis=-1)[..., -1:]
        if self.fault == "tuple":  # a one-element tuple for the one output: fine
            return (jnp.cumsum(t, axis=-1),)
        if self.fault == "integer":
            return jnp.ones(t.shape, jnp.int32)
        return jnp.cumsum(t, axis=-1)

    def pullback(self, res, g):
        total = jnp.cumsum(g[..., ::-1], axis=-1)[..., ::-1]
        if self.fault == "lead":  # summed over the extra axis, it would be wrong
            return (jnp.stack([total, total]),)
        return (total,)


def test_rules_in_jax_returning_wrong_shapes_are_refused_by_name():
    """A pushforward's tangent and a pullback's cotangent are checked as the host rules'
    are: a core shape that broadcast, or a leading axis that was summed, gave wrong
    derivatives silently."""
    x, t = jnp.arange(3.0), jnp.array([0.0, 1.0, 0.0])
    assert jax.jvp(CumulativeSum(), (x,), (t,))[1].tolist() == [0.0, 1.0, 1.0]
    assert jax.jvp(CumulativeSum("tuple"), (x,), (t,))[1].tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(
        ValueError,
        match=r"CumulativeSum.pushforward: the tangent of output 0 has shape \(1,\), expected "
        r"\(3,\)",
    ):
        jax.jvp(CumulativeSum("core"), (x,), (t,))
    with pytest.raises(TypeError, match=r"tangent of output 0 has dtype int32, expected a float"):
        jax.jvp(CumulativeSum("integer"), (x,), (t,))
    assert jax.grad(lambda x: CumulativeSum()(x) @ t)(x).tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(
        ValueError,
        match=r"CumulativeSum: the cotangent of argument 'x' has shape \(2, 3\), which does "
        r"not reduce to the argument's shape \(3,\)",
    ):
        jax.grad(lambda x: CumulativeSum("lead")(x) @ t)(x)


def test_a_host_jvp_may_return_a_one_element_tuple():
    class Tripling(jb.Adapter):
        signature = "(n)->(n)"
        vectorized = True

        def forward(self, x):
            return 3 * x

        def jvp(self, res, tangents):
            return (3 * tangents[0],)

    assert jax.jvp(Tripling(), (jnp.ones(2),), (jnp.ones(2),))[1].tolist() == [3.0, 3.0]


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_several_results_are_each_checked_and_cast_within_their_kind(transform):
    x = jnp.arange(3.0, dtype=jnp.float32)
    with pytest.raises(Exception, match=r"TwoResults: result 1 of forward has dtype int64"):
        jax.block_until_ready(transform(TwoResults("kind"))(x))
    with pytest.raises(
        Exception, match=r"TwoResults: result 1 of forward has shape \(2,\), expected \(3,\)"
    ):
        jax.block_until_ready(transform(TwoResults())(x))
    same, doubled = transform(TwoResults("wide"))(x)
    assert doubled.dtype == jnp.float32
    np.testing.assert_array_equal(doubled, 2 * np.arange(3.0))


def test_adapter_without_backward_cannot_be_differentiated():
    class NoBackward(jb.Adapter):
        signature = "()->()"

        def forward(self, x):
            return x

    with pytest.raises(NotImplementedError, match="NoBackward defines no `backward`"):
        jax.grad(NoBackward())(1.0)


def test_malformed_signature_fails_when_the_class_is_defined():
    with pytest.raises(ValueError, match=r"'\(n\)->' is not a gufunc signature"):

        class Broken(jb.Adapter):
            signature = "(n)->"


def test_forward_arity_must_match_signature():
    class Mismatch(jb.Adapter):
        signature = "(n),(n)->(n)"

        def forward(self, x):
            return x

    with pytest.raises(
        TypeError, match=r"Mismatch.forward takes 1 arguments \('x',\), but signature"
    ):
        Mismatch()(jnp.ones(2), jnp.ones(2))


def test_output_the_signature_cannot_size():
    class Unsized(jb.Adapter):
        signature = "(n)->(k)"

        def forward(self, x):
            return x

    with pytest.raises(
        ValueError, match=r"Unsized: output dimension 'k' appears in no input.*output_specs"
    ):
        Unsized()(jnp.ones(2))


def test_unhashable_static_parameter():
    class Scaled(jb.Adapter):
        signature = "()->()"
        factors: object = ()

        def forward(self, x):
            return x

    with pytest.raises(TypeError, match=r"Scaled: parameter 'factors' must be hashable.*got list"):
        Scaled(factors=[1, 2])


def test_annotated_class_setting_is_refused():
    with pytest.raises(TypeError, match=r"Annotated: write `vectorized = \.\.\.` without a type"):

        class Annotated(jb.Adapter):
            signature = "()->()"
            vectorized: bool = True
