"""``AffineTransform``: SciPy's ``affine_transform`` (an image resampled at ``matrix @ o +
offset`` for each output index ``o``), differentiable in the image, the matrix and the
offset; the rules are ``MapCoordinates``'s at those points, their derivative in the points
carried to the matrix and the offset."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.ndimage
from jax.core import Tracer

import jaxbridge as jb

from .._shared._rules import compiled
from ._images import (
    check_number,
    check_order,
    check_shape,
    empty_result,
    flat_size,
    image_argument,
    pulled_back,
    refuse_empty_input,
)
from ._splines import Mode, prepadded
from .map_coordinates import MapCoordinates, saved_coefficients

OWNER = "AffineTransform"


class AffineTransform(jb.Adapter):
    """The image ``input`` resampled by an affine map, with SciPy on the host:
    ``AffineTransform(order, mode, cval, prefilter)(input, matrix, offset)`` is
    ``scipy.ndimage.affine_transform(input, matrix, offset, order=order, mode=mode,
    cval=cval, prefilter=prefilter)``: the output at index ``o`` is the spline of
    ``input`` at ``matrix @ o + offset`` (the "pull" convention: ``matrix`` maps output
    indices to input coordinates).

    ``input`` has ``d`` axes; ``matrix`` is (d, k) for an output of ``k`` axes (shape
    ``output_shape``, by default ``input``'s), or (d + 1, d + 1) / (d, d + 1) homogeneous
    (the offset in its last column), or (d,) for a diagonal; ``offset`` a number or (d,).
    SciPy's values, bitwise for a 2-D ``matrix`` (a 1-D one is made diagonal here, where
    SciPy computes ``(o + offset / m) m``: the same to rounding).

    Derivatives, every order, both modes: in ``input`` as ``MapCoordinates``'s (linear;
    ``jax.linear_transpose`` where ``cval`` does not enter); in ``matrix`` and ``offset``
    through the points, ``∂/∂matrix[i, j] = ∂ᵢ spline · o[j]`` and ``∂/∂offset[i] = ∂ᵢ
    spline``, for ``order >= 1``, with ``MapCoordinates``'s rule at knots (order 1: the
    slope above) and edges (0 beyond "constant"'s).

    The bridged call underneath takes the image flattened (``"(s),(d,k),(d)->(o)"``,
    leading axes batch axes), with the axis lengths the static parameters ``shape`` and
    ``output_shape``, which a call with the image sets. A non-finite matrix or offset is a
    ``ValueError`` naming it.

    Parameters:
        order: the spline's degree, 0 to 5.
        mode: SciPy's boundary mode (see ``MapCoordinates``).
        cval: the value beyond the edges for "constant" and "grid-constant".
        prefilter: whether ``input`` is first turned into B-spline coefficients
            (``SplineFilter``) for ``order >= 2``.
        output_shape: keyword-only, the output's shape (by default ``input``'s).
        shape: keyword-only, the image's axis lengths (for the flattened form).
    """

    order: int = 3
    mode: Mode = "constant"
    cval: float = 0.0
    prefilter: bool = True
    _: dataclasses.KW_ONLY
    output_shape: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()

    signature = "(s),(d,k),(d)->(o)"

    def __post_init__(self) -> None:
        check_order(OWNER, self.order)
        check_number(OWNER, "cval", self.cval)
        check_shape(OWNER, self.shape)
        check_shape(OWNER, self.output_shape, "output_shape", least=0)  # (SciPy's empty output)
        if self.prefilter not in (True, False):
            raise ValueError(f"{OWNER}: parameter 'prefilter' must be True or False.")

    @property
    def linear_in(self) -> tuple[str, ...]:  # type: ignore[override]
        affine = self.cval != 0 and self.mode in ("constant", "grid-constant")
        return () if affine else ("input",)

    def __call__(self, input: Any, matrix: Any, offset: Any = 0.0) -> Any:
        if self.shape:
            return jb.Adapter.__call__(self, input, matrix, offset)
        image = image_argument(OWNER, input)
        d = image.ndim
        output_shape = self.output_shape or image.shape
        matrix, offset = affine_arguments(OWNER, d, len(output_shape), matrix, offset)
        if math.prod(output_shape) == 0:
            return empty_result(output_shape, image, matrix, offset)
        if image.size == 0:
            refuse_empty_input(
                OWNER, image.shape, f"the points of an output of shape {output_shape}"
            )
        adapter = dataclasses.replace(self, shape=image.shape, output_shape=output_shape)
        values = jb.Adapter.__call__(adapter, image.reshape(-1), matrix, offset)
        return values.reshape(output_shape)

    def output_specs(self, input, matrix, offset):
        flat_size(OWNER, self.shape, input.shape)
        d, k = len(self.shape), len(self.output_shape)
        if matrix.shape[-2:] != (d, k) or offset.shape[-1:] != (d,):
            raise ValueError(
                f"{OWNER}: arguments 'matrix' and 'offset' must have trailing shapes {(d, k)} "
                f"and {(d,)} for an image of {d} axes and an output of {k}; got "
                f"{matrix.shape} and {offset.shape}."
            )
        dtype = jb.result_dtype(input, matrix, offset)
        return jax.ShapeDtypeStruct((math.prod(self.output_shape),), dtype)

    def check(self, input, matrix, offset):
        for name, value in (("matrix", matrix), ("offset", offset)):
            if not np.isfinite(value).all():
                raise ValueError(f"argument {name!r} has non-finite entries (NaN or inf).")

    def _mapping(self) -> MapCoordinates:
        """The ``MapCoordinates`` of the same spline (its rules evaluate at the points)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(MapCoordinates)}
        return MapCoordinates(**fields)

    def saves_coefficients(self) -> bool:
        """Whether the forward keeps the prefilter's coefficients for the rules: where
        SciPy does not prepad the image ("nearest" and "grid-constant" it does, and adds
        the padding to each point inside its C loop, which no call of ours reproduces
        bitwise)."""
        return (
            self.prefilter
            and self.order > 1
            and not prepadded(self.mode, self.order, self.prefilter)
        )

    def residual_specs(self, input, matrix, offset):
        if not self.saves_coefficients():
            return ()
        return jax.ShapeDtypeStruct((math.prod(self.shape),), np.float64)

    def forward(self, input, matrix, offset, *, out: Any = None, residuals: bool = True):
        image = np.asarray(input).reshape(self.shape)
        saves = self.saves_coefficients()
        if saves:  # SciPy's own steps (the same values, bitwise), the coefficients kept
            buffer = None if out is None or out[1].dtype != np.float64 or not residuals else out[1]
            into = None if buffer is None else buffer.reshape(self.shape)
            coefficients = scipy.ndimage.spline_filter(
                image, self.order, output=np.float64 if into is None else into, mode=self.mode
            )
            image = coefficients if into is None else into
        values = scipy.ndimage.affine_transform(
            image,
            np.asarray(matrix, np.float64),
            np.asarray(offset, np.float64),  # type: ignore[arg-type] (SciPy takes an array)
            output_shape=self.output_shape,
            output=np.float64,
            order=self.order,
            mode=self.mode,
            cval=self.cval,
            prefilter=self.prefilter and not saves,
        )
        values = values.reshape(-1).astype(jb.result_dtype(input, matrix, offset), copy=False)
        return (values, image.reshape(-1)) if saves and residuals else values

    def points(self, matrix: jax.Array, offset: jax.Array) -> jax.Array:
        """``matrix @ o + offset`` for each output index ``o``: (d, output size)."""
        dtype = jb.result_dtype(matrix, offset)
        grid = jnp.indices(self.output_shape, dtype).reshape(len(self.output_shape), -1)
        return matrix.astype(dtype) @ grid + offset.astype(dtype)[:, None]

    def interpolant(self, input: jax.Array, matrix: jax.Array, offset: jax.Array) -> jax.Array:
        """The same values in JAX (one image, matrix and offset), for the rules."""
        dtype = jb.result_dtype(input, matrix, offset)
        return self._mapping().interpolant(input, self.points(matrix, offset)).astype(dtype)

    def _from_saved(self, res: tuple) -> Any:
        """The interpolants of ``(input, matrix, offset)`` (batched) for the rules, on the
        forward's saved coefficients where it kept them (see ``MapCoordinates``)."""
        if not self.saves_coefficients():
            return jnp.vectorize(self.interpolant, signature="(s),(d,k),(d)->(o)")
        mapping, saved = self._mapping(), res[4]

        def interpolants(input, matrix, offset):
            dtype = jb.result_dtype(input, matrix, offset)
            coefficients = saved_coefficients(mapping, saved, input)
            points = jnp.vectorize(self.points, signature="(d,k),(d)->(d,o)")(matrix, offset)
            values = jnp.vectorize(mapping.evaluated, signature="(c),(d,o)->(o)")
            return values(coefficients, points).astype(dtype)

        return interpolants

    @compiled
    def pullback(self, res, g):
        return pulled_back(self._from_saved(res), res[:3], g)

    @compiled
    def pushforward(self, res, tangents):
        primals = [
            x if t is None else jnp.broadcast_to(x, t.shape) for x, t in zip(res[:3], tangents)
        ]
        tangents = [jnp.zeros_like(x) if t is None else t for x, t in zip(primals, tangents)]
        return jax.jvp(self._from_saved(res), tuple(primals), tuple(tangents))[1]


def affine_arguments(
    owner: str, d: int, k: int, matrix: Any, offset: Any
) -> tuple[jax.Array, jax.Array]:
    """SciPy's forms of an affine map as a (d, k) matrix and a (d,) offset: a (d,) diagonal,
    a (d, k) matrix, or a homogeneous (d + 1, d + 1) or (d, d + 1) one (its last column
    the offset, given instead of ``offset``)."""
    matrix = jnp.asarray(matrix)
    offset = jnp.asarray(offset)
    if jnp.iscomplexobj(matrix) or jnp.iscomplexobj(offset):
        raise TypeError(f"{owner}: arguments 'matrix' and 'offset' must be real.")
    if matrix.ndim == 1 and matrix.shape == (d,) and k == d:
        matrix = jnp.diag(matrix)
    elif matrix.ndim == 2 and matrix.shape[1] == d + 1 and matrix.shape[0] in (d, d + 1):
        if matrix.shape[0] == d + 1:
            matrix = _homogeneous(owner, d, matrix)
        offset = matrix[:d, d]
        matrix = matrix[:d, :d]
    if matrix.shape != (d, k):
        raise ValueError(
            f"{owner}: argument 'matrix' must have shape {(d, k)} (input axes by output axes), "
            f"{(d,)} (a diagonal), or a homogeneous {(d + 1, d + 1)} or {(d, d + 1)}; got "
            f"shape {matrix.shape}."
        )
    if offset.ndim == 0:
        offset = jnp.full((d,), offset)
    if offset.shape != (d,):
        raise ValueError(
            f"{owner}: argument 'offset' must be a number or have shape {(d,)}; got shape "
            f"{offset.shape}."
        )
    return matrix, offset


def affine_transform(
    input: Any,
    matrix: Any,
    offset: Any = 0.0,
    output_shape: tuple[int, ...] | None = None,
    order: int = 3,
    mode: str = "constant",
    cval: float = 0.0,
    prefilter: bool = True,
) -> Any:
    """``scipy.ndimage.affine_transform(input, matrix, offset, output_shape, order=order,
    mode=mode, cval=cval, prefilter=prefilter)`` as ``AffineTransform(order, mode, cval,
    prefilter, output_shape=output_shape)(input, matrix, offset)``."""
    adapter = AffineTransform(
        order,
        mode,  # type: ignore[arg-type]
        cval,
        prefilter,
        output_shape=tuple(output_shape) if output_shape is not None else (),
    )
    return adapter(input, matrix, offset)


def _homogeneous(owner: str, d: int, matrix: jax.Array) -> jax.Array:
    """A (d + 1, d + 1) homogeneous matrix whose bottom row must be ``[0, ..., 0, 1]``, as
    SciPy demands (another row is a projective map, not an affine one): refused when the
    matrix is known; when it is traced (values unknown until it runs) made NaN, which the
    adapter's host check refuses as a non-finite matrix, never dropping the row silently."""
    bottom = np.eye(d + 1)[d]
    if not isinstance(matrix, Tracer):  # (read on the host: inside a trace, jnp ops stage)
        row = np.asarray(matrix)[d]
        if not np.array_equal(row, bottom):
            raise ValueError(
                f"{owner}: argument 'matrix' is homogeneous, {(d + 1, d + 1)}, but its bottom "
                f"row is {row.tolist()}, not {bottom.tolist()} (an affine map's); SciPy "
                "refuses it too."
            )
        return matrix
    return jnp.where(jnp.all(matrix[d] == jnp.asarray(bottom, matrix.dtype)), matrix, jnp.nan)
