"""The one seam between jaxbridge and JAX's host-callback machinery.

Traced calls (under ``jit``, ``vmap``, ``grad`` tracing, ``scan``...) go through
``jax.pure_callback``; calls on concrete arrays run the host function directly, which is
faster and lets the host's own exception reach the caller unchanged in type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

HostFunction = Callable[..., tuple[np.ndarray, ...]]


def host_call(
    function: HostFunction,
    result_specs: Sequence[jax.ShapeDtypeStruct],
    args: Sequence[jax.Array],
    owner: str,
    method: str,
) -> tuple[jax.Array, ...]:
    """Call ``function`` on NumPy views of ``args``, returning JAX arrays of ``result_specs``.

    Under ``vmap`` the host sees every batch axis at the front of every argument (size 1
    where an argument is not batched) and makes one call for the whole batch. ``owner`` and
    ``method`` name the adapter's method for errors.
    """
    if not any(isinstance(a, Tracer) for a in args):
        return tuple(jnp.asarray(r) for r in function(*(np.asarray(a) for a in args)))

    def on_host(*arrays: jax.Array) -> tuple[np.ndarray, ...]:
        return function(*(np.asarray(a) for a in arrays))

    try:
        return tuple(
            jax.pure_callback(on_host, tuple(result_specs), *args, vmap_method="expand_dims")
        )
    except ValueError as error:
        if "do not support JVP" not in str(error):
            raise
        raise TypeError(_NOT_DIFFERENTIABLE[method].format(owner=owner)) from None


_NOT_DIFFERENTIABLE = {
    "forward": (
        "{owner}: jaxbridge adapters support reverse-mode differentiation (grad, vjp, "
        "jacrev) but not forward mode (jvp, jacfwd, hessian) yet. For second derivatives "
        "use jax.jacrev(jax.jacrev(f)) or jax.grad(jax.grad(f))."
    ),
    "backward": (
        "{owner}.backward runs on the host, so it cannot be differentiated again: no "
        "second derivatives through {owner}. An adapter gets them by overriding `pullback` "
        "with bridged calls that have backward passes of their own."
    ),
}
