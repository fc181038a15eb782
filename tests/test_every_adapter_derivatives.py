"""Every ready adapter's derivatives, in every mode it offers, in the quick suite: one
example per case of the property suite (``tests/test_properties_*.py``), its simplest input,
checked by ``check_adapter``'s "grad" and "jvp" (against central differences in float64).

The property suite draws many examples of every case, but only one case per family runs
without ``slow``: a wrong derivative rule of any other adapter passed every quick test."""

import importlib

import jax
import numpy as np
import pytest
from hypothesis import find

from jaxbridge.testing import check_adapter, inputs

FAMILIES = ("core", "integrate", "interpolate", "linalg", "optimize", "signal", "sparse")
FAMILIES += ("ndimage", "spatial", "special", "stats")


def _cases():
    for family in FAMILIES:
        module = importlib.import_module(f"test_properties_{family}")
        for case in module.CASES:
            yield pytest.param(case, id=f"{family}-{case.id}")


@pytest.mark.parametrize("case", list(_cases()))
def test_derivatives_in_every_mode_against_finite_differences(case):
    with jax.enable_x64(True):
        strategy = inputs(case.adapter, dtype=np.float64, sizes=case.sizes)
        args = case.hold(find(strategy, lambda _: True))
        checks = tuple(c for c in ("grad", "jvp") if c not in case.left_out)
        check_adapter(case.adapter, *args, checks=checks, rtol=case.rtol, atol=case.atol)
