"""The backend-differential test: every case of the property suite (``test_properties_*.py``)
through ``jaxbridge.testing.check_backends``, its value, vjp, jvp, vmap of each and second
derivatives on the accelerator JAX finds against the CPU backend of the same process.

It skips where there is no accelerator (CI). On a TPU (``docs/accelerators.md``), float32 runs
with 64-bit mode off, as models run there, and float64 with it on (``JAX_ENABLE_X64=1``: the
bridge's ``pure_callback`` needs 64-bit mode globally for float64 results). The first
derivatives are the ``tpu`` subset, the second ones ``tpu_second`` (each composition compiles
a program of its own: on a TPU, most of the time)::

    bash .device/tpu-check.sh -m tpu
    JAX_ENABLE_X64=1 bash .device/tpu-check.sh -m tpu
    JAX_ENABLE_X64=1 bash .device/tpu-check.sh -m tpu_second
"""

from __future__ import annotations

import importlib
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from jaxbridge.testing import check_backends, inputs
from jaxbridge.testing._backends import accelerator

CASES = [
    case
    for path in sorted(Path(__file__).parent.glob("test_properties_*.py"))
    for case in importlib.import_module(path.stem).CASES
]

pytestmark = [
    pytest.mark.skipif(
        accelerator() is None, reason="no accelerator: JAX's default backend is the CPU"
    ),
]


@pytest.mark.parametrize(
    "second_order",
    [
        pytest.param(False, id="first", marks=pytest.mark.tpu),
        pytest.param(True, id="second", marks=pytest.mark.tpu_second),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
# no shrinking: check_backends' message prints the inputs, and on a TPU each shrinking step
# compiles again (a failing case cost about 60 s there, a passing one 4)
@settings(
    max_examples=1,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    database=None,
)
@given(data=st.data())
def test_same_on_the_accelerator_as_on_the_cpu(case, dtype, second_order, data):
    x64 = bool(jax.config.read("jax_enable_x64"))
    if (dtype == np.float64) != x64:
        pytest.skip("float64 runs with 64-bit mode on (JAX_ENABLE_X64=1), float32 with it off")
    strategy = inputs(case.adapter, dtype=dtype, sizes=case.sizes, max_size=2)
    args = case.hold(data.draw(strategy, label="args"))
    check_backends(case.adapter, *args, second_order=second_order)
