"""A large host call on a TPU: its operands sent to the host in slices in flight together.

Measured on a TPU v5e (jax 0.10.2, y = 2x on 1e7 float32 under ``jit``, 40 MB each way):
one ``pure_callback`` moves each operand to the host in one transfer, about 100 ms, and
nothing else moves meanwhile; slices of it sent by callbacks of their own are in flight
together, 40 MB in about 45 ms. Several operands of one callback do not overlap (234-253
ms for 4 to 32 of them, against 251 for one). The host there touches fresh memory at about
1 ms per MB: the call's own host work took 85 ms on fresh arrays, 3 ms on kept ones.

So a call whose operand vectors (``_wire``) hold at least two slices' worth of bytes sends
each vector in slices of ``SLICE_BYTES``, each by a callback of its own that keeps its piece
on the host and returns a token naming it; one more callback, given the tokens, gathers the
pieces into a buffer the call site keeps and runs the host function on the whole vectors
(so the host routine sees each array once, with the values the device sent). Results go
back in one transfer: slicing them measured slower (34 ms for 8 slices against 19 for one).

Only where one program runs on one device (``sliced`` is set by the TPU lowering on a
single device). The kept buffer stays allocated as long as the compiled program does.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import threading
from collections.abc import Iterator, Sequence

import jax
import numpy as np

SLICE_BYTES = 4 << 20
"""The bytes each slice carries (at most); a call is sliced from two slices' worth."""

_TOKEN = jax.ShapeDtypeStruct((), np.int32)


class Staging:
    """One call site's slices on their way up, and its kept buffer of the whole operands.

    One lowered call site may serve several calls at once: JAX lowers a ``jit`` function
    called from two places in a program once, as one function called from both, whose host
    callbacks are then the same (measured: two such calls' slices interleaved, and one
    call read the other's). So each slice's callback keeps its piece under a token of its
    own and returns that token; the call, given its tokens, takes exactly its pieces, and
    holds ``lock`` while it uses the kept buffer."""

    def __init__(self, lanes: Sequence[tuple[np.dtype, int]], slice_bytes: int) -> None:
        self.lanes = tuple(lanes)
        self.slices = tuple(
            (lane, start, min(start + step, length))
            for lane, (carrier, length) in enumerate(self.lanes)
            for step in [max(1, slice_bytes // carrier.itemsize)]
            for start in range(0, length, step)
        )
        self.lock = threading.Lock()
        self._pieces: dict[int, np.ndarray] = {}
        self._read: set[int] = set()  # the tokens of the last call that took its pieces
        self._tokens = itertools.count(1)
        self._whole: list[np.ndarray] | None = None

    def send(self, vectors: Sequence[jax.Array]) -> list[jax.Array]:
        """Each slice of ``vectors`` to the host by a callback of its own: their tokens."""
        return [
            jax.pure_callback(self._receive, _TOKEN, vectors[lane][start:stop])
            for lane, start, stop in self.slices
        ]

    def _receive(self, piece: np.ndarray) -> np.ndarray:
        kept = np.array(piece)  # (JAX may reuse the operand's memory after the callback)
        with self.lock:
            token = next(self._tokens) % 2**31
            self._pieces[token] = kept
        return np.asarray(token, np.int32)

    def whole(self, tokens: Sequence[np.ndarray], name: str) -> list[np.ndarray]:
        """The whole operand vectors of the call whose slices' ``tokens`` these are, in the
        kept buffer: to be called, and its result used, holding ``lock``.

        Its pieces are kept until another call takes its own: XLA may run a callback that
        it holds pure twice on the same tokens (measured: 92 callbacks compiled from 81)."""
        keys = [int(t) for t in tokens]
        pieces = [self._pieces.get(k) for k in keys]
        missing = sum(p is None for p in pieces)
        if missing:
            raise RuntimeError(
                f"{name}: {missing} of the {len(self.slices)} slices of its operands are not "
                f"on the host."
            )
        if self._whole is None:
            self._whole = [np.empty(n, c) for c, n in self.lanes]
        for (lane, start, stop), piece in zip(self.slices, pieces):
            self._whole[lane][start:stop] = piece
        for k in self._read.difference(keys):
            self._pieces.pop(k, None)
        self._read = set(keys)
        return self._whole


def sliced_bytes() -> int | None:
    """The slice size of the lowering in progress, or None where it does not slice."""
    return _SLICED.get()


@contextlib.contextmanager
def sliced(slice_bytes: int | None = SLICE_BYTES) -> Iterator[None]:
    """Within it, large host calls traced through ``pure_callback`` are sliced (``None``:
    not): what the TPU lowering of the bridge's primitives sets on one device."""
    token = _SLICED.set(slice_bytes)
    try:
        yield
    finally:
        _SLICED.reset(token)


def worth_slicing(lanes: Sequence[tuple[np.dtype, int]], slice_bytes: int) -> bool:
    """Whether operand vectors of ``lanes`` are large enough to go up in slices."""
    return sum(c.itemsize * n for c, n in lanes) >= 2 * slice_bytes


_SLICED: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "jaxbridge_sliced", default=None
)
