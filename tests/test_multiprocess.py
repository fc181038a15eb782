"""Beyond one process: a bridged gradient over a batch sharded across two JAX processes.

Two subprocesses (``_multiprocess_worker.py``) join one ``jax.distributed`` job on localhost
(CPU, gloo collectives, 2 devices each), split the right-hand sides of a ``LinearSolve``
over the 4 devices of a global mesh and take a gradient inside ``shard_map``. Each reports
what it computed; the tests compare it with the same gradient taken here, in one process
on the whole batch.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _multiprocess_worker import LOCAL_DEVICES, ROWS, Scale, data, loss

from jaxbridge.adapters import LinearSolve

pytestmark = pytest.mark.slow  # starts two JAX processes that join a distributed job

WORKER = Path(__file__).resolve().parent / "_multiprocess_worker.py"
PROCESSES = 2
TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Run the two processes (killed if they outlast ``TIMEOUT_S``); return each one's
    report, or fail with what every process printed."""
    folder = tmp_path_factory.mktemp("multiprocess")
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)  # a forced device count would fight `jax_num_cpu_devices`
    processes, logs = [], []
    for i in range(PROCESSES):
        log = open(folder / f"process{i}.log", "w+")
        logs.append(log)
        command = [sys.executable, str(WORKER), str(i), str(PROCESSES), str(port)]
        processes.append(
            subprocess.Popen(
                [*command, str(folder / f"process{i}.json")],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        )
    try:
        codes = [p.wait(timeout=TIMEOUT_S) for p in processes]
    except subprocess.TimeoutExpired:
        codes = None
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait()
    output = ""
    for i, log in enumerate(logs):
        log.seek(0)
        output += f"--- process {i} ---\n{log.read()}\n"
        log.close()
    if codes is None:
        pytest.fail(f"the processes did not finish within {TIMEOUT_S} s:\n{output}")
    if any(codes):
        pytest.fail(f"the processes exited with {codes}:\n{output}")
    return [json.loads((folder / f"process{i}.json").read_text()) for i in range(PROCESSES)]


@pytest.fixture(scope="module")
def single_process():
    """The loss and its gradients on the whole batch in this one process: bridged (on
    concrete arrays, so the transport plays no part) and native."""
    a, b, weights, s = data()
    with jax.enable_x64(True):
        args = (jnp.asarray(a), jnp.asarray(b), jnp.asarray(s))
        bridged = jax.value_and_grad(
            lambda a, b, s: loss(LinearSolve(), Scale(), a, b, weights, s), (0, 1, 2)
        )(*args)
        native = jax.value_and_grad(
            lambda a, b, s: loss(
                lambda a, b: jnp.linalg.solve(a, b[..., None])[..., 0],
                lambda x, s: s * x,
                a,
                b,
                weights,
                s,
            ),
            (0, 1, 2),
        )(*args)
    return jax.tree.map(np.asarray, bridged), jax.tree.map(np.asarray, native)


def test_single_process_bridged_gradient_matches_native(single_process):
    bridged, native = single_process
    for got, expected in zip(jax.tree.leaves(bridged), jax.tree.leaves(native), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_processes_shared_one_mesh(reports):
    chosen = os.environ.get("JAXBRIDGE_TRANSPORT", "auto")
    assert [r["process_index"] for r in reports] == list(range(PROCESSES))
    for r in reports:
        assert r["devices"] == PROCESSES * LOCAL_DEVICES
        assert r["transport"] == ("buffer_callback" if chosen == "auto" else chosen)


def test_loss_and_replicated_gradients_match_single_process(reports, single_process):
    (value, (grad_a, _, grad_s)), _ = single_process
    for r in reports:
        np.testing.assert_allclose(r["loss"], value, rtol=1e-12)
        np.testing.assert_allclose(r["grad_a"], grad_a, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(r["grad_s"], grad_s, rtol=1e-10)


def test_sharded_gradient_matches_single_process(reports, single_process):
    (_, (_, grad_b, _)), _ = single_process
    rows_per_process = ROWS // PROCESSES
    seen = []
    for i, r in enumerate(reports):
        for start, rows in r["grad_b_rows"].items():
            start = int(start)
            # each process holds only shards of its own slice of the batch
            assert i * rows_per_process <= start < (i + 1) * rows_per_process
            np.testing.assert_allclose(
                rows, grad_b[start : start + len(rows)], rtol=1e-10, atol=1e-14
            )
            seen.extend(range(start, start + len(rows)))
    assert sorted(seen) == list(range(ROWS))
