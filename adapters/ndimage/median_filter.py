"""``MedianFilter``: SciPy's ``median_filter`` (the median over a box around each pixel);
its derivative is the selected entry's, found in JAX among each pixel's window."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.ndimage

import jaxbridge as jb

from .._shared._rules import compiled
from ._images import filtered_axes, image_argument, per_axis, pulled_back, to_output
from ._windows import BoxFilter, windows


class MedianFilter(BoxFilter):
    """The median of ``input`` over a box of ``size`` around each pixel, with SciPy on the
    host: ``MedianFilter(size, mode, cval, origin)(input)`` is
    ``scipy.ndimage.median_filter(input, size, mode=mode, cval=cval, origin=origin)`` (for
    an even count SciPy takes the entry of rank ``count // 2``, not a mean).

    SciPy's values bitwise (in ``input``'s floating dtype, float64 for an integer image).
    Each output is one entry of its window, and its derivative is that entry's: the tangent
    at a pixel is the tangent of the window entry equal to its median (found in JAX among
    the window's entries, the image extended by ``mode``), the cotangent goes back to that
    entry (folded back onto the edge for the extended ones). Every order, both modes; the
    second derivative is 0. Where a window holds the median value more than once (a tie)
    the median is not differentiable and the derivative goes to the first such entry; the
    constant ``cval`` beyond the edges of "constant" has derivative 0.

    Parameters:
        size: the box's length along every axis, or one per axis (a whole number >= 1).
        mode: SciPy's filter mode (see ``Correlate1d``).
        cval: the value beyond the edges for "constant".
        origin: SciPy's placement of the box, one for every axis or one per axis (each in
            ``[-(n // 2), (n - 1) // 2]``; 0 centres it).
        shape: keyword-only, the image's axis lengths (for the flattened form, which a call
            with the image sets; ``size`` then has one entry per axis).
    """

    def check(self, input):
        if not np.isfinite(input).all():  # (a NaN has no rank: the selected entry is lost)
            raise ValueError("argument 'input' has non-finite entries (NaN or inf).")

    def forward(self, input, *, out: Any = None):
        image, box = np.asarray(input).reshape(self.shape), self.box()
        origin = self.origins()
        if image.ndim == 1:
            # SciPy's 1-D path reads past an image shorter than its window (uninitialised
            # memory, or wrong medians, in "mirror", "wrap" and others); its 2-D path with a
            # (size, 1) box is right, and a median is one of the entries either way
            image, box, origin = image[:, None], (*box, 1), (*origin, 0)
        return self.scipy_filter(scipy.ndimage.median_filter, input, out, image, box, origin)

    def _selected(self, input: jax.Array, median: jax.Array) -> jax.Array:
        """The window entries equal to the medians (one image), differentiable in ``input``."""
        dtype = jb.result_dtype(input)
        image = input.reshape(self.shape).astype(dtype)
        entries = windows(image, self.box(), self.mode, self.cval, self.origins())
        entries = entries.reshape(entries.shape[0], -1)
        # the first entry equal to the median (the nearest, should a cast have rounded it)
        index = jnp.argmin(jnp.abs(jax.lax.stop_gradient(entries) - median.astype(dtype)), 0)
        return jnp.take_along_axis(entries, index[None], 0)[0]

    def _all_selected(self, input: jax.Array, median: jax.Array) -> jax.Array:
        return jnp.vectorize(self._selected, signature="(s),(s)->(s)")(input, median)

    @compiled
    def pullback(self, res, g):
        input, median = res[:2]
        median = jax.lax.stop_gradient(median)
        return pulled_back(lambda x: self._all_selected(x, median), (input,), g)

    @compiled
    def pushforward(self, res, tangents):
        shape = jnp.broadcast_shapes(res[0].shape, res[1].shape, tangents[0].shape)
        input, median, t = (jnp.broadcast_to(x, shape) for x in (*res[:2], tangents[0]))
        median = jax.lax.stop_gradient(median)
        return jax.jvp(lambda x: self._all_selected(x, median), (input,), (t,))[1]


def median_filter(
    input: Any,
    size: int | tuple[int, ...] | None = None,
    footprint: Any = None,
    output: Any = None,
    mode: str = "reflect",
    cval: float = 0.0,
    origin: int | tuple[int, ...] = 0,
    *,
    axes: int | tuple[int, ...] | None = None,
) -> Any:
    """``scipy.ndimage.median_filter(input, size, footprint, output, mode, cval, origin,
    axes=axes)`` as ``MedianFilter(size, mode, cval, origin)(input)``, SciPy's arguments in
    SciPy's order.

    ``size`` and ``origin`` are one for every axis or one per axis of ``axes`` (the axes it
    runs along; None: all). ``footprint`` is taken where it is a box, every entry True
    (its shape is then the size); another shape of window is refused by name, as is
    ``output`` other than None or a floating dtype (see ``to_output``)."""
    owner = "median_filter"
    image = image_argument(owner, input)
    if footprint is not None:
        box = np.asarray(footprint)
        if size is not None or box.ndim == 0 or not box.all():
            raise ValueError(
                f"{owner}: argument 'footprint' is taken only as a box (every entry True, "
                "and no size given), as MedianFilter filters over one; got "
                f"{'size and a footprint' if size is not None else 'another footprint'}."
            )
        size = tuple(box.shape)
    if size is None:  # (SciPy's own error, by name)
        raise ValueError(f"{owner}: give argument 'size' (or a box 'footprint'), as SciPy asks.")
    along = filtered_axes(owner, axes, image.ndim)
    sizes = dict(zip(along, per_axis(owner, "size", size, len(along))))
    origins = dict(zip(along, per_axis(owner, "origin", origin, len(along))))
    box = tuple(sizes.get(axis, 1) for axis in range(image.ndim))
    placed = tuple(origins.get(axis, 0) for axis in range(image.ndim))
    result = MedianFilter(box, mode, cval, placed)(image)  # type: ignore[arg-type]
    return to_output(owner, output, result)
