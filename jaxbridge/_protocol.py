"""``AdapterLike``: what the bridge's internals read of an adapter.

The internals (the plan, the operations, the host rules) are typed against this protocol,
not against ``Adapter``, whose module imports them: so the core's imports form no circle,
at run time or for the type checker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol


class AdapterLike(Protocol):
    """An adapter as the bridge sees it: the class settings and the methods of
    ``jaxbridge.Adapter`` (see there for what each means)."""

    signature: ClassVar[str]
    vectorized: ClassVar[bool]
    threads: ClassVar[int]
    processes: ClassVar[int]
    blas_threads: ClassVar[int | None]
    arrays: ClassVar[str]
    argument_names: ClassVar[tuple[str, ...] | None]
    linear_in: ClassVar[tuple[str, ...]]
    residuals_from: ClassVar[tuple[str, ...] | None]

    forward: Callable[..., Any]
    check: Callable[..., None]
    backward: Callable[..., Any]
    jvp: Callable[..., Any]
    pullback: Callable[..., Any]
    pushforward: Callable[..., Any]
    output_specs: Callable[..., Any]
    residual_specs: Callable[..., Any]
