"""What adapter families build on beyond the public API: semi-public.

``jaxbridge.adapters`` uses these, and so may a library of adapters built on jaxbridge; they
are documented and tested, but may change in a minor release (the changelog says when).
Users writing an adapter need only ``jaxbridge``'s public names.

- ``arg_names(cls)``: the names of an adapter class's ``forward`` arguments, checked against
  its ``signature`` (for errors that name an argument).
- ``as_array(owner, name, value)``: ``value`` as a JAX array, or a ``TypeError`` naming the
  adapter and argument.
- ``batch_element(index, batch)``: the index of one element of a batch in an array whose
  batch axes (``batch``) may be broadcast (size 1).
- ``bind_dims(owner, names, cores, shapes)``: the sizes of a signature's dimensions from the
  arguments' shapes, or a ``ValueError`` naming the argument whose shape contradicts them.
- ``host_routed``: a decorator for an override of ``pullback`` that only chooses what to
  ask the host's ``backward`` (from ``wanted``, say) and calls ``Adapter``'s default for it:
  ``overrides`` and the testing kit then see the host rule (first order), as it is.
- ``linear_in_all(adapter, args)``: whether ``forward`` is linear in all its floating
  arguments together (``linear_in``), for arguments of these shapes and dtypes.
- ``on_numpy(adapter, method)``: the adapter's host method (``forward``, ``backward``,
  ``jvp``, ``check``) called on NumPy arrays and giving NumPy arrays, whatever its
  ``arrays`` (copied into PyTorch or CuPy and back): for tests that call it directly.
- ``overrides(adapter, method)``: whether the adapter's class defines ``method``
  (``backward``, ``jvp``, ``pullback``, ...) instead of inheriting ``Adapter``'s default.
- ``parse_signature(text)``: a gufunc signature parsed (a ``Signature``: its ``inputs`` and
  ``outputs``, each a tuple of ``Core``, a tuple of dimension names), or a ``ValueError``
  naming the problem.
- ``ready_domains``: the ready domains of ``Adapter.domains``, by name.
- ``told_residuals(cls)``: whether ``cls.forward`` takes the keyword ``residuals``.
- ``per_object(function)``: ``function(key)`` cached while ``key`` (a class, function or
  adapter) is alive; for per-class facts that host methods look up on every call.
- ``share(run, chunks)``: ``run`` each chunk of batch indices on its own host thread and
  return when all have stopped, raising the first error (how a looped ``forward`` spreads a
  batch over threads where its routine releases the GIL).
"""

from ._arrays import on_numpy
from ._batches import batch_element, share
from ._bridge import as_array
from ._caches import per_object
from ._domain import READY as ready_domains
from ._plan import arg_names, host_routed, linear_in_all, overrides, told_residuals
from ._signature import Core, Signature, bind_dims
from ._signature import parse as parse_signature

__all__ = [
    "Core",
    "Signature",
    "arg_names",
    "as_array",
    "batch_element",
    "bind_dims",
    "host_routed",
    "linear_in_all",
    "on_numpy",
    "overrides",
    "parse_signature",
    "per_object",
    "ready_domains",
    "share",
    "told_residuals",
]
