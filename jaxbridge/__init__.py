"""jaxbridge: call NumPy and SciPy routines from JAX, under ``jit``, ``vmap`` and ``grad``."""

from ._adapter import Adapter as Adapter

__all__ = ["Adapter"]
