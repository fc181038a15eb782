"""The "jit" check: the call under ``jax.jit`` equals the eager call."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._subject import Subject


def check_jit(s: Subject) -> None:
    eager = s.adapter(*(jnp.asarray(a) for a in s.args))  # concrete: forward runs directly
    eager = eager if isinstance(eager, (tuple, list)) else (eager,)
    jitted, _ = s.plain
    for i, (got, expected) in enumerate(zip(jitted, eager)):
        s.expect_close(
            "jit", f"output {i}", got, np.asarray(expected), "same", None, ("under jit", "eager")
        )
