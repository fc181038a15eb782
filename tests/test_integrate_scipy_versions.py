"""``OdeSolve`` under a SciPy whose private solver code was not compared (faked in a fresh
process as SciPy 1.99): the package imports and runs without reading SciPy's private
classes (the dense output asked of ``OdeSolution``, SciPy's own LU calls), the adjoint's
gradient equal to the bit to the one here, ``sensitivity="steps"`` refused and
``"auto"`` the adjoint."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from _integrate_cases import Robertson

from jaxbridge.adapters.integrate import OdeSolve

ARGS = ([1.0, 0.0, 0.0], np.log([0.04, 3.0e7, 1.0e4]).tolist(), [0.0, 0.5, 4.0])
WEIGHTS = [[0.0, 0.0, 0.0], [1.0, 1e4, 1.0], [0.5, -1e4, 2.0]]

ELSEWHERE = """
import json, sys
import scipy
scipy.__version__ = "1.99.0"
import jax
import jax.numpy as jnp
from _integrate_cases import Robertson
from jaxbridge.adapters.integrate import OdeSolve, _dense, _lapack
args, weights, method = json.loads(sys.argv[1])
followed = [_dense.FOLLOWED, _lapack.direct(scipy.integrate.BDF) is not scipy.integrate.BDF]
try:
    OdeSolve(Robertson(), method=method, sensitivity="steps")
    refused = ""
except ValueError as error:
    refused = str(error)
with jax.enable_x64(True):
    solver = OdeSolve(Robertson(), method=method, rtol=1e-6, atol=1e-10)  # "auto"
    args = [jnp.asarray(a) for a in args]
    grads = jax.grad(lambda *a: jnp.sum(jnp.asarray(weights) * solver(*a)), (0, 1, 2))(*args)
print(json.dumps({"followed": followed, "refused": refused, "auto": solver.sensitivity_for(3),
                  "grads": [g.tolist() for g in grads]}))
"""


def _here(method):
    with jax.enable_x64(True):
        solver = OdeSolve(Robertson(), method, rtol=1e-6, atol=1e-10, sensitivity="adjoint")
        args = [jnp.asarray(a) for a in ARGS]
        loss = lambda *a: jnp.sum(jnp.asarray(WEIGHTS) * solver(*a))  # noqa: E731
        return [np.asarray(g) for g in jax.grad(loss, (0, 1, 2))(*args)]


def test_an_unknown_scipy_gets_scipys_public_path_and_the_same_gradient():
    tests = Path(__file__).parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")]),
    }
    for method in ("BDF", "RK45"):
        done = subprocess.run(
            [sys.executable, "-c", ELSEWHERE, json.dumps([ARGS, WEIGHTS, method])],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        there = json.loads(done.stdout.strip().splitlines()[-1])
        assert there["followed"] == [False, False]
        assert "SciPy 1.11-1.18; this is SciPy 1.99.0" in there["refused"]
        # "auto" takes the steps of BDF and RK45 here, and falls back to the adjoint there
        assert OdeSolve(Robertson(), method=method).sensitivity_for(3) == "steps"
        assert there["auto"] == "adjoint"
        for ours, theirs in zip(_here(method), there["grads"], strict=True):
            np.testing.assert_array_equal(ours, np.asarray(theirs))
