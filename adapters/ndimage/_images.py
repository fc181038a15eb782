"""What the ``ndimage`` adapters share: the image's shape as a static parameter (a gufunc
signature has a fixed number of axes, an image any number), its checks, and SciPy's call
form (an image of any rank) turned into the bridged one (the image flattened)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb

ORDERS = (0, 1, 2, 3, 4, 5)


def check_order(owner: str, order: object, least: int = 0) -> None:
    if isinstance(order, bool) or not isinstance(order, int) or not least <= order <= 5:
        raise ValueError(
            f"{owner}: parameter 'order' must be a whole number from {least} to 5 (the spline's "
            f"degree); got {order!r}."
        )


def check_shape(owner: str, shape: object, name: str = "shape", least: int = 1) -> None:
    """Refuse a ``shape`` parameter that is not a tuple of whole numbers >= ``least``."""
    if not isinstance(shape, tuple) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= least for n in shape
    ):
        whose = "output" if name == "output_shape" else "image"
        raise ValueError(
            f"{owner}: parameter {name!r} must be a tuple of whole numbers >= {least} (the "
            f"{whose}'s axis lengths); got {shape!r}."
        )


def check_number(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{owner}: parameter {name!r} must be a finite number; got {value!r}.")


def image_argument(owner: str, value: Any) -> jax.Array:
    """``input`` as a floating or integer array of rank at least 1, complex refused."""
    array = jnp.asarray(value)
    if jnp.iscomplexobj(array):
        raise TypeError(f"{owner}: argument 'input' is complex; only real images are supported.")
    if array.ndim < 1:
        raise ValueError(f"{owner}: argument 'input' must have at least one axis; got a scalar.")
    return array


def empty_result(shape: tuple[int, ...], *args: jax.Array) -> jax.Array:
    """SciPy's result where it has no entries (an image with an empty axis in, an empty one
    out): the bridged call's image has at least one sample, and a result of no entries
    depends on nothing."""
    return jnp.zeros(shape, jb.result_dtype(*args))


def refuse_empty_input(owner: str, shape: tuple[int, ...], points: str) -> None:
    """Refuse an image with an empty axis where there are points to interpolate at: SciPy
    reads outside the image there (uninitialised memory, or a mode's error)."""
    raise ValueError(
        f"{owner}: argument 'input' has shape {shape}, an empty axis: there is no sample to "
        f"interpolate at {points}."
    )


def flat_size(owner: str, shape: tuple[int, ...], input_shape: tuple[int, ...]) -> None:
    """Refuse a flattened image whose length is not the product of ``shape``."""
    if not shape:
        raise ValueError(
            f"{owner}: the parameter 'shape' (the image's axis lengths) is needed for the "
            "flattened call form; call with the image itself to have it set."
        )
    if input_shape[-1:] != (math.prod(shape),):
        raise ValueError(
            f"{owner}: argument 'input' must have trailing length {math.prod(shape)} (an image "
            f"of shape {shape}, flattened); got shape {input_shape}."
        )


def pulled_back(function: Callable[..., jax.Array], args: tuple, g: jax.Array) -> tuple:
    """The cotangents of ``args`` for ``function``'s cotangent ``g``, each of its argument's
    shape, whatever the batch axes of ``g`` and of the result: both are broadcast to their
    common shape (the transpose of a broadcast sums over the axes it added)."""
    shape = np.broadcast_shapes(jax.eval_shape(function, *args).shape, g.shape)
    _, pullback = jax.vjp(lambda *a: jnp.broadcast_to(function(*a), shape), *args)
    return pullback(jnp.broadcast_to(g, shape))


def per_axis(owner: str, name: str, value: Any, count: int) -> list:
    """``value`` one for every axis or one per axis (a tuple, list or 1-D array of
    ``count``), as a list of ``count``; a string (a mode) is one."""
    if isinstance(value, (tuple, list)) or (hasattr(value, "ndim") and value.ndim == 1):
        if len(value) != count:
            raise ValueError(
                f"{owner}: argument {name!r} must be one value or {count} (one per axis); "
                f"got {len(value)}."
            )
        return list(value)
    return [value] * count


def filtered_axes(owner: str, axes: Any, ndim: int) -> tuple[int, ...]:
    """SciPy's ``axes``: the axes a filter runs along, each once (None: every axis)."""
    if axes is None:
        return tuple(range(ndim))
    values = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
    if not all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) and -ndim <= a < ndim
        for a in values
    ):
        raise ValueError(
            f"{owner}: argument 'axes' must hold axes of the {ndim}-axis image; got {axes!r}."
        )
    along = tuple(int(a) % ndim for a in values)
    if len(set(along)) != len(along):
        raise ValueError(f"{owner}: argument 'axes' names an axis twice; got {axes!r}.")
    return along


def to_output(owner: str, output: Any, result: jax.Array) -> jax.Array:
    """SciPy's ``output``: None, or a floating dtype the result is cast to. An array to
    write into is refused by name (JAX arrays are not written in place: the result is
    returned), as is an integer dtype (SciPy's casts of a filtered image to integers)."""
    if output is None:
        return result
    try:
        dtype = np.dtype(output)
    except TypeError:
        dtype = None
    if dtype is None or not np.issubdtype(dtype, np.floating):
        raise TypeError(
            f"{owner}: argument 'output' must be None or a floating dtype; got {output!r} (a "
            "JAX array is not written in place: the result is returned)."
        )
    return result.astype(dtype)
