"""Bad input and bad host results give clear errors naming the adapter, argument and shapes."""

import inspect
import sys
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _integrate_cases import Exponential

import jaxbridge as jb
from jaxbridge.adapters import (
    Doubling,
    Failure,
    IntegrationFailure,
    InterpolationFailure,
    Linear,
    LinearSolve,
    OptimizeError,
    Quad,
    Root,
    SolveFailure,
    special,
)
from jaxbridge.adapters.interpolate import CubicSpline


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
    with pytest.raises(TypeError, match=r"Doubling: argument 'x' must be an array.*, got str"):
        Doubling()("two")


@pytest.mark.parametrize(
    "value, got",
    [(None, "None"), (np.array([1.0, None], dtype=object), "an array of Python objects")],
)
def test_none_or_objects_as_an_argument_name_the_adapter_and_argument(value, got):
    # (JAX's own "None is not a valid value for jnp.array" named neither)
    with pytest.raises(TypeError, match=rf"Doubling: argument 'x' must be an array.*got {got}"):
        Doubling()(value)
    with pytest.raises(TypeError, match=rf"jv: argument 'v' must be an array.*got {got}"):
        special.jv(value, 1.0)


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
        "LinAlgError: Faulty.forward raised LinAlgError on the host: Matrix is singular. "
        f"(raised at {__file__}:{_line_of(Faulty.forward, 'raise np.linalg.LinAlgError')})"
    ]


def test_an_error_raised_as_itself_by_host_errors_is_not_logged(caplog):
    """Inside a host_errors block the error reaches the caller as itself: logging it too put
    a caught error on stderr (#66 item 3)."""
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is singular"):
        with jb.host_errors():
            jax.block_until_ready(jax.jit(Faulty())(jnp.ones(3)))
    assert [r for r in caplog.records if r.name == "jaxbridge"] == []


class CallsNumPy(jb.Adapter):
    """Raises inside NumPy, from a line of its own."""

    signature = "(n)->(n)"

    def forward(self, x):
        return np.broadcast_to(x, (2, 3, 4))[0, 0]


def test_the_logged_line_ends_with_the_users_line_not_numpys(caplog):
    with pytest.raises(Exception, match="broadcast"):
        jax.block_until_ready(jax.jit(CallsNumPy())(jnp.ones(3)))
    (message,) = [r.getMessage() for r in caplog.records if r.name == "jaxbridge"]
    line = _line_of(CallsNumPy.forward, "np.broadcast_to")
    assert message.startswith("ValueError: CallsNumPy.forward raised ValueError on the host")
    assert message.endswith(f" (raised at {__file__}:{line})")


def test_a_refusal_of_the_bridge_own_is_logged_without_a_users_line(caplog):
    with pytest.raises(Exception, match="expected"):
        jax.block_until_ready(jax.jit(Faulty("shape"))(jnp.ones(3)))
    (message,) = [r.getMessage() for r in caplog.records if r.name == "jaxbridge"]
    assert message.endswith("expected (3,).") and "raised at" not in message


def _line_of(function, text):
    """The line number of the first line of ``function`` that holds ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


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


class SumOfSquares(jb.Adapter):
    """Claims ``vectorized`` but is not batch-aware: one value for the whole batch."""

    signature = "(n)->()"
    vectorized = True

    def forward(self, x):
        return np.sum(x**2)


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_a_wrong_vectorized_is_an_error_not_a_broadcast_value(transform):
    # before: [506 506 506 506] for [5 50 149 302], with no error
    xs = jnp.asarray([[1.0, 2.0], [5.0, 5.0], [7.0, 10.0], [11.0, 11.0]])
    with pytest.raises(Exception, match=r"SumOfSquares: result 0 of forward has shape \(\).*"):
        jax.block_until_ready(transform(SumOfSquares())(xs))
    with pytest.raises(Exception, match=r"set `vectorized = False`"):
        jax.block_until_ready(transform(jax.vmap(SumOfSquares()))(xs))
    assert float(SumOfSquares()(xs[1])) == 50.0  # one call, no batch: still fine


def test_a_list_returned_for_one_output_is_that_output():
    class Listed(jb.Adapter):
        signature = "(n)->(n)"

        def forward(self, x):
            return [2 * float(v) for v in x]  # (before: "returned 3 values, expected 1")

    np.testing.assert_array_equal(jax.jit(Listed())(jnp.arange(3.0)), [0.0, 2.0, 4.0])


def test_calling_the_class_instead_of_an_instance_says_to_instantiate():
    with pytest.raises(TypeError, match=r"call an instance: Doubling\(\)\(x\)"):
        jax.jit(Doubling)(jnp.ones(2))


@pytest.mark.parametrize("threads", [0, -1, 1.5, True])
def test_threads_must_be_a_whole_number_of_at_least_one(threads):
    with pytest.raises(TypeError, match=r"NoThreads: `threads` must be a whole number"):
        type("NoThreads", (jb.Adapter,), {"signature": "()->()", "threads": threads})


class Scaled(jb.Adapter):
    signature = "()->()"
    vectorized = True
    s: float = 1.0

    def forward(self, x):
        return self.s * x


def test_a_traced_static_parameter_says_to_make_it_an_argument():
    # before: "must be hashable ... Pass a tuple instead", the wrong advice
    with pytest.raises(
        TypeError, match=r"Scaled: parameter 's' got a traced value.*array argument"
    ):
        jax.grad(lambda s: Scaled(s=s)(1.0))(2.0)


class ArgmaxAndTripled(jb.Adapter):
    """An integer first output of another core rank than the floating one."""

    signature = "(n)->(),(n)"
    vectorized = True

    def output_specs(self, x):
        return jax.ShapeDtypeStruct((), jnp.int32), jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x):
        return np.argmax(x, axis=-1).astype(np.int32), 3 * x

    def backward(self, res, g):
        return (3 * g[1],)

    def jvp(self, res, tangents):
        return None, 3 * tangents[0]


def test_reverse_mode_past_an_integer_first_output_of_another_rank():
    # before: the loop axes were read from the integer output, and the gradient failed
    x = jnp.arange(6.0).reshape(2, 3)
    loss = lambda x: jnp.sum(ArgmaxAndTripled()(x)[1] ** 2)  # noqa: E731
    np.testing.assert_allclose(jax.grad(loss)(x), 18 * x)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(loss)))(x), 18 * x)


def test_an_eager_error_shows_the_callers_frames_not_jaxbridges_or_jaxs():
    import traceback
    from pathlib import Path

    with pytest.raises(np.linalg.LinAlgError) as caught:
        Faulty()(jnp.ones(3))
    files = [frame.filename for frame in traceback.extract_tb(caught.value.__traceback__)]
    ours, theirs = str(Path(jb.__file__).parent), str(Path(jax.__file__).parent)
    # before: 54-70 lines of JAX internals and jaxbridge's own frames came first
    assert files and not any(f.startswith((ours, theirs)) for f in files), files
    # the user's forward, where the error was raised, stays in the cause
    cause = traceback.extract_tb(caught.value.__cause__.__traceback__)
    assert cause[-1].name == "forward" and cause[-1].filename == __file__


def test_a_literal_static_parameter_takes_only_its_values():
    class Rounding(jb.Adapter):
        mode: Literal["down", "up"] = "down"
        signature = "()->()"

        def forward(self, x):
            return np.floor(x) if self.mode == "down" else np.ceil(x)

    assert Rounding("up").mode == "up"
    with pytest.raises(
        ValueError, match="Rounding: parameter 'mode' must be one of 'down', 'up'; got 'near'"
    ):
        Rounding("near")  # type: ignore[arg-type]


class _CubeRoot(jb.Adapter):
    """``x³ - θ``."""

    signature = "(n),(p)->(n)"

    def forward(self, x, theta):
        return x**3 - theta


NAN = np.array([np.nan])

# (an adapter class made with on_failure, its arguments that have no trustworthy result, the
# family's own exception type, which users caught before there was a common base)
FAILING = {
    "singular matrix": (LinearSolve, {}, (np.zeros((2, 2)), np.ones(2)), np.linalg.LinAlgError),
    "NaN parameter of an integral": (
        Quad,
        {"integrand": Exponential()},
        (NAN, 0.0, 1.0),
        RuntimeError,
    ),
    "NaN parameter of a root": (Root, {"residual": _CubeRoot()}, (np.ones(1), NAN), RuntimeError),
    "repeated sites": (
        CubicSpline,
        {},
        (np.array([0.0, 0.0, 1.0]), np.ones(3), np.ones(2)),
        ValueError,
    ),
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_every_family_fails_with_a_failure_that_names_the_adapter_and_the_way_out(case):
    cls, parameters, args, family_type = FAILING[case]
    with pytest.raises(Failure) as caught:
        cls(**parameters)(*args)
    assert isinstance(caught.value, family_type)
    assert str(caught.value).startswith(f"{cls.__name__}.forward raised")
    assert "Pass on_failure='nan' to get NaN results instead of this error." in str(caught.value)
    assert np.isnan(cls(**parameters, on_failure="nan")(*args)).all()


def test_the_failure_types_are_the_families_own():
    assert {SolveFailure, IntegrationFailure, OptimizeError, InterpolationFailure} <= set(
        Failure.__subclasses__()
    )
    assert issubclass(SolveFailure, np.linalg.LinAlgError)
    assert issubclass(InterpolationFailure, ValueError)


def test_an_adapter_on_a_library_that_is_not_installed_is_an_import_error(monkeypatch):
    """Without PyTorch an adapter with ``arrays = 'torch'`` said so only as a
    JaxRuntimeError from inside the call; it is an ImportError naming the library, eagerly
    and under jit. (CuPy's adapters refuse the CPU first, by name.)"""
    library = "torch"
    monkeypatch.setitem(sys.modules, library, None)  # (Python's mark of a blocked import)

    class OnLibrary(jb.Adapter):
        signature = "(n)->(n)"
        arrays = library

        def forward(self, x):
            return x

    for call in (OnLibrary(), jax.jit(OnLibrary())):
        with pytest.raises(ImportError, match=f"arrays = '{library}' needs {library}"):
            call(jnp.ones(3))


def test_the_documented_host_errors_pattern_catches_the_hosts_own_type():
    """The docs' pattern, run as written there (writing-an-adapter.md, Errors): the try
    around the block catches the host's exception type under jit. Written with the try
    inside the block, as the docs had it, the except saw JAX's error instead."""
    import re
    from pathlib import Path

    from jaxbridge.adapters import InterpolationFailure

    class Refusing(jb.Adapter):
        signature = "(n)->(n)"

        def forward(self, x):
            raise InterpolationFailure("no spline through these points")

    text = (Path(__file__).parent.parent / "docs" / "writing-an-adapter.md").read_text()
    (snippet,) = [c for c in re.findall(r"```python\n(.*?)```", text, re.S) if "host_errors()" in c]
    caught = []
    namespace = {"jax": jax, "jaxbridge": jb, "f": Refusing(), "x": jnp.ones(3)}
    exec(
        compile(snippet.replace("    ...", "    caught.append(True)"), "docs", "exec"),
        namespace | {"caught": caught},
    )
    assert caught == [True]
