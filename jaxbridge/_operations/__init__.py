"""The three operations of a bridged call, each bound as a primitive (see ``_primitives``).

- ``Forward``: ``adapter.forward`` on the host; with ``residuals``, the residuals too.
- ``TangentMap``: J·t, ``adapter.pushforward`` (by default ``jvp`` on the host, in one
  callback: ``host_tangents``); linear in the tangents, its transpose is ``adapter.pullback``.
- ``Backward``: Jᵀ·g, ``adapter.backward`` on the host (the default ``pullback``); linear in
  the cotangents, its transpose is the tangent map.
- ``Check``: ``adapter.check`` on the host, for a rule written in JAX: its zeros are added
  to the rule's results, so that XLA cannot drop the refusal with the forward call.

Arguments reach an operation padded to a common number of leading (loop) axes, size 1
where an argument is broadcast: the host sees them as gufunc batch axes. ``res`` is always
``(*inputs, *outputs, *residuals)``, what ``backward`` gets.
"""

from ._backward import Backward as Backward
from ._forward import Forward as Forward
from ._host_rules import host_pullback as host_pullback
from ._host_rules import host_pushforward as host_pushforward
from ._rules import Check as Check
from ._tangent import TangentMap as TangentMap
