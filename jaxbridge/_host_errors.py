"""``host_errors``: an error raised on the host reaches the caller as its own exception.

Under ``jit`` JAX reports an error raised in a host callback as ``JaxRuntimeError`` (or, from
a compiled call's fast path, a bare ``ValueError``), the host's traceback in its message; on
a GPU, when the result is read. While a ``host_errors`` block is active, ``host_error``
(``_host``) remembers the errors it raises, and the block raises the one that JAX's error
quotes instead. Outside a block nothing is remembered: the errors would keep their tracebacks
(and the arrays their frames hold) alive. ``raised_at`` finds the line of the user's code that
raised, for the one line the transport logs.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import types
from collections.abc import Iterator

_lock = threading.Lock()
_active = 0  # blocks entered and not yet left, on any thread
_recent: collections.deque[BaseException] = collections.deque(maxlen=16)


_LIBRARIES = frozenset({"jaxbridge", "jax", "jaxlib", "numpy", "scipy"})
"""Packages whose frames are not the user's code: where they raise, the user's line is the
call into them."""


def raised_at(error: BaseException) -> str | None:
    """``file:line`` of the innermost frame outside jaxbridge, JAX, NumPy and SciPy in the
    traceback of ``error``'s first cause (the error the user's code raised, which
    ``host_error`` wrapped), else of the next error in the chain that has one; None where
    every frame is theirs (a refusal of the bridge's own)."""
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and all(link is not seen for seen in chain):
        chain.append(link)
        link = link.__cause__ or link.__context__
    for link in reversed(chain):
        found = None
        tb: types.TracebackType | None = link.__traceback__
        while tb is not None:
            package = str(tb.tb_frame.f_globals.get("__name__", "")).partition(".")[0]
            if package not in _LIBRARIES:
                found = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
            tb = tb.tb_next
        if found is not None:
            return found
    return None


def remember(error: BaseException) -> bool:
    """Keep ``error``, raised on the host, for an active ``host_errors`` block to raise;
    whether one is active (the error will then reach the caller as itself)."""
    if _active:  # (read without the lock: a block entered meanwhile misses nothing it ran)
        with _lock:
            _recent.append(error)
        return True
    return False


@contextlib.contextmanager
def host_errors() -> Iterator[None]:
    """Raise errors from adapters' host code as their own exceptions, under ``jit`` too.

    Eagerly, an adapter's error reaches the caller as itself (an ``InterpolationFailure``, a
    ``ValueError``). Under ``jax.jit``, JAX wraps it in ``jax.errors.JaxRuntimeError`` (or
    a bare ``ValueError`` whose message quotes it), and
    on a GPU it surfaces only when the result is read (``np.asarray``, ``.block_until_ready()``,
    printing it). Inside this block (a context manager, or a decorator) the bridged error is
    raised as the exception the adapter raised, with its message, JAX's wrapper as its
    context::

        try:
            with jaxbridge.host_errors():
                value = jax.jit(f)(x).block_until_ready()
        except InterpolationFailure:
            ...

    The ``try`` goes around the block, which converts the error as it is left. Read the
    results inside the block: an error that surfaces after it is left stays JAX's wrapper.
    An error that quotes no bridged error (XLA's own, an out-of-memory) passes through
    unchanged.
    """
    global _active
    with _lock:
        _active += 1
    try:
        yield
    except Exception as error:
        # JAX's wrapper is a JaxRuntimeError, or (from a compiled call's fast path) a
        # ValueError: told apart by quoting a remembered error, not by type
        original = _quoted(error)
        if original is None:
            raise
        # (its traceback from the host is dropped: the frames are the caller's; JAX's error,
        # its context, quotes the host's)
        raise original.with_traceback(None)
    finally:
        with _lock:
            _active -= 1
            if not _active:
                _recent.clear()


def _quoted(raised: Exception) -> BaseException | None:
    """The remembered host error that ``raised``, JAX's wrapper of it, quotes (the most
    recent first); None for the host error itself or any other."""
    with _lock:
        candidates = list(_recent)
    if any(raised is error for error in candidates):
        return None  # (raised as itself: eagerly, on the CPU)
    message = str(raised)
    for error in reversed(candidates):
        text = str(error)
        if text and text in message:
            return error
    return None
