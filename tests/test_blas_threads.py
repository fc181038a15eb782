"""``blas_threads``: BLAS held to that many threads while an adapter's host methods run, in
one thread, in the batch's host threads and in worker processes, and given back after."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _process_adapters import BlasProbe, BlasProbeInProcesses, blas_threads
from threadpoolctl import threadpool_info, threadpool_limits

import jaxbridge as jb

pytestmark = pytest.mark.skipif(
    not any(
        i["internal_api"] == "openblas" and i["threading_layer"] == "pthreads"
        for i in threadpool_info()
    ),
    reason="blas_threads holds OpenBLAS's own thread server, and none is loaded here",
)


class Free(BlasProbe):
    blas_threads = None


class Shared(BlasProbe):
    threads = 2


def test_the_setting_is_checked_when_the_class_is_defined():
    for wrong in (0, True, 1.5, "1"):
        with pytest.raises(TypeError, match=r"Wrong: `blas_threads` must be None .* got "):
            type("Wrong", (jb.Adapter,), {"blas_threads": wrong})


@pytest.mark.parametrize("adapter", [BlasProbe(), Shared()], ids=["one thread", "threads = 2"])
@jax.enable_x64(True)
def test_forward_backward_and_jvp_run_with_one_blas_thread(adapter):
    x = jnp.linspace(0.5, 2.0, 12).reshape(4, 3)
    with threadpool_limits(limits=2, user_api="blas"):
        np.testing.assert_array_equal(jax.jit(jax.vmap(adapter))(x), x)
        assert blas_threads() == 2  # given back
        grad = jax.jit(jax.grad(lambda x: jax.vmap(adapter)(x).sum()))(x)
        np.testing.assert_array_equal(grad, np.ones_like(x))
        _, dy = jax.jit(lambda x, t: jax.jvp(jax.vmap(adapter), (x,), (t,)))(x, 3 * x)
        np.testing.assert_array_equal(dy, 3 * x)
        assert blas_threads() == 2


@jax.enable_x64(True)
def test_none_leaves_the_process_setting():
    x = jnp.linspace(0.5, 2.0, 3)
    with threadpool_limits(limits=2, user_api="blas"):
        np.testing.assert_array_equal(jax.jit(Free())(x), 2 * x)


@jax.enable_x64(True)
def test_the_threads_are_given_back_when_forward_raises():
    x = jnp.array([[1.0, 2.0], [-1.0, 2.0]])
    with threadpool_limits(limits=2, user_api="blas"):
        # (read in the block: on a GPU the error surfaces when the result is read)
        with (
            pytest.raises(ValueError, match="BlasProbe.forward raised ValueError"),
            jb.host_errors(),
        ):
            jax.block_until_ready(jax.vmap(BlasProbe())(x))
        assert blas_threads() == 2


@pytest.mark.slow  # starts three worker processes (seconds: they import JAX and SciPy)
@jax.enable_x64(True)
def test_worker_processes_hold_their_own_blas(monkeypatch):
    # the workers start (spawn) with this environment: OpenBLAS at 2 threads there
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    x = jnp.linspace(0.5, 2.0, 12).reshape(4, 3)
    np.testing.assert_array_equal(jax.jit(jax.vmap(BlasProbeInProcesses()))(x), x)
    grad = jax.jit(jax.grad(lambda x: jax.vmap(BlasProbeInProcesses())(x).sum()))(x)
    np.testing.assert_array_equal(grad, np.ones_like(x))


@jax.enable_x64(True)
def test_a_count_given_back_on_another_thread_is_restored_by_the_next_call():
    # two host calls that overlap: the main thread's lowers the count and leaves first, the
    # other's gives it back, which OpenBLAS ignores (a count the main thread lowered can
    # only be raised there); the next call restores it
    from jaxbridge import _blas

    def on_another_thread(step):
        thread = threading.Thread(target=step)
        thread.start()
        thread.join()

    with threadpool_limits(limits=2, user_api="blas"):
        _blas._hold(1)
        on_another_thread(lambda: _blas._hold(1))
        _blas._release()
        on_another_thread(_blas._release)
        x = jnp.linspace(0.5, 2.0, 3)
        np.testing.assert_array_equal(jax.jit(BlasProbe())(x), x)
        assert blas_threads() == 2
