"""``quad(func, a, b, args)``: SciPy's call with ``func`` written in JAX, integrated by
``Quad`` and differentiable in ``args``, ``a`` and ``b``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._shared._failure import OnFailure
from .._shared._jax_function import JaxIntegrand, Packing, float_dtype
from .quad import Quad


def quad(
    func: Callable,
    a: Any,
    b: Any,
    args: Any = (),
    full_output: int = 0,
    epsabs: float = 1.49e-8,
    epsrel: float = 1.49e-8,
    limit: int = 50,
    *,
    on_failure: OnFailure = "raise",
) -> tuple[jax.Array, jax.Array]:
    """``scipy.integrate.quad`` with ``func(x, *args)`` written in JAX: ``(y, abserr)``,
    ``y`` differentiable in ``args``, ``a`` and ``b`` (to second order) under ``jit``,
    ``vmap`` and ``grad``; infinite limits allowed.

    QUADPACK integrates on the host in float64 with ``func`` compiled for the CPU backend;
    the derivatives' integrands come from JAX (``Quad``'s rules). ``abserr`` is the error
    bound the result was checked against, ``max(epsabs, epsrel |y|)`` (``Quad`` refuses a
    result whose QUADPACK estimate is above it), not QUADPACK's estimate itself. Not
    offered: ``full_output``, ``weight``, ``points``.
    """
    if full_output:
        raise ValueError("quad: full_output is not offered (QUADPACK's details stay on the host).")
    args = args if isinstance(args, tuple) else (args,)
    dtype = float_dtype()
    packing = Packing.of(args)
    integrand = JaxIntegrand(func, Packing.of(np.float64(0.0)), packing, role="func")
    solver = Quad(integrand, epsabs=epsabs, epsrel=epsrel, limit=limit, on_failure=on_failure)
    y = solver(packing.flat(args, dtype), jnp.asarray(a, dtype), jnp.asarray(b, dtype))
    bound = jnp.maximum(jnp.asarray(epsabs, y.dtype), epsrel * jnp.abs(jax.lax.stop_gradient(y)))
    return y, bound
