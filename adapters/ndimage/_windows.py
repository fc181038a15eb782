"""What ``UniformFilter`` and ``MedianFilter`` share: ``BoxFilter``, their fields (a box of
``size`` per axis, the mode, ``cval``, the image's shape), checks and call form, and the
windows of an image in JAX (each window's entries along a leading axis, the image
extended beyond its edges as SciPy's filters extend it) for the median's rules."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb

from ._correlate import FilterMode, extended
from ._images import check_number, check_shape, empty_result, flat_size, image_argument


class BoxFilter(jb.Adapter):
    """A filter over a box of ``size`` around each pixel: ``Filter(size, mode, cval)(input)``
    with SciPy's arguments, the image flattened underneath (``"(s)->(s)"``, leading axes
    batch axes) with its axis lengths the static ``shape``, which a call with the image
    sets (``size`` then one entry per axis).

    Parameters:
        size: the box's length along every axis, or one per axis (a whole number >= 1).
        mode: SciPy's filter mode (see ``Correlate1d``).
        cval: the value beyond the edges for "constant".
        origin: SciPy's placement of the box along every axis, or one per axis: a whole
            number in ``[-(n // 2), (n - 1) // 2]`` for a box of ``n`` (0 centres it).
        shape: keyword-only, the image's axis lengths (for the flattened form).
    """

    size: int | tuple[int, ...] = 3
    mode: FilterMode = "reflect"
    cval: float = 0.0
    origin: int | tuple[int, ...] = 0
    _: dataclasses.KW_ONLY
    shape: tuple[int, ...] = ()

    signature = "(s)->(s)"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_number(owner, "cval", self.cval)
        check_shape(owner, self.shape)
        sizes(owner, self.size, len(self.size) if isinstance(self.size, tuple) else 1)

    def __call__(self, input: Any) -> Any:
        if self.shape:
            return jb.Adapter.__call__(self, input)
        owner = type(self).__name__
        image = image_argument(owner, input)
        size = sizes(owner, self.size, image.ndim)
        if image.size == 0:
            return empty_result(image.shape, image)
        adapter = dataclasses.replace(self, size=size, shape=image.shape)
        return jb.Adapter.__call__(adapter, image.reshape(-1)).reshape(image.shape)

    def output_specs(self, input):
        flat_size(type(self).__name__, self.shape, input.shape)
        self.origins()  # (and the box)
        return jax.ShapeDtypeStruct(input.shape[-1:], jb.result_dtype(input))

    def box(self) -> tuple[int, ...]:
        """``size`` as one whole number per axis of the image."""
        return sizes(type(self).__name__, self.size, len(self.shape))

    def origins(self) -> tuple[int, ...]:
        """``origin`` as one whole number per axis of the image, each within its box."""
        return origins(type(self).__name__, self.origin, self.box())

    def scipy_filter(
        self,
        routine: Any,
        input: np.ndarray,
        out: Any = None,
        image: np.ndarray | None = None,
        box: tuple[int, ...] | None = None,
        origin: tuple[int, ...] | None = None,
    ) -> np.ndarray:
        """SciPy's ``routine`` (``uniform_filter``, ``median_filter``) of the flattened
        ``input`` (or of ``image``, its values reshaped) over this box (or ``box``, placed
        at ``origin``), mode and ``cval``, flattened, in ``input``'s floating dtype
        (float64 for an integer image); into ``forward``'s ``out`` where it is given in
        that dtype."""
        image = np.asarray(input).reshape(self.shape) if image is None else image
        dtype = image.dtype if np.issubdtype(image.dtype, np.floating) else np.dtype(np.float64)
        buffer = None if out is None or out[0].dtype != dtype else out[0]
        values = routine(
            image,
            self.box() if box is None else box,
            output=dtype if buffer is None else buffer.reshape(image.shape),
            mode=self.mode,
            cval=self.cval,
            origin=self.origins() if origin is None else origin,
        )
        if buffer is not None:
            return buffer
        return values.reshape(-1).astype(jb.result_dtype(input), copy=False)


def sizes(owner: str, size: Any, rank: int) -> tuple[int, ...]:
    """``size`` (one for every axis, or one per axis) as a tuple of ``rank`` whole numbers."""
    values = tuple(size) if isinstance(size, (tuple, list)) else (size,) * rank
    if len(values) != rank or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1 for n in values
    ):
        raise ValueError(
            f"{owner}: parameter 'size' must be a whole number >= 1 or {rank} of them (one per "
            f"axis); got {size!r}."
        )
    return tuple(int(n) for n in values)


def origins(owner: str, origin: Any, box: tuple[int, ...]) -> tuple[int, ...]:
    """``origin`` (one for every axis, or one per axis) as a tuple, each a whole number in
    ``[-(n // 2), (n - 1) // 2]`` for its box's length ``n``, as SciPy requires."""
    values = tuple(origin) if isinstance(origin, (tuple, list)) else (origin,) * len(box)
    if len(values) != len(box) or not all(
        isinstance(o, (int, np.integer))
        and not isinstance(o, bool)
        and -(n // 2) <= o <= (n - 1) // 2
        for o, n in zip(values, box)
    ):
        raise ValueError(
            f"{owner}: parameter 'origin' must be a whole number or {len(box)} of them (one "
            f"per axis), each in [-(n // 2), (n - 1) // 2] for a box of n {box}; got "
            f"{origin!r}."
        )
    return tuple(int(o) for o in values)


def windows(
    image: jax.Array, size: tuple[int, ...], mode: str, cval: float, origin: tuple[int, ...]
) -> jax.Array:
    """(prod(size), *image.shape): entry ``k`` holds, at each pixel, the ``k``-th entry of
    the window around it (offsets ``j - size // 2 - origin`` along each axis, SciPy's
    placement)."""
    padded = image
    for axis, (n, o) in enumerate(zip(size, origin)):
        padded = extended(padded, axis, n // 2 + o, n - 1 - n // 2 - o, mode, cval)
    shifted = [
        jax.lax.slice(padded, start, tuple(s + m for s, m in zip(start, image.shape)))
        for start in itertools.product(*(range(n) for n in size))
    ]
    return jnp.stack(shifted)
