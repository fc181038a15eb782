"""``Correlate1d``: SciPy's ``correlate1d`` (a 1-D correlation along one axis of an image),
bilinear in the image and the weights; the rules differentiate the same correlation
written in JAX (``_correlate.py``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.ndimage

import jaxbridge as jb

from .._rules import compiled
from ._correlate import FilterMode
from ._correlate import correlate1d as correlate_in_jax
from ._images import check_number, check_shape, flat_size, image_argument, pulled_back

OWNER = "Correlate1d"


class Correlate1d(jb.Adapter):
    """The correlation of ``input`` with ``weights`` along ``axis``, with SciPy on the host:
    ``Correlate1d(axis, mode, cval, origin)(input, weights)`` is
    ``scipy.ndimage.correlate1d(input, weights, axis, mode=mode, cval=cval,
    origin=origin)``: ``out[i] = Σ_j weights[j] input[i + j - len(weights) // 2 -
    origin]`` along ``axis``, ``input`` extended beyond its edges by ``mode``.

    SciPy's values bitwise (the result takes the floating dtype of ``input``, float64 for
    an integer image, as SciPy's output takes ``input``'s). Derivatives, every order, both
    modes: the correlation is linear in ``input`` (affine for "constant" with ``cval !=
    0``) and in ``weights``; its tangents and cotangents are the same correlation written
    in JAX, the extension by ``jnp.pad`` (whose transpose folds the extension back onto
    the edges). ``jax.linear_transpose`` in ``input`` where ``cval`` does not enter.

    The bridged call underneath takes the image flattened (``"(s),(w)->(s)"``, leading
    axes batch axes), its axis lengths the static parameter ``shape``, which a call with
    the image sets itself.

    Parameters:
        axis: the axis to correlate along.
        mode: SciPy's filter mode: "reflect" (the default; = "grid-mirror"), "constant"
            (= "grid-constant"), "nearest", "mirror", "wrap" (= "grid-wrap").
        cval: the value beyond the edges for "constant".
        origin: SciPy's shift of the weights' centre, within ``[-(w // 2), (w - 1) // 2]``.
        shape: keyword-only, the image's axis lengths (for the flattened form).
    """

    axis: int = -1
    mode: FilterMode = "reflect"
    cval: float = 0.0
    origin: int = 0
    _: dataclasses.KW_ONLY
    shape: tuple[int, ...] = ()

    signature = "(s),(w)->(s)"

    def __post_init__(self) -> None:
        for name in ("axis", "origin"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{OWNER}: parameter {name!r} must be a whole number.")
        check_number(OWNER, "cval", self.cval)
        check_shape(OWNER, self.shape)
        if self.shape and not -len(self.shape) <= self.axis < len(self.shape):
            raise ValueError(
                f"{OWNER}: parameter 'axis' is {self.axis}, not an axis of an image of shape "
                f"{self.shape}."
            )

    @property
    def linear_in(self) -> tuple[str, ...]:  # type: ignore[override]
        affine = self.cval != 0 and self.mode in ("constant", "grid-constant")
        return () if affine else ("input",)

    def __call__(self, input: Any, weights: Any) -> Any:
        if self.shape:
            return jb.Adapter.__call__(self, input, weights)
        image = image_argument(OWNER, input)
        adapter = dataclasses.replace(self, shape=image.shape)
        adapter.__post_init__()  # (the axis, now that the image's rank is known)
        kernel = jnp.asarray(weights)
        if kernel.ndim != 1 or kernel.shape[0] == 0 or jnp.iscomplexobj(kernel):
            raise ValueError(
                f"{OWNER}: argument 'weights' must be a non-empty 1-D real array; got shape "
                f"{kernel.shape}."
            )
        return jb.Adapter.__call__(adapter, image.reshape(-1), kernel).reshape(image.shape)

    def output_specs(self, input, weights):
        flat_size(OWNER, self.shape, input.shape)
        size = weights.shape[-1]
        if not -(size // 2) <= self.origin <= (size - 1) // 2:
            raise ValueError(
                f"{OWNER}: parameter 'origin' {self.origin} must lie in "
                f"[{-(size // 2)}, {(size - 1) // 2}] for {size} weights."
            )
        return jax.ShapeDtypeStruct(input.shape[-1:], jb.result_dtype(input))

    def check(self, input, weights):
        if not np.isfinite(weights).all():
            raise ValueError("argument 'weights' has non-finite entries (NaN or inf).")

    def forward(self, input, weights):
        values = scipy.ndimage.correlate1d(
            np.asarray(input).reshape(self.shape),
            np.asarray(weights, np.float64),
            self.axis,
            output=np.float64,
            mode=self.mode,
            cval=self.cval,
            origin=self.origin,
        )
        return values.reshape(-1).astype(jb.result_dtype(input))

    def correlation(self, input: jax.Array, weights: jax.Array) -> jax.Array:
        """The same values in JAX (one image (s), weights (w)), for the rules."""
        image = input.reshape(self.shape)
        values = correlate_in_jax(
            image, weights, self.axis % len(self.shape), self.mode, self.cval, self.origin
        )
        return values.reshape(-1).astype(jb.result_dtype(input))

    def _correlations(self, input: jax.Array, weights: jax.Array) -> jax.Array:
        return jnp.vectorize(self.correlation, signature="(s),(w)->(s)")(input, weights)

    @compiled
    def pullback(self, res, g):
        return pulled_back(self._correlations, res[:2], g)

    @compiled
    def pushforward(self, res, tangents):
        primals = [
            x if t is None else jnp.broadcast_to(x, t.shape) for x, t in zip(res[:2], tangents)
        ]
        tangents = [jnp.zeros_like(x) if t is None else t for x, t in zip(primals, tangents)]
        return jax.jvp(self._correlations, tuple(primals), tuple(tangents))[1]


def correlate1d(
    input: Any,
    weights: Any,
    axis: int = -1,
    mode: str = "reflect",
    cval: float = 0.0,
    origin: int = 0,
) -> Any:
    """``scipy.ndimage.correlate1d(input, weights, axis, mode=mode, cval=cval,
    origin=origin)`` as ``Correlate1d(axis, mode, cval, origin)(input, weights)``."""
    return Correlate1d(axis, mode, cval, origin)(input, weights)  # type: ignore[arg-type]
