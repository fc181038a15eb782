"""``blas_threads``: BLAS held to that many threads while an adapter's host methods run, in
one thread, in the batch's host threads and in worker processes, and given back after."""

import functools
import importlib
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


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@jax.enable_x64(True)
def test_linear_solve_holds_one_blas_thread_forward_backward_and_jvp(monkeypatch, assume_a):
    """``LinearSolve``'s host code (its forward and the saved factors' solves of its rules)
    runs with OpenBLAS held to one thread; a subclass with ``blas_threads = None`` leaves
    the process's setting."""
    from jaxbridge.adapters.linalg import LinearSolve
    from jaxbridge.adapters.linalg import linear_solve as module

    seen = []

    def recorded(cls):
        forward = cls.forward

        @functools.wraps(forward)  # (its signature: the bridge reads its keywords)
        def record(self, *args, **kwargs):
            seen.append((cls.__name__, blas_threads()))
            return forward(self, *args, **kwargs)

        monkeypatch.setattr(cls, "forward", record)

    solver = LinearSolve(assume_a=assume_a)
    recorded(LinearSolve)
    recorded(module._CholeskySolve if assume_a == "pos" else module._LUSolve)
    a = jnp.asarray(np.eye(40) * 4 + np.random.default_rng(0).normal(size=(40, 40)) / 10)
    a = (a + a.T) / 2
    b = jnp.linspace(-1.0, 1.0, 40)
    with threadpool_limits(limits=2, user_api="blas"):
        x = jax.jit(solver)(a, b)
        np.testing.assert_allclose(a @ x, b, rtol=0, atol=1e-12)
        grad = jax.jit(jax.grad(lambda a, b: solver(a, b).sum(), (0, 1)))(a, b)
        lam = np.linalg.solve(np.asarray(a).T, np.ones(40))  # d(sum x)/db = a^-T 1
        np.testing.assert_allclose(grad[1], lam, rtol=1e-12)
        jax.jit(lambda a, b: jax.jvp(solver, (a, b), (a, b)))(a, b)
        assert blas_threads() == 2  # given back
    names = {name for name, _ in seen}
    assert len(names) == 2 and len(seen) >= 3  # the forward and the rules' solves ran
    assert all(threads == 1 for _, threads in seen), seen

    class AllThreads(LinearSolve):
        blas_threads = None

    seen.clear()
    with threadpool_limits(limits=2, user_api="blas"):
        jax.jit(AllThreads(assume_a=assume_a))(a, b)
    assert seen == [("LinearSolve", 2)]


def _record_host_calls(monkeypatch, cls, methods, seen):
    """Wrap ``cls``'s host ``methods`` to note, at each call, the BLAS threads allowed."""
    for method in methods:
        original = getattr(cls, method)

        def record(self, *args, _original=original, _method=method, **kwargs):
            seen.append((f"{cls.__name__}.{_method}", blas_threads()))
            return _original(self, *args, **kwargs)

        # (its signature: the bridge reads the method's keywords)
        monkeypatch.setattr(cls, method, functools.wraps(original)(record))


def _lsq_linear():
    from jaxbridge.adapters.optimize import LsqLinear

    rng = np.random.default_rng(0)
    a, b = jnp.asarray(rng.normal(size=(12, 4))), jnp.asarray(rng.normal(size=12))
    box = jnp.full(4, -10.0), jnp.full(4, 10.0)
    solver = LsqLinear()
    return LsqLinear, ["forward", "backward", "jvp"], lambda a: solver(a, b, *box)[0], a


def _nnls():
    from jaxbridge.adapters.optimize import Nnls

    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.normal(size=(12, 4)))
    b = a @ jnp.array([1.0, 2.0, 0.5, 1.5]) + jnp.asarray(rng.normal(size=12)) / 100
    solver = Nnls()
    return Nnls, ["forward", "backward", "jvp"], lambda a: solver(a, b)[0], a


def _linprog():
    from jaxbridge.adapters.optimize import Linprog

    solver = Linprog()  # optimum at the vertex x = (0.5, 1): x1 + x2 <= 1.5 and x2 <= 1
    upper, b_ub = jnp.ones(2), jnp.array([1.5])
    return (
        Linprog,
        ["forward", "backward", "jvp"],
        lambda a: solver(jnp.array([-1.0, -2.0]), a, b_ub, upper=upper)[0],
        jnp.array([[1.0, 1.0]]),
    )


def _spline_filter():
    from jaxbridge.adapters.ndimage import SplineFilter

    image = jnp.asarray(np.random.default_rng(0).normal(size=(6, 5)))
    return SplineFilter, ["forward"], SplineFilter(), image


def _expm_multiply():
    from jaxbridge.adapters.sparse import ExpmMultiply

    # (the module, not SciPy's call of the same name that the package exports)
    module = importlib.import_module("jaxbridge.adapters.sparse.expm_multiply")

    a = np.diag([-1.0, -2.0, -3.0]) + np.diag([0.5, 0.25], 1)
    pattern = np.nonzero(a)
    b = jnp.array([1.0, -1.0, 2.0])
    adapter = ExpmMultiply(*_csr(a))
    return module._ExpmMultiplyDataCotangent, ["forward"], lambda d: adapter(d, b, 0.5), a[pattern]


def _svds():
    from jaxbridge.adapters.sparse import Svds, _bordered

    a = np.diag([4.0, 3.0, 2.0, 1.0])[:, :3] + 0.1 * np.eye(4, 3, -1)
    return (
        (Svds, _bordered._BorderedSolve),
        ["forward"],
        lambda d: Svds(*_csr(a), k=2)(d)[0],
        a[np.nonzero(a)],
    )


def _operator_eigsh():
    from _chain import Chain

    from jaxbridge.adapters.sparse import OperatorEigsh, _bordered

    theta = jnp.asarray(1 + 0.5 * np.random.default_rng(0).uniform(size=9))
    eigsh = OperatorEigsh(Chain(8), k=2, which="SA")
    return (OperatorEigsh, _bordered._BorderedSolve), ["forward"], lambda t: eigsh(t)[1], theta


def _csr(a):
    import scipy.sparse

    m = scipy.sparse.csr_array(a)
    return m.indices, m.indptr, m.shape


@pytest.mark.parametrize(
    "case",
    [_lsq_linear, _nnls, _linprog, _spline_filter, _expm_multiply, _svds, _operator_eigsh],
    ids=lambda case: case.__name__.strip("_"),
)
@jax.enable_x64(True)
def test_adapters_held_since_the_audit_hold_one_blas_thread(monkeypatch, case):
    """The adapters whose host work woke OpenBLAS's threads (benchmarks/blas_threads.py's
    audit) run their forward and their rules' host code with OpenBLAS held to one thread:
    each recorded host method ran, and at one thread."""
    classes, methods, f, x = case()
    classes = classes if isinstance(classes, tuple) else (classes,)
    seen = []
    for cls in classes:
        assert cls.blas_threads == 1
        _record_host_calls(monkeypatch, cls, methods, seen)
    with threadpool_limits(limits=2, user_api="blas"):
        jax.jit(f)(x)
        weights = jnp.linspace(0.5, 1.5, np.size(f(x))).reshape(np.shape(f(x)))
        jax.jit(jax.grad(lambda x: jnp.sum(weights * f(x))))(x)
        if "jvp" in methods:
            jax.jit(lambda x: jax.jvp(f, (x,), (x,)))(x)
        assert blas_threads() == 2  # given back
    expected = {f"{cls.__name__}.{method}" for cls in classes for method in methods}
    assert {name for name, _ in seen} == expected, seen
    assert all(threads == 1 for _, threads in seen), seen
