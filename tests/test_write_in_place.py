"""``forward(..., *, out)``: results written into the arrays the bridge hands over, XLA's own
buffers with the buffer_callback transport."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _cases import assert_close as _assert_close

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve

SEEN: list = []  # per forward call: None, or (shape, dtype, writeable, C-contiguous, address) per out


def _record(out):
    if out is None:
        SEEN.append(None)
        return
    SEEN.append(
        [(o.shape, o.dtype, o.flags.writeable, o.flags.c_contiguous, o.ctypes.data) for o in out]
    )


class Exponential(jb.Adapter):
    """``exp(x)``, written in place, with the derivative saved in its own residual buffer."""

    signature = "(n)->(n)"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x, *, out=None):
        _record(out)
        if out is None:  # (eager calls, pure_callback)
            return np.exp(x), np.exp(x)
        y, derivative = out
        np.exp(x, out=y)
        np.exp(x, out=derivative)
        return y, derivative

    def backward(self, res, g):
        _, _, derivative = res
        return (g * derivative,)


class LoopedExponential(Exponential):
    signature = "()->()"  # scalar elements: each out is a 0-d view into the batch's buffer
    vectorized = False


def assert_close(actual, expected):
    _assert_close(actual, expected, np.float32)  # (NumPy's exp and XLA's differ by an ulp)


def _loss(f):
    return lambda x: jnp.sum(jnp.sin(f(x)))


def _fresh(adapter):
    # a new function for jit each time: a traced call keeps the transport it was traced with
    return lambda *args: adapter(*args)


def _outs(call):
    return None if call is None else [s[:4] for s in call]


def test_forward_writes_every_result_in_place_under_each_transform(transport):
    x = jnp.linspace(-1.0, 1.0, 5, dtype=jnp.float32)
    expected = jnp.exp(x)
    given = transport == "buffer_callback"  # pure_callback copies: it has no buffers to give
    SEEN.clear()
    assert_close(jax.jit(_fresh(Exponential()))(x), expected)
    # the residual gets its buffer too, though the primal call keeps none
    assert _outs(SEEN[0]) == ([((5,), np.float32, True, True)] * 2 if given else None)
    SEEN.clear()
    assert_close(jax.jit(jax.grad(_loss(Exponential())))(x), jnp.cos(expected) * expected)
    assert len(SEEN) == 1
    xs = jnp.stack([x, 2 * x, -x])
    SEEN.clear()
    got = jax.jit(jax.vmap(jax.grad(_loss(Exponential()))))(xs)
    assert_close(got, jnp.cos(jnp.exp(xs)) * jnp.exp(xs))
    assert _outs(SEEN[0]) == ([((3, 5), np.float32, True, True)] * 2 if given else None)


def test_eager_calls_give_no_arrays_to_write_into():
    x = jnp.array([0.5, -2.0])
    SEEN.clear()
    assert_close(Exponential()(x), jnp.exp(x))
    assert SEEN == [None]


def test_buffer_callback_hands_over_xla_own_result_buffers(transport):
    if transport != "buffer_callback":
        pytest.skip("pure_callback copies results to the device: no buffers to hand over")
    x = jnp.arange(4.0)
    SEEN.clear()
    y = jax.jit(_fresh(Exponential()))(x)
    assert y.unsafe_buffer_pointer() == SEEN[0][0][4]  # the very memory forward wrote


def test_looped_adapter_writes_each_element_into_its_view(transport):
    xs = jnp.array([[0.0, 1.0, -1.0], [2.0, 0.5, -0.5]])
    SEEN.clear()
    assert_close(jax.jit(jax.vmap(_fresh(LoopedExponential())))(xs), jnp.exp(xs))
    assert len(SEEN) == 6  # one forward per element, each writing its 0-d views
    views = [((), np.dtype(xs.dtype), True, True)] * 2
    assert all(_outs(call) == (views if transport == "buffer_callback" else None) for call in SEEN)
    grad = jax.jit(jax.vmap(jax.grad(_loss(LoopedExponential()))))
    assert_close(grad(xs.ravel()), jnp.cos(jnp.exp(xs.ravel())) * jnp.exp(xs.ravel()))


class WritesElsewhere(jb.Adapter):
    """Scribbles on its out array and returns a different one: the returned one counts."""

    signature = "(n)->(n)"
    vectorized = True

    def forward(self, x, *, out=None):
        if out is not None:
            out[0][...] = np.nan
        return 3 * x


def test_a_result_returned_as_another_array_is_copied_into_place(transport):
    x = jnp.array([1.0, -2.0, 4.0])
    assert_close(jax.jit(_fresh(WritesElsewhere()))(x), 3 * x)
    assert_close(
        jax.jit(jax.vmap(_fresh(WritesElsewhere())))(jnp.stack([x, x])), 3 * jnp.stack([x, x])
    )


class Scaled(jb.Adapter):
    signature = "()->()"

    def forward(self, x, *, scale):
        return scale * x


class OutWithoutDefault(jb.Adapter):
    signature = "()->()"

    def forward(self, x, *, out):
        return x


class ResidualsWithoutDefault(jb.Adapter):
    signature = "()->()"

    def forward(self, x, *, residuals):
        return x


@pytest.mark.parametrize("adapter", [Scaled, OutWithoutDefault, ResidualsWithoutDefault])
def test_forward_takes_no_keyword_only_parameter_but_out_none_and_residuals_true(adapter):
    message = (
        rf"{adapter.__name__}\.forward may take the keyword-only parameters `out=None` .* and "
        r"`residuals=True`"
    )
    with pytest.raises(TypeError, match=message):
        adapter()(jnp.ones(2))


class Swapped(jb.Adapter):
    """``(2x, 3x)``, each computed in the other's buffer and returned from there."""

    signature = "(n)->(n),(n)"
    vectorized = True

    def forward(self, x, *, out=None):
        if out is None:
            return 2 * x, 3 * x
        first, second = out
        np.multiply(x, 3, out=first)
        np.multiply(x, 2, out=second)
        return second, first


class SavedInWorkspace(jb.Adapter):
    """``x² + 1``, its derivative ``2x`` computed in the output's buffer (as workspace) and
    returned as the residual, the output as a new array."""

    signature = "(n)->(n)"
    vectorized = True

    def residual_specs(self, x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)

    def forward(self, x, *, out=None):
        derivative = np.empty_like(x) if out is None else out[0]
        np.multiply(x, 2, out=derivative)
        return x * x + 1, derivative

    def backward(self, res, g):
        return (g * res[2],)


def test_out_arrays_returned_in_other_places_are_read_before_they_are_written(transport):
    x = jnp.array([1.0, 2.0, 3.0])
    assert_close(jax.jit(_fresh(Swapped()))(x), (2 * x, 3 * x))
    grad = jax.jit(jax.grad(lambda x: jnp.sum(SavedInWorkspace()(x))))
    assert_close(grad(x), 2 * x)


class SharedWorkspace(jb.Adapter):
    """``x * sum(w)`` per element, its residual ``w`` shared by a batch of ``x``, with that
    residual's out array used as workspace: threads must not share it."""

    signature = "(),(n)->()"
    threads = 2
    residuals_from = ("w",)

    def residual_specs(self, x, w):
        return jax.ShapeDtypeStruct(w.shape, w.dtype)

    def forward(self, x, w, *, out=None):
        SEEN.append(out)
        if out is None:
            return np.sum(w * x), np.array(w)
        y, r = out
        np.multiply(w, x, out=r)
        y[...] = r.sum()
        r[...] = w
        return y, r

    def backward(self, res, g):
        x, w, _, r = res
        return g * r.sum(), g * x * np.ones_like(r)


def test_threads_sharing_a_residual_get_no_out():
    w = jnp.linspace(0.0, 1.0, 1000, dtype=jnp.float32)
    xs = jnp.arange(1.0, 9.0, dtype=jnp.float32)
    SEEN.clear()
    got = jax.jit(jax.grad(lambda xs: jnp.sum(jax.vmap(lambda x: SharedWorkspace()(x, w))(xs))))(xs)
    assert_close(got, jnp.full_like(xs, jnp.sum(w)))
    assert len(SEEN) == 8 and all(out is None for out in SEEN)


# --- LinearSolve writes its factors in place: the same as without out, whatever out held --


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize("singular", [False, True], ids=["regular", "singular"])
def test_linear_solve_in_place_matches_the_copying_path(assume_a, singular):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    a = a @ a.T + 5 * np.eye(5)
    if singular:
        a[:, 0] = 0.0
        a[0, :] = 0.0
    b = rng.normal(size=(3, 5))  # three right-hand sides sharing the matrix
    solve = LinearSolve(assume_a=assume_a, on_failure="nan")
    expected = solve.forward(a[None], b)
    garbage = (np.full((3, 5), 7.0), np.full((1, 5, 5), 7.0), np.full((1, 5), -1, np.int32))
    got = solve.forward(a[None], b, out=garbage)
    assert all(g is o for g, o in zip(got, garbage))  # written in place
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert np.isnan(got[0]).all() == singular


@pytest.mark.parametrize("x64", [False, True], ids=["x64-off", "x64-on"])
def test_linear_solve_mixed_dtypes_take_the_copying_path(x64):
    # float32 a with int32 b: computed in float64 and cast, not in the float32 buffers
    with jax.enable_x64(x64):
        _mixed_dtypes()


def _mixed_dtypes():
    a = jnp.asarray(np.eye(3) * 2 + 0.25, jnp.float32)
    b = jnp.array([1, 2, 3], jnp.int32)
    expected = jax.grad(lambda a: jnp.sum(jnp.sin(jnp.linalg.solve(a, b.astype(a.dtype)))))(a)
    got = jax.jit(jax.grad(lambda a: jnp.sum(jnp.sin(LinearSolve()(a, b)))))(a)
    _assert_close(got, expected, np.float32)
