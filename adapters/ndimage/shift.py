"""``shift``: SciPy's ``shift`` as an ``AffineTransform`` with the identity matrix,
differentiable in the shift."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ._images import image_argument
from .affine_transform import AffineTransform


def shift(
    input: Any,
    shift: Any,
    order: int = 3,
    mode: str = "constant",
    cval: float = 0.0,
    prefilter: bool = True,
) -> Any:
    """``scipy.ndimage.shift(input, shift, order=order, mode=mode, cval=cval,
    prefilter=prefilter)``: the output at index ``o`` is the spline of ``input`` at
    ``o - shift``.

    ``shift`` is a number or one per axis, and may be traced: the result is differentiable
    in it (and in ``input``), every order, as ``AffineTransform``'s in its offset. SciPy's
    values bitwise: the identity matrix and the offset ``-shift`` give SciPy's coordinates
    ``o + (-shift)`` exactly.
    """
    image = image_argument("shift", input)
    d = image.ndim
    amount = jnp.asarray(shift)
    if jnp.iscomplexobj(amount) or amount.ndim > 1 or amount.size not in (1, d):
        raise ValueError(
            f"shift: argument 'shift' must be a real number or {d} of them (one per axis of "
            f"'input'); got shape {amount.shape}."
        )
    adapter = AffineTransform(order, mode, cval, prefilter)  # type: ignore[arg-type]
    return adapter(image, jnp.eye(d), -jnp.broadcast_to(amount, (d,)))
