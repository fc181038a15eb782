"""Bridged calls under ``shard_map`` (all mesh axes manual), on 4 forced CPU devices.

The device count is fixed when JAX starts its backend, and the rest of the suite runs in
this process with one device, so the checks (``_shard_map_checks.py``) run once, in a
subprocess started with ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` and 64-bit
mode on, which reports each check's outcome as JSON; each test here asserts one of them.
The environment passes through, so ``JAXBRIDGE_TRANSPORT`` picks the transport there too.

What the checks establish, each against the same computation in native ``jnp`` (unsharded,
or under the same ``shard_map`` for types and errors):

- one host call per shard, each seeing the shard's shape (also with ``vmap`` inside);
- outputs vary over the union of the inputs' varying mesh axes, as native values do
  (a 2x2 mesh included);
- forward values, ``grad`` with respect to sharded and to replicated arguments (whose
  gradient is the sum over shards, not 4 times it nor one shard's part), ``grad`` taken
  inside the body, ``jvp`` and ``hessian``, for ``LinearSolve`` (replicated and sharded
  matrices), ``Sigmoid`` and a custom adapter with host forward, backward and jvp;
- ``out_specs=P()`` on a per-device bridged value is refused with the native ``ValueError``.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts a 4-device JAX subprocess that compiles every check

CHECKS_SCRIPT = Path(__file__).resolve().parent / "_shard_map_checks.py"
DEVICES = 4


def _check_names() -> list[str]:
    """The functions decorated ``@check`` in the checks script, read without importing it
    (importing it would start JAX here in 64-bit mode)."""
    tree = ast.parse(CHECKS_SCRIPT.read_text())
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "check" for d in node.decorator_list)
    ]


CHECK_NAMES = _check_names()


@pytest.fixture(scope="module")
def report():
    """Run every check once in a 4-device subprocess; return its exit status, output and
    parsed report."""
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "")
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={DEVICES}".strip()
    env["JAX_ENABLE_X64"] = "1"
    env["JAX_PLATFORMS"] = "cpu"
    process = subprocess.run(
        [sys.executable, str(CHECKS_SCRIPT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = process.stdout.strip().splitlines()
    parsed = json.loads(lines[-1]) if process.returncode == 0 and lines else None
    return process, parsed


def test_checks_ran_on_four_devices_with_the_chosen_transport(report):
    process, parsed = report
    assert process.returncode == 0 and parsed is not None, process.stdout + process.stderr
    chosen = os.environ.get("JAXBRIDGE_TRANSPORT", "auto")
    assert parsed["transport"] == ("buffer_callback" if chosen == "auto" else chosen)
    assert parsed["pid"] != os.getpid()


def test_every_check_reported(report):
    _, parsed = report
    assert parsed is not None
    assert len(CHECK_NAMES) >= 15
    assert sorted(parsed["results"]) == sorted(CHECK_NAMES)


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_shard_map(report, name):
    process, parsed = report
    if parsed is None:
        pytest.fail(f"the checks did not run:\n{process.stdout}\n{process.stderr}")
    failure = parsed["results"][name]
    assert failure is None, f"{name} failed in the 4-device subprocess:\n{failure}"
