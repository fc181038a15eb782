"""``rotate``: SciPy's ``rotate`` as an ``AffineTransform`` built from the angle in JAX,
differentiable in it."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from ._images import image_argument, refuse_empty_input
from .affine_transform import AffineTransform


def rotate(
    input: Any,
    angle: Any,
    axes: tuple[int, int] = (1, 0),
    reshape: bool = True,
    order: int = 3,
    mode: str = "constant",
    cval: float = 0.0,
    prefilter: bool = True,
) -> Any:
    """``scipy.ndimage.rotate(input, angle, axes, reshape, order=order, mode=mode,
    cval=cval, prefilter=prefilter)``: ``input`` rotated by ``angle`` degrees in the plane
    of ``axes``, about the centre.

    Differentiable in ``input`` and in ``angle`` (every order, through the points, as
    ``AffineTransform``'s in its matrix and offset); ``angle`` may then be traced only with
    ``reshape=False``: with ``reshape=True`` (SciPy's default) the output's shape, the
    rotated image's bounding box, depends on the angle's value, so a traced angle there is
    a ``ValueError`` saying so. SciPy's values bitwise for a 2-D image and an angle given as
    a number (SciPy's ``cosdg``, ``sindg`` and arithmetic); to rounding (about 1e-15 of the
    image's scale) for a traced angle, whose cosine and sine are JAX's, and for an image of
    more than two axes, resampled here as one affine map (the spline interpolating at the
    integer positions of the other axes) where SciPy loops over its planes.
    """
    image = image_argument("rotate", input)
    d = image.ndim
    if d < 2:
        raise ValueError("rotate: argument 'input' must have at least two axes.")
    if len(axes) != 2 or not all(isinstance(a, (int, np.integer)) for a in axes):
        raise ValueError(f"rotate: argument 'axes' must be two axis numbers; got {axes!r}.")
    plane = sorted(int(a) + d if a < 0 else int(a) for a in axes)
    if plane[0] == plane[1] or not 0 <= plane[0] < plane[1] < d:
        raise ValueError(f"rotate: argument 'axes' {axes!r} is no plane of {d} axes.")
    try:  # a number: SciPy's own cosine and sine in degrees, and its arithmetic
        degrees = float(np.asarray(angle))
    except (TypeError, jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        degrees = None
    in_plane = np.array([image.shape[a] for a in plane])
    if degrees is not None:
        c, s = scipy.special.cosdg(degrees), scipy.special.sindg(degrees)
        rotation = np.array([[c, s], [-s, c]])
        out_plane = in_plane
        if reshape:
            corners = rotation @ [
                [0, 0, in_plane[0], in_plane[0]],
                [0, in_plane[1], 0, in_plane[1]],
            ]
            out_plane = (np.ptp(corners, axis=1) + 0.5).astype(int)
        offset_plane = (in_plane - 1) / 2 - rotation @ ((out_plane - 1) / 2)
    else:
        if reshape:
            raise ValueError(
                "rotate: argument 'angle' is traced (under jit, grad or vmap), and with "
                "reshape=True the output's shape depends on its value; pass reshape=False "
                "to trace or differentiate the angle."
            )
        radians = jnp.deg2rad(jnp.asarray(angle, jnp.result_type(float)))
        if radians.ndim != 0:
            raise ValueError(
                f"rotate: argument 'angle' must be one number; got shape {radians.shape}."
            )
        c, s = jnp.cos(radians), jnp.sin(radians)
        rotation = jnp.array([[c, s], [-s, c]])
        out_plane = in_plane
        offset_plane = (in_plane - 1) / 2 - rotation @ ((out_plane - 1) / 2)
    output_shape = list(image.shape)
    for a, n in zip(plane, out_plane):
        output_shape[a] = int(n)
    if image.size == 0 and math.prod(output_shape):  # (SciPy's reshape of an empty plane)
        refuse_empty_input(
            "rotate", image.shape, f"the {tuple(output_shape)} points of its rotated bounding box"
        )
    matrix = jnp.eye(d).at[np.ix_(plane, plane)].set(rotation)
    offset = jnp.zeros(d).at[np.array(plane)].set(offset_plane)
    adapter = AffineTransform(order, mode, cval, prefilter, output_shape=tuple(output_shape))  # type: ignore[arg-type]
    return adapter(image, matrix, offset)
