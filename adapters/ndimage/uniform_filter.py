"""``UniformFilter``: SciPy's ``uniform_filter`` (the mean over a box around each pixel),
linear in the image; the rules are the box mean written in JAX."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.ndimage

import jaxbridge as jb

from .._rules import compiled
from ._correlate import FilterMode, correlate1d
from ._images import check_number, check_shape, flat_size, image_argument
from ._windows import sizes

OWNER = "UniformFilter"


class UniformFilter(jb.Adapter):
    """The mean of ``input`` over a box of ``size`` around each pixel, with SciPy on the
    host: ``UniformFilter(size, mode, cval)(input)`` is ``scipy.ndimage.uniform_filter(input,
    size, mode=mode, cval=cval)``.

    SciPy's values bitwise (the result in ``input``'s floating dtype, float64 for an integer
    image). Linear in ``input`` (affine for "constant" with ``cval != 0``): its tangent and
    cotangent are the box mean (a correlation with ``1 / n`` along each axis) written in JAX,
    every order, ``jax.linear_transpose`` where ``cval`` does not enter. SciPy sums with a
    running sum, so the rules agree with its values to rounding.

    Parameters:
        size: the box's length along every axis, or one per axis (a whole number >= 1).
        mode: SciPy's filter mode (see ``Correlate1d``).
        cval: the value beyond the edges for "constant".
        shape: keyword-only, the image's axis lengths (for the flattened form, which a call
            with the image sets; ``size`` then has one entry per axis).
    """

    size: int | tuple[int, ...] = 3
    mode: FilterMode = "reflect"
    cval: float = 0.0
    _: dataclasses.KW_ONLY
    shape: tuple[int, ...] = ()

    signature = "(s)->(s)"

    def __post_init__(self) -> None:
        check_number(OWNER, "cval", self.cval)
        check_shape(OWNER, self.shape)
        sizes(OWNER, self.size, len(self.size) if isinstance(self.size, tuple) else 1)

    @property
    def linear_in(self) -> tuple[str, ...]:  # type: ignore[override]
        affine = self.cval != 0 and self.mode in ("constant", "grid-constant")
        return () if affine else ("input",)

    def __call__(self, input: Any) -> Any:
        if self.shape:
            return jb.Adapter.__call__(self, input)
        image = image_argument(OWNER, input)
        size = sizes(OWNER, self.size, image.ndim)
        adapter = dataclasses.replace(self, size=size, shape=image.shape)
        return jb.Adapter.__call__(adapter, image.reshape(-1)).reshape(image.shape)

    def output_specs(self, input):
        flat_size(OWNER, self.shape, input.shape)
        sizes(OWNER, self.size, len(self.shape))
        return jax.ShapeDtypeStruct(input.shape[-1:], jb.result_dtype(input))

    def forward(self, input):
        image = np.asarray(input).reshape(self.shape)
        dtype = jb.result_dtype(input)
        output = image.dtype if np.issubdtype(image.dtype, np.floating) else np.float64
        values = scipy.ndimage.uniform_filter(
            image,
            self.size,  # type: ignore[arg-type] (SciPy takes one per axis)
            output=output,
            mode=self.mode,
            cval=self.cval,
        )
        return values.reshape(-1).astype(dtype)

    def mean(self, input: jax.Array) -> jax.Array:
        """The box mean in JAX (one flattened image), for the rules."""
        dtype = jb.result_dtype(input)
        image = input.reshape(self.shape).astype(dtype)
        for axis, n in enumerate(sizes(OWNER, self.size, len(self.shape))):
            if n > 1:  # (SciPy leaves an axis of size 1 alone)
                image = correlate1d(image, jnp.full(n, 1 / n, dtype), axis, self.mode, self.cval)
        return image.reshape(-1)

    @compiled
    def pullback(self, res, g):
        # linear (its derivative is the linear part's where cval enters): taken at zero, one
        # cotangent per element of g's batch, whatever stands in res for the input
        mean = jnp.vectorize(self.mean, signature="(s)->(s)")
        return jax.vjp(mean, jnp.zeros(g.shape, res[0].dtype))[1](g)

    @compiled
    def pushforward(self, res, tangents):
        shape = jnp.broadcast_shapes(res[0].shape, tangents[0].shape)
        x, t = jnp.broadcast_to(res[0], shape), jnp.broadcast_to(tangents[0], shape)
        return jax.jvp(jnp.vectorize(self.mean, signature="(s)->(s)"), (x,), (t,))[1]


def uniform_filter(
    input: Any, size: int | tuple[int, ...] = 3, mode: str = "reflect", cval: float = 0.0
) -> Any:
    """``scipy.ndimage.uniform_filter(input, size, mode=mode, cval=cval)`` as
    ``UniformFilter(size, mode, cval)(input)``."""
    size = tuple(size) if isinstance(size, list) else size
    return UniformFilter(size, mode, cval)(input)  # type: ignore[arg-type]
