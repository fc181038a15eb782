"""The shard_map checks, run by ``test_shard_map.py`` in a subprocess with 4 CPU devices.

``python tests/_shard_map_checks.py`` needs ``XLA_FLAGS=--xla_force_host_platform_device_count=4``
set before JAX starts (the rest of the suite runs with one device in the pytest process). It
runs every check, each on its own, and prints one JSON object as its last line:
``{check name: null (passed) or the failure's traceback}``.

Every bridged program runs inside ``shard_map`` with all mesh axes manual, and is compared
with the same program written in native ``jnp`` run unsharded (or, for types and errors,
with the native program under the same ``shard_map``).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve, Sigmoid

jax.config.update("jax_enable_x64", True)

N_DEVICES = 4
CHECKS: dict[str, Callable[[], None]] = {}
CALLS: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = []  # (method, x shape, w shape)


def check(function: Callable[[], None]) -> Callable[[], None]:
    CHECKS[function.__name__] = function
    return function


class Cubic(jb.Adapter):
    """``w x³`` with host forward, backward and jvp, recording every host call it gets."""

    signature = "(),()->()"
    vectorized = True

    def forward(self, x, w):
        CALLS.append(("forward", x.shape, w.shape))
        return w * x**3

    def backward(self, res, g):
        x, w, _ = res
        CALLS.append(("backward", x.shape, w.shape))
        return 3 * w * x**2 * g, x**3 * g

    def jvp(self, res, tangents):
        x, w, _ = res
        dx, dw = tangents
        CALLS.append(("jvp", x.shape, w.shape))
        out = np.zeros(np.broadcast_shapes(x.shape, w.shape))
        if dx is not None:
            out = out + 3 * w * x**2 * dx
        if dw is not None:
            out = out + x**3 * dw
        return out


def cubic_native(x, w):
    return w * x**3


# --- data: a replicated matrix `a`, 8 right-hand sides `b` (2 per shard) --------------------

MESH = Mesh(np.array(jax.devices()), ("i",))
RNG = np.random.default_rng(0)
A = jnp.asarray(np.eye(3) * 3 + RNG.normal(size=(3, 3)) * 0.3)
B = jnp.asarray(RNG.normal(size=(8, 3)))
AS = jnp.asarray(np.eye(3) * 3 + RNG.normal(size=(8, 3, 3)) * 0.3)  # one matrix per row
WEIGHTS = jnp.asarray(RNG.normal(size=(8, 3)))
X = jnp.asarray(RNG.normal(size=8))
W = jnp.asarray(1.7)
HALF = jnp.asarray(0.5)


def put(x, spec, mesh=MESH):
    return jax.device_put(x, NamedSharding(mesh, spec))


def smap(f, in_specs, out_specs, mesh=MESH):
    return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))


def close(got, expected):
    for g, e in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
        assert np.shape(g) == np.shape(e), (np.shape(g), np.shape(e))
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-10, atol=1e-12)


@jax.jit
def solve_native(a, b):
    """``LinearSolve``'s gufunc semantics in native JAX."""
    return jnp.linalg.solve(a, b[..., None])[..., 0]


def solve_loss(solve, axis="i"):
    """A scalar loss over all shards: each shard's part, summed with ``psum``."""

    def local(a, b, weights):
        return jax.lax.psum(jnp.sum(weights * jnp.sin(solve(a, b))), axis)

    return local


def replicated_a_loss(solve):
    """The loss with ``a`` replicated and ``b`` sharded, as a function of global arrays."""
    sharded = smap(solve_loss(solve), (P(), P("i"), P("i")), P())
    return lambda a, b: sharded(put(a, P()), put(b, P("i")), put(WEIGHTS, P("i")))


def unsharded_loss(a, b):
    return jnp.sum(WEIGHTS * jnp.sin(solve_native(a, b)))


# --- forward, typing, host calls -------------------------------------------------------------


@check
def linear_solve_forward():
    f = smap(LinearSolve(), (P(), P("i")), P("i"))
    got = f(put(A, P()), put(B, P("i")))
    close(got, solve_native(A, B))
    assert got.sharding.spec == P("i"), got.sharding


@check
def batched_matrices_sharded_forward():
    f = smap(LinearSolve(), (P("i"), P("i")), P("i"))
    close(f(put(AS, P("i")), put(B, P("i"))), solve_native(AS, B))


@check
def outputs_typed_like_native():
    """Inside shard_map a bridged output varies over the union of its inputs' varying axes,
    exactly where the native equivalent does."""
    seen = {}

    def record(name, solve, in_specs):
        def body(a, b):
            out = solve(a, b)
            seen[name] = frozenset(jax.typeof(out).mat.varying)
            return out

        return jax.shard_map(body, mesh=MESH, in_specs=in_specs, out_specs=P("i"))

    cases = {
        "a replicated, b sharded": ((P(), P("i")), (A, B)),
        "a sharded, b replicated": ((P("i"), P()), (AS, B[0])),
        "both sharded": ((P("i"), P("i")), (AS, B)),
    }
    for label, (specs, args) in cases.items():
        placed = [put(x, s) for x, s in zip(args, specs)]
        jax.eval_shape(record(("bridged", label), LinearSolve(), specs), *placed)
        jax.eval_shape(record(("native", label), solve_native, specs), *placed)
        assert seen["bridged", label] == seen["native", label] == {"i"}, seen

    def both_replicated(a, b):
        seen["bridged"] = frozenset(jax.typeof(LinearSolve()(a, b)).mat.varying)
        seen["native"] = frozenset(jax.typeof(solve_native(a, b)).mat.varying)
        return LinearSolve()(a, b)

    # replicated in, replicated out: out_specs=P() is accepted, as natively
    got = smap(both_replicated, (P(), P()), P())(put(A, P()), put(B, P()))
    assert seen["bridged"] == seen["native"] == frozenset(), seen
    close(got, solve_native(A, B))


@check
def one_host_call_per_shard():
    CALLS.clear()
    got = smap(Cubic(), (P("i"), P()), P("i"))(put(X, P("i")), put(W, P()))
    jax.block_until_ready(got)
    close(got, cubic_native(X, W))
    assert sorted(CALLS) == [("forward", (2,), (1,))] * N_DEVICES, CALLS


@check
def vmap_inside_shard_map_one_call_per_shard():
    rows = jnp.asarray(RNG.normal(size=(8, 5)))

    def body(x, w):
        return jax.vmap(Cubic(), (0, None))(x, w)

    CALLS.clear()
    got = smap(body, (P("i"), P()), P("i"))(put(rows, P("i")), put(W, P()))
    jax.block_until_ready(got)
    close(got, cubic_native(rows, W))
    assert sorted(CALLS) == [("forward", (2, 5), (1, 1))] * N_DEVICES, CALLS


@check
def vmap_of_linear_solve_inside_shard_map():
    body = jax.vmap(LinearSolve(), (0, None))  # one matrix per row, a shared right-hand side
    got = smap(body, (P("i"), P()), P("i"))(put(AS, P("i")), put(B[0], P()))
    close(got, solve_native(AS, B[0]))


# --- reverse mode ----------------------------------------------------------------------------


@check
def grad_wrt_replicated_and_sharded():
    """A replicated argument's gradient is the sum over the shards (a 4x error or device 0's
    part alone are the known ways to get it wrong)."""
    got = jax.jit(jax.grad(replicated_a_loss(LinearSolve()), (0, 1)))(A, B)
    close(got, jax.jit(jax.grad(unsharded_loss, (0, 1)))(A, B))


@check
def grad_with_batched_matrices_sharded():
    sharded = smap(solve_loss(LinearSolve()), (P("i"), P("i"), P("i")), P())

    def loss(a, b):
        return sharded(put(a, P("i")), put(b, P("i")), put(WEIGHTS, P("i")))

    close(jax.jit(jax.grad(loss, (0, 1)))(AS, B), jax.jit(jax.grad(unsharded_loss, (0, 1)))(AS, B))


@check
def grad_inside_shard_map_like_native():
    """``jax.grad`` taken inside the shard_map body: the replicated argument's gradient is
    summed over the shards by the transpose of the implicit cast, as natively."""

    def body(solve):
        def inner(a, b, weights):
            return jax.grad(lambda a, b: jnp.sum(weights * jnp.sin(solve(a, b))), (0, 1))(a, b)

        return smap(inner, (P(), P("i"), P("i")), (P(), P("i")))

    args = (put(A, P()), put(B, P("i")), put(WEIGHTS, P("i")))
    got = body(LinearSolve())(*args)
    close(got, body(solve_native)(*args))
    close(got, jax.jit(jax.grad(unsharded_loss, (0, 1)))(A, B))


@check
def host_backward_grad_wrt_replicated_weight():
    """A custom adapter whose backward runs on the host: the replicated ``w``'s gradient is
    the sum over shards, one backward call per shard."""

    def loss(cubic):
        sharded = smap(lambda x, w: jax.lax.psum(jnp.sum(cubic(x, w)), "i"), (P("i"), P()), P())
        return lambda x, w: sharded(put(x, P("i")), put(w, P()))

    CALLS.clear()
    got = jax.jit(jax.grad(loss(Cubic()), (0, 1)))(X, W)
    jax.block_until_ready(got)
    expected = jax.jit(jax.grad(lambda x, w: jnp.sum(cubic_native(x, w)), (0, 1)))(X, W)
    close(got, expected)
    backward = sorted(c for c in CALLS if c[0] == "backward")
    assert backward == [("backward", (2,), (1,))] * N_DEVICES, CALLS


class FirstOnly(jb.Adapter):
    """``2 x``; ``y`` is ignored, its cotangent ``None`` (zero)."""

    signature = "(),()->()"
    vectorized = True

    def forward(self, x, y):
        return 2 * x

    def pullback(self, res, g):
        return 2 * g, None


@check
def zero_cotangent_of_sharded_argument():
    """A ``None`` cotangent becomes zeros typed like the argument: varying if it is sharded."""
    for y, spec in ((X, P("i")), (W, P())):
        sharded = smap(
            lambda x, y: jax.lax.psum(jnp.sum(FirstOnly()(x, y)), "i"), (P("i"), spec), P()
        )
        got = jax.jit(jax.grad(lambda x, y: sharded(put(x, P("i")), put(y, spec)), (0, 1)))(X, y)
        close(got, (jnp.full(X.shape, 2.0), jnp.zeros_like(y)))


@check
def sigmoid_grad():
    x = jnp.asarray(RNG.normal(size=(8, 3)))
    sharded = smap(lambda x: jax.lax.psum(jnp.sum(Sigmoid()(x) ** 2), "i"), P("i"), P())
    got = jax.jit(jax.grad(lambda x: sharded(put(x, P("i")))))(x)
    close(got, jax.jit(jax.grad(lambda x: jnp.sum(jax.nn.sigmoid(x) ** 2)))(x))


@check
def two_axis_mesh_union_of_axes():
    """On a 2x2 mesh, ``a`` varies over 'j' only and ``b`` over both: the output varies over
    both, and ``a``'s gradient is summed over 'i'."""
    mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("i", "j"))
    a = AS[:2]  # (2, 3, 3), split over 'j'
    b = B.reshape(4, 2, 3)  # split over 'i' and 'j'
    weights = WEIGHTS.reshape(4, 2, 3)
    seen = {}

    def local(a, b, weights):
        out = LinearSolve()(a, b)
        seen["varying"] = frozenset(jax.typeof(out).mat.varying)
        return jax.lax.psum(jnp.sum(weights * jnp.sin(out)), ("i", "j"))

    sharded = smap(local, (P("j"), P("i", "j"), P("i", "j")), P(), mesh=mesh)

    def loss(a, b):
        return sharded(
            put(a, P("j"), mesh), put(b, P("i", "j"), mesh), put(weights, P("i", "j"), mesh)
        )

    def native(a, b):
        return jnp.sum(weights * jnp.sin(solve_native(a, b)))

    close(loss(a, b), jax.jit(native)(a, b))
    assert seen["varying"] == {"i", "j"}, seen
    close(jax.jit(jax.grad(loss, (0, 1)))(a, b), jax.jit(jax.grad(native, (0, 1)))(a, b))


# --- forward mode and second order -----------------------------------------------------------


@check
def jvp_wrt_replicated_and_sharded():
    sharded = smap(LinearSolve(), (P(), P("i")), P("i"))

    def f(a, b):
        return sharded(put(a, P()), put(b, P("i")))

    da = jnp.asarray(RNG.normal(size=A.shape))
    db = jnp.asarray(RNG.normal(size=B.shape))
    got = jax.jit(lambda *p: jax.jvp(f, p[:2], p[2:]))(A, B, da, db)
    close(got, jax.jit(lambda *p: jax.jvp(solve_native, p[:2], p[2:]))(A, B, da, db))


@check
def host_jvp_wrt_replicated_weight():
    sharded = smap(Cubic(), (P("i"), P()), P("i"))
    dx = jnp.asarray(RNG.normal(size=X.shape))
    CALLS.clear()
    got = jax.jvp(lambda x, w: sharded(put(x, P("i")), put(w, P())), (X, W), (dx, HALF))
    jax.block_until_ready(got)
    close(got, jax.jvp(cubic_native, (X, W), (dx, HALF)))
    assert sorted(c for c in CALLS if c[0] == "jvp") == [("jvp", (2,), (1,))] * N_DEVICES, CALLS


@check
def hessian_of_psummed_loss():
    a, b = A[:2, :2] + jnp.eye(2), B[:4, :2]  # small: the Hessian has (2*2 + 4*2)^2 entries
    weights = WEIGHTS[:4, :2]

    def loss(solve):
        sharded = smap(solve_loss(solve), (P(), P("i"), P("i")), P())
        return lambda a, b: sharded(put(a, P()), put(b, P("i")), put(weights, P("i")))

    def native(a, b):
        return jnp.sum(weights * jnp.sin(solve_native(a, b)))

    got = jax.jit(jax.hessian(loss(LinearSolve()), (0, 1)))(a, b)
    close(got, jax.jit(jax.hessian(native, (0, 1)))(a, b))


@check
def sigmoid_hessian():
    x = jnp.asarray(RNG.normal(size=(4,)))
    sharded = smap(lambda x: jax.lax.psum(jnp.sum(Sigmoid()(x) ** 3), "i"), P("i"), P())
    got = jax.jit(jax.hessian(lambda x: sharded(put(x, P("i")))))(x)
    close(got, jax.jit(jax.hessian(lambda x: jnp.sum(jax.nn.sigmoid(x) ** 3)))(x))


# --- what native JAX refuses -----------------------------------------------------------------


def refusal(solve) -> Exception | None:
    f = smap(solve, (P(), P("i")), P())  # a per-device value, claimed replicated
    try:
        f(put(A, P()), put(B, P("i")))
    except Exception as error:
        return error
    return None


@check
def out_specs_replicated_refused_like_native():
    native, bridged = refusal(solve_native), refusal(LinearSolve())
    assert isinstance(native, ValueError), repr(native)
    assert isinstance(bridged, ValueError), repr(bridged)
    for error in (native, bridged):
        assert "replicat" in str(error), str(error)


def main() -> None:
    if len(jax.devices()) != N_DEVICES:
        raise SystemExit(f"needs {N_DEVICES} devices (XLA_FLAGS), got {jax.devices()}")
    results = {}
    for name, function in CHECKS.items():
        try:
            function()
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc()
    sys.stdout.write(
        json.dumps({"transport": jb.transport(), "pid": os.getpid(), "results": results}) + "\n"
    )


if __name__ == "__main__":
    main()
