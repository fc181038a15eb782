"""One of the processes of ``test_multiprocess.py``: a bridged gradient over a batch sharded
across processes.

``python tests/_multiprocess_worker.py PROCESS_ID NUM_PROCESSES PORT OUT.json`` joins the
``jax.distributed`` job whose coordinator (process 0) listens on ``localhost:PORT``, builds a
one-axis mesh over every process's CPU device, gives each process its slice of the batch,
and takes the gradient of a loss that runs ``LinearSolve`` and a host-backward adapter
inside ``shard_map`` (``a`` and a scale replicated, the right-hand sides sharded, the
per-shard parts summed with ``psum``). It writes the loss, the gradients in ``a`` and the
scale, and its own rows of the gradient in ``b`` to OUT.json.
"""

from __future__ import annotations

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxbridge as jb
from jaxbridge.adapters import LinearSolve

ROWS = 8  # the global batch: ROWS right-hand sides of size 3
LOCAL_DEVICES = 2  # CPU devices per process: the batch is split over processes and devices


class Scale(jb.Adapter):
    """``s x``, with its backward on the host."""

    signature = "(),()->()"
    vectorized = True

    def forward(self, x, s):
        return s * x

    def backward(self, res, g):
        x, s, _ = res
        return s * g, x * g


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``a`` (3, 3), ``b`` (ROWS, 3), the loss weights (ROWS, 3) and a scale, the same in
    every process."""
    rng = np.random.default_rng(0)
    a = np.eye(3) * 3 + rng.normal(size=(3, 3)) * 0.3
    return a, rng.normal(size=(ROWS, 3)), rng.normal(size=(ROWS, 3)), 1.3


def loss(solve, scale, a, b, weights, s):
    """The loss on one process's (or the whole) batch."""
    return jnp.sum(weights * jnp.sin(scale(solve(a, b), s)))


def main() -> None:
    process_id, num_processes, port, out = sys.argv[1:]
    process_id, num_processes = int(process_id), int(num_processes)
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_num_cpu_devices", LOCAL_DEVICES)
    jax.distributed.initialize(
        coordinator_address=f"localhost:{port}",
        num_processes=num_processes,
        process_id=process_id,
        initialization_timeout=60,
    )
    devices = jax.devices()
    assert jax.process_count() == num_processes, jax.process_count()
    assert len(jax.local_devices()) == LOCAL_DEVICES, jax.local_devices()
    assert len(devices) == num_processes * LOCAL_DEVICES, devices
    mesh = Mesh(np.array(devices), ("p",))

    a, b, weights, s = data()
    per_process = ROWS // num_processes
    mine = slice(process_id * per_process, (process_id + 1) * per_process)
    replicated, sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("p"))
    a_global = jax.make_array_from_process_local_data(replicated, a)
    s_global = jax.make_array_from_process_local_data(replicated, np.asarray(s))
    b_global = jax.make_array_from_process_local_data(sharded, b[mine], b.shape)
    w_global = jax.make_array_from_process_local_data(sharded, weights[mine], weights.shape)

    def local(a, b, weights, s):
        return jax.lax.psum(loss(LinearSolve(), Scale(), a, b, weights, s), "p")

    total = jax.shard_map(local, mesh=mesh, in_specs=(P(), P("p"), P("p"), P()), out_specs=P())
    value, (grad_a, grad_b, grad_s) = jax.jit(jax.value_and_grad(total, (0, 1, 3)))(
        a_global, b_global, w_global, s_global
    )
    rows = {
        int(shard.index[0].start or 0): np.asarray(shard.data).tolist()
        for shard in grad_b.addressable_shards
    }
    result = {
        "process_index": jax.process_index(),
        "transport": jb.transport(),
        "devices": len(devices),
        "loss": float(np.asarray(value.addressable_data(0))),
        "grad_a": np.asarray(grad_a.addressable_data(0)).tolist(),
        "grad_s": float(np.asarray(grad_s.addressable_data(0))),
        "grad_b_rows": rows,  # first global row of each local shard -> its rows
    }
    with open(out, "w") as file:
        json.dump(result, file)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
