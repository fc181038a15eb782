"""What adapter families build on beyond the public API: semi-public.

``jaxbridge.adapters`` uses these, and so may a library of adapters built on jaxbridge; they
are documented and tested, but may change in a minor release (the changelog says when).
Users writing an adapter need only ``jaxbridge``'s public names.

- ``arg_names(cls)``: the names of an adapter class's ``forward`` arguments, checked against
  its ``signature`` (for errors that name an argument).
- ``as_array(owner, name, value)``: ``value`` as a JAX array, or a ``TypeError`` naming the
  adapter and argument.
- ``parse_signature(text)``: a gufunc signature parsed (its ``inputs`` and ``outputs``, each
  a tuple of dimension names), or a ``ValueError`` naming the problem.
- ``per_object(function)``: ``function(key)`` cached while ``key`` (a class, function or
  adapter) is alive; for per-class facts that host methods look up on every call.
- ``share(run, chunks)``: ``run`` each chunk of batch indices on its own host thread and
  return when all have stopped, raising the first error (how a looped ``forward`` spreads a
  batch over threads where its routine releases the GIL).
"""

from ._batches import share
from ._bridge import as_array
from ._caches import per_object
from ._plan import arg_names
from ._signature import parse as parse_signature

__all__ = ["arg_names", "as_array", "parse_signature", "per_object", "share"]
