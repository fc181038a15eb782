"""What a host call leaves behind: no worker still writing after it returns, no pool that a
forked child cannot use, no cache that keeps a user's adapter (and what it holds) alive."""

import gc
import multiprocessing
import threading
import time
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb


class SlowOrFailing(jb.Adapter):
    """Element 0 fails at once; the others take a while, then write their result."""

    signature = "()->()"
    threads = 2
    running = []  # (class-level logs, no annotation: not parameters)
    started = []

    def forward(self, x):
        SlowOrFailing.started.append(float(x))
        if x == 0:
            raise ValueError("element 0 fails")
        SlowOrFailing.running.append(float(x))
        time.sleep(0.05)  # releases the GIL, as SciPy does
        SlowOrFailing.running.remove(float(x))
        return 2 * x


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_an_error_in_one_thread_returns_only_when_every_worker_has_stopped(transform):
    SlowOrFailing.started.clear()
    with pytest.raises(Exception, match="element 0 fails"):
        transform(SlowOrFailing())(jnp.arange(8.0))
    # before, the error was returned to XLA at once while the other worker was still
    # computing, then writing into a buffer XLA had freed
    assert SlowOrFailing.running == []
    # and the other worker stopped at its next element instead of finishing the batch
    assert len(SlowOrFailing.started) < 8


def test_results_of_a_threaded_loop_do_not_leak_into_later_arrays():
    # the measured symptom: fresh arrays came back holding a late worker's value
    f = jax.jit(SlowOrFailing())
    for _ in range(3):
        with pytest.raises(Exception, match="element 0 fails"):
            f(jnp.arange(6.0))
        time.sleep(0.1)  # (when a late write would land)
        np.testing.assert_array_equal(jax.jit(lambda: jnp.zeros(6))(), np.zeros(6))


class Threaded(jb.Adapter):
    signature = "()->()"
    threads = 2

    def forward(self, x):
        time.sleep(1e-3)
        return 2 * x


def _call_threaded(queue):
    queue.put(np.asarray(Threaded()(jnp.arange(4.0))).tolist())


@pytest.mark.skipif(
    jax.default_backend() != "cpu",
    reason="CUDA does not survive a fork after it is initialised (the child dies at its first "
    "call): with a GPU backend, worker processes start with spawn (Adapter.processes)",
)
def test_a_child_forked_after_the_pool_was_used_can_use_it():
    assert Threaded()(jnp.arange(4.0)).tolist() == [0.0, 2.0, 4.0, 6.0]  # the pool is up
    assert any(t.name.startswith("jaxbridge-host") for t in threading.enumerate())
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    with warnings.catch_warnings():
        # JAX (and Python 3.12) warn that forking a threaded process may deadlock: that
        # is the situation under test
        warnings.simplefilter("ignore")
        child = context.Process(target=_call_threaded, args=(queue,))
        child.start()
    child.join(timeout=60)
    hung = child.is_alive()
    if hung:
        child.kill()
    assert not hung, "the forked child hung in a threaded host loop"
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [0.0, 2.0, 4.0, 6.0]


def _adapter_holding(big: np.ndarray) -> jb.Adapter:
    class Scaled(jb.Adapter):  # a class made at run time, closing over a large array
        signature = "(n)->(n)"
        vectorized = True

        def forward(self, x):
            return x * big[: x.shape[-1]]

        def backward(self, res, g):
            return (g * big[: g.shape[-1]],)

    return Scaled()


def _use(adapter: jb.Adapter) -> float:
    x = jnp.ones(3)
    jax.jit(adapter)(x)
    jax.grad(lambda x: adapter(x).sum())(x)
    return float(adapter(x)[0])


def test_adapters_made_at_run_time_are_freed_with_what_they_hold():
    held = []
    for i in range(10):
        big = np.full(1000, float(i))
        held.append(weakref.ref(big))
        assert _use(_adapter_holding(big)) == i
        del big
    jax.clear_caches()  # drops the compiled programs, which hold their adapters
    gc.collect()
    assert [r() for r in held] == [None] * 10


class WithParameter(jb.Adapter):
    signature = "(n)->(n)"
    vectorized = True
    pattern: tuple

    def forward(self, x):
        return x * len(self.pattern)


def test_instances_with_large_parameters_are_not_kept_by_the_bridge():
    held = []
    for i in range(5):
        pattern = tuple(range(10_000 + i))
        adapter = WithParameter(pattern)
        held.append(weakref.ref(adapter))
        assert float(jax.jit(adapter)(jnp.ones(2))[0]) == 10_000 + i
        del adapter, pattern
    jax.clear_caches()
    gc.collect()
    assert [r() for r in held] == [None] * 5


def _collect():
    for _ in range(3):  # (a cycle released by a weakref callback goes in the next pass)
        gc.collect()


def _traced_through_functions(adapter: jb.Adapter) -> float:
    x = jnp.ones(3)
    jax.jit(lambda x: adapter(x))(x)
    jax.jit(jax.vmap(lambda x: adapter(x)))(jnp.ones((2, 3)))
    return float(jax.jit(jax.grad(lambda x: adapter(x).sum()))(x)[0])


class _Holder:
    def __init__(self, big):
        self.big = big

    def __call__(self, x):
        return (np.asarray(x) * self.big[: x.shape[-1]]).astype(x.dtype)


def _plain_callback_holding(big: np.ndarray) -> None:
    holder = _Holder(big)
    x = jnp.ones(3)  # (float64 in 64-bit mode)
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    jax.jit(lambda x: jax.pure_callback(holder, spec, x))(x)


def test_an_adapter_made_at_run_time_goes_with_the_jitted_functions_that_called_it(transport):
    # As a plain pure_callback's function does, without jax.clear_caches(): before, each
    # primitive's `operation` parameter (which holds the adapter) stayed in JAX's cache of
    # abstract evaluations, keyed strongly on the parameters, for 2,048 entries.
    big = np.full(1000, 1.0)
    plain = weakref.ref(big)
    _plain_callback_holding(big)
    del big
    _collect()
    assert plain() is None  # (the behaviour to match)

    held = []
    for i in range(5):
        big = np.full(1000, float(i))
        adapter = _adapter_holding(big)
        held.append({"array": weakref.ref(big), "adapter": weakref.ref(adapter)})
        held[-1]["class"] = weakref.ref(type(adapter))
        assert _traced_through_functions(adapter) == i
        del big, adapter
    _collect()
    alive = [[name for name, ref in refs.items() if ref() is not None] for refs in held]
    assert alive == [[]] * 5
