"""``Correlate1d``: SciPy's ``correlate1d`` (a 1-D correlation along one axis of an image),
bilinear in the image and the weights, and ``Correlate1dTransposed``, its transpose in the
image, which its rules call: each is one SciPy correlation on the host, and each one's
derivative in the image is the other. The weights' derivatives are the correlation
written in JAX (``_correlate.py``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.ndimage

import jaxbridge as jb

from .._shared._rules import asked, compiled, total
from ._correlate import FilterMode, transposed_correlate1d
from ._correlate import correlate1d as correlate_in_jax
from ._images import (
    check_number,
    check_shape,
    empty_result,
    flat_size,
    image_argument,
    pulled_back,
)

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
    0``) and in ``weights``. The tangent is this correlation again (``cval = 0`` for the
    image's), the image's cotangent its transpose, ``Correlate1dTransposed``: one SciPy
    call on the host each, as the value is. The weights' cotangent is the correlation's in
    JAX. ``jax.linear_transpose`` in ``input`` where ``cval`` does not enter.

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
        if self.shape:
            check_axis(self.axis, self.shape)

    @property
    def linear_in(self) -> tuple[str, ...]:  # type: ignore[override]
        affine = self.cval != 0 and self.mode in ("constant", "grid-constant")
        return () if affine else ("input",)

    def __call__(self, input: Any, weights: Any) -> Any:
        if self.shape:
            return jb.Adapter.__call__(self, input, weights)
        image = image_argument(OWNER, input)
        check_axis(self.axis, image.shape)
        kernel = jnp.asarray(weights)
        if kernel.ndim != 1 or kernel.shape[0] == 0 or jnp.iscomplexobj(kernel):
            raise ValueError(
                f"{OWNER}: argument 'weights' must be a non-empty 1-D real array; got shape "
                f"{kernel.shape}."
            )
        check_origin(self.origin, kernel.shape[0])
        if image.size == 0:
            return empty_result(image.shape, image)
        adapter = dataclasses.replace(self, shape=image.shape)
        return jb.Adapter.__call__(adapter, image.reshape(-1), kernel).reshape(image.shape)

    def output_specs(self, input, weights):
        flat_size(OWNER, self.shape, input.shape)
        check_origin(self.origin, weights.shape[-1])
        return jax.ShapeDtypeStruct(input.shape[-1:], jb.result_dtype(input))

    def check(self, input, weights):
        if not np.isfinite(weights).all():
            raise ValueError("argument 'weights' has non-finite entries (NaN or inf).")

    def forward(self, input, weights, *, out: Any = None):
        dtype = jb.result_dtype(input)
        buffer = None if out is None or dtype != np.float64 else out[0]
        into = None if buffer is None else buffer.reshape(self.shape)
        values = scipy.ndimage.correlate1d(
            np.asarray(input).reshape(self.shape),
            np.asarray(weights, np.float64),
            self.axis,
            output=np.float64 if into is None else into,  # (XLA's buffer, where it is one)
            mode=self.mode,
            cval=self.cval,
            origin=self.origin,
        )
        return values.reshape(-1).astype(dtype) if buffer is None else buffer

    def correlation(self, input: jax.Array, weights: jax.Array) -> jax.Array:
        """The same values in JAX (one image (s), weights (w)), for the weights' rules."""
        image = input.reshape(self.shape)
        values = correlate_in_jax(
            image, weights, self.axis % len(self.shape), self.mode, self.cval, self.origin
        )
        return values.reshape(-1).astype(jb.result_dtype(input))

    def _correlations(self, input: jax.Array, weights: jax.Array) -> jax.Array:
        return jnp.vectorize(self.correlation, signature="(s),(w)->(s)")(input, weights)

    def linear_part(self) -> Correlate1d:
        """This correlation with ``cval = 0``: its derivative in the image."""
        return dataclasses.replace(self, cval=0.0)

    def transposed(self) -> Correlate1dTransposed:
        """Its transpose in the image (which ``cval`` does not enter)."""
        return Correlate1dTransposed(self.axis, self.mode, self.origin, shape=self.shape)

    @compiled
    def pullback(self, res, g, *, wanted=None):
        input, weights = res[:2]
        image = kernel = None
        if asked(wanted, "input") and jnp.issubdtype(input.dtype, jnp.floating):
            image = self.transposed()(g, weights).astype(input.dtype)  # (the bridge sums)
        if asked(wanted, "weights") and jnp.issubdtype(weights.dtype, jnp.floating):
            (kernel,) = pulled_back(lambda w: self._correlations(input, w), (weights,), g)
        return image, kernel

    @compiled
    def pushforward(self, res, tangents):
        input, weights = res[:2]
        d_input, d_weights = tangents
        return total(
            (
                None if d_input is None else self.linear_part()(d_input, weights),
                None if d_weights is None else self(input, d_weights),
            )
        )


class Correlate1dTransposed(jb.Adapter):
    """``Correlate1d``'s transpose in the image, for its rules:
    ``Correlate1dTransposed(axis, mode, origin, shape=shape)(g, weights)`` is ``Cᵀ g`` for
    ``C`` the correlation ``Correlate1d(axis, mode, 0.0, origin, shape=shape)(·, weights)``
    (``cval`` enters its values, not its transpose), flattened images in and out.

    On the host, one pass: SciPy's correlation of ``g`` with the flipped weights, zeros
    beyond the edges, and the share of the extension folded back onto the edges
    (``transposed_correlate1d``). Bilinear in ``g`` and ``weights``: its derivative in
    ``g`` is its own transpose, ``C``; in ``weights``, the correlation's in JAX. Every
    order, both modes.
    """

    axis: int
    mode: FilterMode
    origin: int
    _: dataclasses.KW_ONLY
    shape: tuple[int, ...]

    signature = "(s),(w)->(s)"
    linear_in = ("g",)

    def output_specs(self, g, weights):
        return jax.ShapeDtypeStruct(g.shape[-1:], jb.result_dtype(g))

    def forward(self, g, weights, *, out: Any = None):
        dtype = jb.result_dtype(g)
        buffer = None if out is None or dtype != np.float64 else out[0]
        into = None if buffer is None else buffer.reshape(self.shape)
        image = np.asarray(g, np.float64).reshape(self.shape)
        values = transposed_correlate1d(image, weights, self.axis, self.mode, self.origin, into)
        return values.reshape(-1).astype(dtype) if buffer is None else buffer

    def correlation(self) -> Correlate1d:
        """``C``, its transpose in ``g``."""
        return Correlate1d(self.axis, self.mode, 0.0, self.origin, shape=self.shape)

    @compiled
    def pullback(self, res, y, *, wanted=None):
        g, weights = res[:2]
        correlation = self.correlation()
        cotangent_g = cotangent_weights = None
        if asked(wanted, "g") and jnp.issubdtype(g.dtype, jnp.floating):
            cotangent_g = correlation(y, weights).astype(g.dtype)
        if asked(wanted, "weights") and jnp.issubdtype(weights.dtype, jnp.floating):
            # <y, C(w)ᵀ g> = <C(w) y, g>: the weights' cotangent of C at y for g
            (cotangent_weights,) = pulled_back(
                lambda w: correlation._correlations(y, w), (weights,), g
            )
        return cotangent_g, cotangent_weights

    @compiled
    def pushforward(self, res, tangents):
        g, weights = res[:2]
        d_g, d_weights = tangents
        return total(
            (
                None if d_g is None else self(d_g, weights),
                None if d_weights is None else self(g, d_weights),
            )
        )


def check_axis(axis: int, shape: tuple[int, ...]) -> None:
    if not -len(shape) <= axis < len(shape):
        raise ValueError(
            f"{OWNER}: parameter 'axis' is {axis}, not an axis of an image of shape {shape}."
        )


def check_origin(origin: int, size: int) -> None:
    if not -(size // 2) <= origin <= (size - 1) // 2:
        raise ValueError(
            f"{OWNER}: parameter 'origin' {origin} must lie in "
            f"[{-(size // 2)}, {(size - 1) // 2}] for {size} weights."
        )


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
