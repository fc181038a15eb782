"""``zoom``: SciPy's ``zoom`` as an ``AffineTransform`` with SciPy's diagonal of scale
factors."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._images import image_argument
from .affine_transform import AffineTransform


def zoom(
    input: Any,
    zoom: Any,
    order: int = 3,
    mode: str = "constant",
    cval: float = 0.0,
    prefilter: bool = True,
) -> Any:
    """``scipy.ndimage.zoom(input, zoom, order=order, mode=mode, cval=cval,
    prefilter=prefilter)``: ``input`` resampled onto ``round(n * zoom)`` points per axis.

    ``zoom`` is a number or one per axis, static (a Python number or NumPy array): it sets
    the output's shape, and SciPy's scale factor along an axis, ``(n - 1) / (round(n * zoom)
    - 1)``, moves with it only by jumps (no derivative). The result is differentiable in
    ``input``, every order, linear (``jax.linear_transpose`` where ``cval`` does not enter).
    SciPy's values bitwise: the output index times that factor, as SciPy's (a zoom of 1
    along every axis returns ``input``, as SciPy's does). SciPy's ``grid_mode`` is not
    offered.
    """
    image = image_argument("zoom", input)
    try:
        factors = np.broadcast_to(np.asarray(zoom, np.float64), (image.ndim,))
    except (TypeError, ValueError, jax.errors.TracerArrayConversionError) as error:
        raise ValueError(
            f"zoom: argument 'zoom' must be a positive number or {image.ndim} of them, known "
            f"when traced (it sets the output's shape); got {zoom!r}."
        ) from error
    if not (np.isfinite(factors).all() and (factors > 0).all()):
        raise ValueError(f"zoom: argument 'zoom' must be positive and finite; got {zoom!r}.")
    output_shape = tuple(int(round(n * z)) for n, z in zip(image.shape, factors))
    if image.size and min(output_shape) < 1:  # (an empty image zooms to an empty output)
        raise ValueError(
            f"zoom: argument 'zoom' {zoom!r} leaves no output point along an axis of "
            f"'input' of shape {image.shape}."
        )
    if (factors == 1).all() and prefilter:  # (SciPy's early exit: the image itself)
        return jnp.asarray(image, jnp.result_type(image, float))
    # SciPy's scale factors, 1 where an axis has a single output point
    scale = [(n - 1) / (m - 1) if m != 1 else 1.0 for n, m in zip(image.shape, output_shape)]
    adapter = AffineTransform(order, mode, cval, prefilter, output_shape=output_shape)  # type: ignore[arg-type]
    return adapter(image, jnp.diag(jnp.asarray(scale)), jnp.zeros(image.ndim))
