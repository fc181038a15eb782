"""jaxbridge: call NumPy and SciPy routines from JAX, under ``jit``, ``vmap`` and ``grad``."""

from ._adapter import Adapter as Adapter
from ._arrays import guard_inputs as guard_inputs
from ._domain import Domain as Domain
from ._dtypes import result_dtype as result_dtype
from ._host_errors import host_errors as host_errors
from ._transport import set_transport as set_transport
from ._transport import transport as transport

__all__ = [
    "Adapter",
    "Domain",
    "guard_inputs",
    "host_errors",
    "result_dtype",
    "set_transport",
    "transport",
]
