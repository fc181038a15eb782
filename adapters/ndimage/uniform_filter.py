"""``UniformFilter``: SciPy's ``uniform_filter`` (the mean over a box around each pixel),
linear in the image, and ``UniformFilterTransposed``, its transpose, which its rules call:
each is one pass of SciPy on the host, and each one's derivative is the other."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.ndimage

import jaxbridge as jb

from .._shared._rules import compiled
from ._correlate import FilterMode, transposed_correlate1d
from ._images import filtered_axes, image_argument, per_axis, to_output
from ._windows import BoxFilter, sizes


class UniformFilter(BoxFilter):
    """The mean of ``input`` over a box of ``size`` around each pixel, with SciPy on the
    host: ``UniformFilter(size, mode, cval, origin)(input)`` is
    ``scipy.ndimage.uniform_filter(input, size, mode=mode, cval=cval, origin=origin)``.

    SciPy's values bitwise (the result in ``input``'s floating dtype, float64 for an integer
    image). Linear in ``input`` (affine for "constant" with ``cval != 0``): its tangent is
    this filter again (with ``cval = 0``), its cotangent the transpose,
    ``UniformFilterTransposed``, one pass of SciPy each, every order;
    ``jax.linear_transpose`` where ``cval`` does not enter.

    Parameters:
        size: the box's length along every axis, or one per axis (a whole number >= 1).
        mode: SciPy's filter mode (see ``Correlate1d``).
        cval: the value beyond the edges for "constant".
        origin: SciPy's placement of the box, one for every axis or one per axis (each in
            ``[-(n // 2), (n - 1) // 2]``; 0 centres it).
        shape: keyword-only, the image's axis lengths (for the flattened form, which a call
            with the image sets; ``size`` then has one entry per axis).
    """

    @property
    def linear_in(self) -> tuple[str, ...]:  # type: ignore[override]
        affine = self.cval != 0 and self.mode in ("constant", "grid-constant")
        return () if affine else ("input",)

    def forward(self, input, *, out: Any = None):
        return self.scipy_filter(scipy.ndimage.uniform_filter, input, out)

    @compiled
    def pullback(self, res, g):
        # linear: one cotangent per element of g's batch, whatever stands in res for the
        # input (the bridge sums them over a batch that broadcast it)
        transposed = UniformFilterTransposed(
            self.box(), self.mode, self.origins(), shape=self.shape
        )
        return (transposed(g).astype(res[0].dtype),)

    @compiled
    def pushforward(self, res, tangents):
        return dataclasses.replace(self, cval=0.0)(tangents[0])


class UniformFilterTransposed(jb.Adapter):
    """``UniformFilter``'s transpose, for its rules: ``UniformFilterTransposed(size, mode,
    origin, shape=shape)(g)`` is ``Mᵀ g`` for ``M`` the box mean ``UniformFilter(size, mode,
    0.0, origin, shape=shape)`` (``cval`` enters its values, not its transpose), flattened
    images in and out. On the host, one pass per axis: the mean of ``g`` over the box with
    zeros beyond the edges, and the share of the extension folded back onto the edges
    (``transposed_correlate1d``). Linear; its transpose is ``M``, every order."""

    size: tuple[int, ...]
    mode: FilterMode
    origin: tuple[int, ...] = ()
    _: dataclasses.KW_ONLY
    shape: tuple[int, ...]

    signature = "(s)->(s)"
    linear_in = ("g",)

    def forward(self, g):
        image = np.asarray(g, np.float64).reshape(self.shape)
        box = sizes(type(self).__name__, self.size, len(self.shape))
        for axis, (n, o) in enumerate(zip(box, self.origin or (0,) * len(box))):
            if n > 1:  # (SciPy leaves an axis of size 1 alone)
                image = transposed_correlate1d(image, np.full(n, 1 / n), axis, self.mode, o)
        return image.reshape(-1).astype(jb.result_dtype(g))

    @compiled
    def pullback(self, res, y):
        mean = UniformFilter(self.size, self.mode, 0.0, self.origin or 0, shape=self.shape)
        return (mean(y).astype(res[0].dtype),)

    @compiled
    def pushforward(self, res, tangents):
        return self(tangents[0])


def uniform_filter(
    input: Any,
    size: int | tuple[int, ...] = 3,
    output: Any = None,
    mode: str | tuple[str, ...] = "reflect",
    cval: float = 0.0,
    origin: int | tuple[int, ...] = 0,
    *,
    axes: int | tuple[int, ...] | None = None,
) -> Any:
    """``scipy.ndimage.uniform_filter(input, size, output, mode, cval, origin, axes=axes)``
    as ``UniformFilter(size, mode, cval, origin)(input)``, SciPy's arguments in SciPy's order.

    ``size``, ``mode`` and ``origin`` are one for every axis or one per axis (per axis of
    ``axes``, the axes it runs along; None: all). A size of 0 or 1 leaves its axis as it
    is, as SciPy's. Modes that differ from axis to axis take one pass per axis, as SciPy's
    do. ``output``: None or a floating dtype (see ``to_output``)."""
    owner = "uniform_filter"
    image = image_argument(owner, input)
    along = filtered_axes(owner, axes, image.ndim)
    passes = [  # (SciPy leaves an axis of size 0 or 1 as it is)
        (axis, n, m, o)
        for axis, n, m, o in zip(
            along,
            per_axis(owner, "size", size, len(along)),
            per_axis(owner, "mode", mode, len(along)),
            per_axis(owner, "origin", origin, len(along)),
        )
        if isinstance(n, bool) or not (isinstance(n, (int, np.integer)) and n in (0, 1))
    ]

    def box(chosen: list) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The box's size and origin along every axis of the image."""
        sizes = {axis: (n, o) for axis, n, _, o in chosen}
        per = [sizes.get(axis, (1, 0)) for axis in range(image.ndim)]
        return tuple(n for n, _ in per), tuple(o for _, o in per)

    modes = {m for _, _, m, _ in passes}
    if len(modes) <= 1:  # one pass of SciPy's filter over the whole box
        sizes, origins = box(passes)
        result = UniformFilter(sizes, modes.pop() if modes else "reflect", cval, origins)(image)
        return to_output(owner, output, result)
    out = image
    for one in passes:  # (modes that differ: one pass per axis, as SciPy's)
        sizes, origins = box([one])
        out = UniformFilter(sizes, one[2], cval, origins)(out)
    return to_output(owner, output, out)
