"""The array hand-off: how XLA's buffers become the arrays an adapter's methods take, and
how their results go back. One per array library an adapter may declare (``arrays``):

- ``"numpy"`` (the default): the host. Traced calls reach it through ``_transport``'s two
  transports; this hand-off is their NumPy side.
- ``"torch"`` and ``"cupy"``: XLA's own buffers, wherever they live (the GPU, or the CPU for
  PyTorch), handed over through DLPack with no copy, the rule's work enqueued on XLA's
  stream, results written into XLA's result buffers. Only ``buffer_callback`` hands a
  callback XLA's buffers and stream, so these take it on every backend.

Everything here is imported lazily: PyTorch and CuPy are optional, and CuPy fails at first
use, not at import, on a machine without a GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import jax
import numpy as np

from ._refusals import RefusedValue

ARRAYS = ("numpy", "torch", "cupy")


class Handoff:
    """One array library's side of a bridged call (see the module docstring)."""

    name: str
    module: str  # the library's import name

    def library(self) -> Any:
        module = sys.modules.get(self.module)  # (imported already: the hot path)
        if module is not None:  # (None there: its import is blocked, and raises below)
            return module
        try:
            return importlib.import_module(self.module)
        except ImportError as error:
            raise ImportError(
                f"jaxbridge: an adapter with arrays = {self.name!r} needs {self.module}, "
                f"which is not installed ({error})."
            ) from error

    def owns(self, value: object) -> bool:
        """Whether ``value`` is one of this library's arrays."""
        return type(value).__module__.split(".")[0] == self.module

    def inputs(self, buffers: Sequence[Any]) -> list[Any]:
        """Views of XLA's input buffers (read-only by contract: see ``guard``)."""
        from_dlpack = self.library().from_dlpack
        return [from_dlpack(b) for b in buffers]

    def outputs(self, buffers: Sequence[Any]) -> list[Any]:
        """Writeable views of XLA's result buffers."""
        return self.inputs(buffers)

    @contextlib.contextmanager
    def on(self, context: Any, buffers: Sequence[Any]) -> Iterator[None]:
        """Around a call on ``buffers``: their device current and XLA's stream the current
        one, so that the rule's work is ordered with XLA's (XLA does not synchronise around
        a buffer callback)."""
        yield

    def from_jax(self, array: jax.Array) -> Any:
        """A concrete JAX array as this library's array, for an eager call (no copy)."""
        return self.library().from_dlpack(array)

    def to_jax(self, array: Any) -> jax.Array:
        return jax.dlpack.from_dlpack(array)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, like: Any) -> Any:
        """A new array on ``like``'s device: an eager call's result."""
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray) -> Any:
        """A copy of a NumPy array as this library's (on its default device)."""
        return self.library().asarray(array)

    def to_numpy(self, array: Any) -> np.ndarray:
        return self.library().asnumpy(array)

    def dtype(self, array: Any) -> np.dtype:
        """The NumPy dtype of one of this library's arrays."""
        return np.dtype(array.dtype)

    def cast(self, array: Any, dtype: np.dtype) -> Any:
        return array.astype(dtype)

    def broadcast(self, array: Any, shape: tuple[int, ...]) -> Any:
        return self.library().broadcast_to(array, shape)

    def write(self, out: Any, value: Any) -> None:
        """``value`` (this library's array, or a NumPy one: zeros the bridge made) into
        ``out``, unless it is ``out``."""
        if value is not out:
            out[...] = value

    def copy(self, array: Any) -> Any:
        return array.copy()

    def same(self, a: Any, b: Any) -> bool:
        """Whether ``a`` and ``b`` hold the same bits (NaN equal to NaN)."""
        return bool((a == b).all()) or bool(((a == b) | ((a != a) & (b != b))).all())


class _NumPy(Handoff):
    name, module = "numpy", "numpy"

    def owns(self, value: object) -> bool:
        return isinstance(value, np.ndarray)

    def inputs(self, buffers: Sequence[Any]) -> list[Any]:
        # DLPack marks them read-only: host code writing to one would corrupt a JAX array
        return [np.from_dlpack(b) for b in buffers]

    def outputs(self, buffers: Sequence[Any]) -> list[Any]:
        return [b.__array__() for b in buffers]  # writeable, and the cheapest way in

    def from_jax(self, array: jax.Array) -> Any:
        return np.asarray(array)

    def from_numpy(self, array: np.ndarray) -> Any:
        return array

    def to_numpy(self, array: Any) -> np.ndarray:
        return array

    def to_jax(self, array: Any) -> jax.Array:
        return jax.numpy.asarray(array)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, like: Any) -> Any:
        return np.empty(shape, dtype)


class _Torch(Handoff):
    name, module = "torch", "torch"

    def from_jax(self, array: jax.Array) -> Any:
        return self.library().from_dlpack(array)

    @contextlib.contextmanager
    def on(self, context: Any, buffers: Sequence[Any]) -> Iterator[None]:
        kind, ordinal = _device(buffers)
        if kind == _DL_CPU:
            yield
            return
        torch = self.library()
        stream = torch.cuda.ExternalStream(context.stream, device=ordinal)
        with torch.cuda.device(ordinal), torch.cuda.stream(stream):
            yield

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, like: Any) -> Any:
        torch = self.library()
        device = "cpu" if like is None else like.device
        return torch.empty(shape, dtype=_torch_dtype(torch, dtype), device=device)

    def from_numpy(self, array: np.ndarray) -> Any:
        return self.library().from_numpy(np.array(array))  # (a writeable copy)

    def to_numpy(self, array: Any) -> np.ndarray:
        return array.detach().cpu().numpy()

    def dtype(self, array: Any) -> np.dtype:
        try:
            return _torch_dtypes(self.library())[array.dtype]
        except KeyError:
            raise TypeError(f"jaxbridge: PyTorch's {array.dtype} has no JAX dtype.") from None

    def cast(self, array: Any, dtype: np.dtype) -> Any:
        return array.to(_torch_dtype(self.library(), dtype))

    def broadcast(self, array: Any, shape: tuple[int, ...]) -> Any:
        return array.broadcast_to(shape)

    def write(self, out: Any, value: Any) -> None:
        if value is out:
            return
        if isinstance(value, np.ndarray):
            value = self.library().from_numpy(np.ascontiguousarray(value))
        out.copy_(value)

    def copy(self, array: Any) -> Any:
        return array.clone()

    def same(self, a: Any, b: Any) -> bool:
        return bool(self.library().equal(a, b)) or bool(((a == b) | (a.isnan() & b.isnan())).all())


class _CuPy(Handoff):
    name, module = "cupy", "cupy"

    def inputs(self, buffers: Sequence[Any]) -> list[Any]:
        cupy = self.library()
        # the CUDA array interface: DLPack would ask XLA's buffer for a stream it ignores
        return [cupy.asarray(b) for b in buffers]

    @contextlib.contextmanager
    def on(self, context: Any, buffers: Sequence[Any]) -> Iterator[None]:
        kind, ordinal = _device(buffers)
        _on_gpu(kind)
        cupy = self.library()
        # CuPy's current device and stream are per thread: set both on every call
        with cupy.cuda.Device(ordinal), cupy.cuda.ExternalStream(context.stream, ordinal):
            yield

    def from_jax(self, array: jax.Array) -> Any:
        on_cpu = all(d.platform == "cpu" for d in array.devices())
        _on_gpu(_DL_CPU if on_cpu else _DL_CUDA)
        return self.library().from_dlpack(array)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, like: Any) -> Any:
        cupy = self.library()
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype)

    def write(self, out: Any, value: Any) -> None:
        if value is out:
            return
        out[...] = self.library().asarray(value)


_DL_CPU, _DL_CUDA = 1, 2  # DLPack's kDLCPU and kDLCUDA


def _on_gpu(kind: int, owner: str = "an adapter") -> None:
    if kind == _DL_CPU:
        raise RuntimeError(
            f"jaxbridge: {owner} has arrays = 'cupy', which runs on a GPU backend, but the "
            f"call's arrays are on the CPU (JAX's default backend: {jax.default_backend()}); "
            "put them on a GPU (jax.device_put), or use arrays = 'torch' or 'numpy' there."
        )


def check_backend(cls: Any) -> None:
    """Refuse, when it is called, a CuPy adapter where JAX's arrays live on the CPU."""
    if cls.arrays == "cupy" and jax.default_backend() == "cpu":
        _on_gpu(_DL_CPU, cls.__name__)


def _device(buffers: Sequence[Any]) -> tuple[int, int]:
    """DLPack's (device type, ordinal) of a call's buffers (all on one device)."""
    return tuple(buffers[0].__dlpack_device__()) if buffers else (_DL_CPU, 0)  # type: ignore[return-value]


@functools.cache
def _torch_dtypes(torch: Any) -> dict[Any, np.dtype]:
    """PyTorch's dtypes that JAX has, to NumPy's."""
    names = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]
    names += ["uint16", "uint32", "uint64"]
    pairs = {getattr(torch, n): np.dtype(n) for n in names}
    return {**pairs, torch.bfloat16: np.dtype(jax.numpy.bfloat16)}


def _torch_dtype(torch: Any, dtype: np.dtype) -> Any:
    for theirs, ours in _torch_dtypes(torch).items():
        if ours == dtype:
            return theirs
    raise TypeError(f"jaxbridge: JAX's {dtype} has no PyTorch dtype.")


HANDOFFS: dict[str, Handoff] = {h.name: h for h in (_NumPy(), _Torch(), _CuPy())}
NUMPY = HANDOFFS["numpy"]


def handoff_of(value: object) -> Handoff | None:
    """The hand-off of a library that ``value`` is an array of, other than NumPy (the
    bridge's checks take every other value as NumPy's)."""
    for handoff in (HANDOFFS["torch"], HANDOFFS["cupy"]):
        if handoff.owns(value):
            return handoff
    return None


def check_arrays(cls: Any) -> None:
    """Refuse a class whose ``arrays`` is unknown, or that shares a device adapter's loop."""
    if cls.arrays not in ARRAYS:
        raise TypeError(f"{cls.__name__}: `arrays` must be one of {ARRAYS}, got {cls.arrays!r}.")
    if cls.arrays != "numpy" and (cls.threads > 1 or cls.processes > 1):
        raise TypeError(
            f"{cls.__name__}: an adapter with arrays = {cls.arrays!r} runs on one thread (its "
            "work is ordered on XLA's stream): `threads` and `processes` must stay 1."
        )


_guarding = os.environ.get("JAXBRIDGE_GUARD_INPUTS", "") not in ("", "0")


def guard_inputs(on: bool = True) -> None:
    """Check, after every host method of an adapter on PyTorch's or CuPy's arrays, that it
    left its inputs as they were, and raise naming the adapter and the input if not.

    Those inputs are XLA's own buffers (or JAX's arrays, in an eager call), shared with the
    rest of the program: a write into one silently changes a JAX array. NumPy's views are
    read-only, PyTorch and CuPy have no read-only arrays. The check copies every input
    before each call: a debugging aid, off by default (also on with the environment
    variable ``JAXBRIDGE_GUARD_INPUTS=1``)."""
    global _guarding
    _guarding = bool(on)


@dataclasses.dataclass(frozen=True)
class Guarded:
    """``compute(inputs, outs)`` that raises where it wrote into an input, while
    ``guard_inputs`` is on."""

    compute: Any
    owner: str
    method: str
    handoff: Handoff

    def __call__(self, inputs: Sequence[Any], outs: Sequence[Any] | None) -> Any:
        if not _guarding:
            return self.compute(inputs, outs)
        before = [self.handoff.copy(a) for a in inputs]
        got = self.compute(inputs, outs)
        for i, (a, b) in enumerate(zip(inputs, before)):
            if not self.handoff.same(a, b):
                raise RefusedValue(
                    f"{self.owner}.{self.method} wrote into its input {i}: an adapter's "
                    f"inputs are XLA's (or JAX's) own arrays, shared with the rest of the "
                    f"program; compute into a new array or into `out` (jaxbridge.guard_inputs)."
                )
        return got


def on_numpy(adapter: Any, method: str) -> Any:
    """``adapter``'s host ``method`` called on NumPy arrays and giving NumPy arrays, whatever
    its ``arrays``: each array (in tuples and lists too) copied into its library and its
    results copied back. For tests that call the host methods directly."""
    function = getattr(adapter, method)
    handoff = HANDOFFS[type(adapter).arrays]
    if handoff is NUMPY:
        return function

    def convert(value: Any, to: Any, arrays: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(convert(v, to, arrays) for v in value)
        return to(value) if isinstance(value, arrays) else value

    library_array = type(handoff.from_numpy(np.zeros(())))

    def called(*args: Any, **kwargs: Any) -> Any:
        got = function(*convert(args, handoff.from_numpy, (np.ndarray, np.generic)), **kwargs)
        return convert(got, handoff.to_numpy, library_array)

    return called
