"""``MapCoordinates``: SciPy's ``map_coordinates`` (an image's spline at given points),
linear in the image and differentiable in the points; the rules differentiate SciPy's
evaluation written in JAX (``_splines.py``) after the bridged ``SplineFilter``."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.ndimage

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
from ._splines import PREPAD, Mode, evaluate, prepadded
from .spline_filter import SplineFilter

OWNER = "MapCoordinates"


class MapCoordinates(jb.Adapter):
    """The spline interpolant of the image ``input`` at ``coordinates``, with SciPy on the
    host: ``MapCoordinates(order, mode, cval, prefilter)(input, coordinates)`` is
    ``scipy.ndimage.map_coordinates(input, coordinates, order=order, mode=mode, cval=cval,
    prefilter=prefilter)``.

    ``input`` has ``d`` axes, ``coordinates`` shape (d, ...) (the points' positions in
    ``input``'s index space, one row per axis); the result has shape ``coordinates.shape[1:]``
    and the floating dtype of the two arguments (float64 for integer ones). SciPy's values:
    the same call on the host.

    Derivatives, every order, both modes, with the points' splines held as SciPy evaluates
    them (its boundary folding and B-spline weights, written in JAX):

    - in ``input``: linear (affine where ``mode`` is "constant" or "grid-constant" with
      ``cval != 0``: the constant enters but not its derivative); the tangent is the
      interpolant of the tangent, the cotangent the evaluation's transpose (a scatter of
      the weights) followed, with ``prefilter`` and ``order >= 2``, by ``SplineFilter``'s
      transpose. ``jax.linear_transpose`` works where the map is linear (``cval == 0`` or
      a mode without a constant).
    - in ``coordinates``: the spline's derivative along each axis (a spline of one degree
      less), for ``order >= 1``. At ``order = 1`` the interpolant has kinks at the
      integers (the knots): there the derivative is the slope of the segment above (the
      one toward larger coordinates), as the weights SciPy computes from ``floor`` give it;
      the second derivative is 0. ``order = 0`` (nearest sample) has derivative 0 in the
      coordinates everywhere (it is piecewise constant; a jump at half-integers). Beyond
      the edges the derivative is that of ``mode``'s extension (the reflections flip its
      sign; "constant" gives 0 outside ``[0, n - 1]``).

    The call form is SciPy's; the bridged call underneath takes the image flattened and the
    points as (d, m) (``"(s),(d,m)->(m)"``, leading axes batch axes), with the image's
    axis lengths the static parameter ``shape``, which a call with the image sets itself.
    Non-finite coordinates are a ``ValueError`` naming the argument (SciPy's result there is
    undefined).

    Parameters:
        order: the spline's degree, 0 to 5 (3, SciPy's default).
        mode: SciPy's boundary mode: "constant" (the default), "grid-constant", "nearest",
            "mirror", "reflect" (= "grid-mirror"), "wrap", "grid-wrap".
        cval: the value beyond the edges for "constant" and "grid-constant".
        prefilter: whether ``input`` is first turned into B-spline coefficients
            (``SplineFilter``) for ``order >= 2``, as SciPy's default; False treats
            ``input`` as the coefficients.
        shape: keyword-only, the image's axis lengths (for the flattened form).
    """

    order: int = 3
    mode: Mode = "constant"
    cval: float = 0.0
    prefilter: bool = True
    _: dataclasses.KW_ONLY
    shape: tuple[int, ...] = ()

    signature = "(s),(d,m)->(m)"

    def __post_init__(self) -> None:
        check_order(OWNER, self.order)
        check_number(OWNER, "cval", self.cval)
        check_shape(OWNER, self.shape)
        if self.prefilter not in (True, False):
            raise ValueError(f"{OWNER}: parameter 'prefilter' must be True or False.")

    @property
    def linear_in(self) -> tuple[str, ...]:  # type: ignore[override]
        affine = self.cval != 0 and self.mode in ("constant", "grid-constant")
        return () if affine else ("input",)

    def __call__(self, input: Any, coordinates: Any) -> Any:
        if self.shape:
            return jb.Adapter.__call__(self, input, coordinates)
        image = image_argument(OWNER, input)
        points = jnp.asarray(coordinates)
        if jnp.iscomplexobj(points):
            raise TypeError(f"{OWNER}: argument 'coordinates' is complex; they must be real.")
        if points.ndim < 2 or points.shape[0] != image.ndim:
            raise ValueError(
                f"{OWNER}: argument 'coordinates' must have shape (d, ...) with d = "
                f"{image.ndim}, the number of axes of 'input' (one row per axis), and at least "
                f"one more axis; got shape {points.shape}."
            )
        if image.size == 0:
            if points.size:
                refuse_empty_input(OWNER, image.shape, "the points of 'coordinates'")
            return empty_result(points.shape[1:], image, points)
        adapter = dataclasses.replace(self, shape=image.shape)
        values = jb.Adapter.__call__(adapter, image.reshape(-1), points.reshape(image.ndim, -1))
        return values.reshape(points.shape[1:])

    def output_specs(self, input, coordinates):
        flat_size(OWNER, self.shape, input.shape)
        if coordinates.shape[-2] != len(self.shape):
            raise ValueError(
                f"{OWNER}: argument 'coordinates' must have {len(self.shape)} rows (one per "
                f"axis of the image of shape {self.shape}); got shape {coordinates.shape}."
            )
        return jax.ShapeDtypeStruct(coordinates.shape[-1:], jb.result_dtype(input, coordinates))

    def check(self, input, coordinates):
        if not np.isfinite(coordinates).all():
            raise ValueError("argument 'coordinates' has non-finite entries (NaN or inf).")

    def saves_coefficients(self) -> bool:
        """Whether the forward keeps the prefilter's coefficients for the rules."""
        return self.prefilter and self.order > 1

    def _padding(self) -> int:
        return PREPAD if prepadded(self.mode, self.order, self.prefilter) else 0

    def residual_specs(self, input, coordinates):
        if not self.saves_coefficients():
            return ()
        size = math.prod(n + 2 * self._padding() for n in self.shape)
        return jax.ShapeDtypeStruct((size,), np.float64)

    def forward(self, input, coordinates, *, out: Any = None, residuals: bool = True):
        dtype = jb.result_dtype(input, coordinates)
        image = np.asarray(input).reshape(self.shape)
        options = {"order": self.order, "mode": self.mode, "cval": self.cval}
        if not self.saves_coefficients():
            values = scipy.ndimage.map_coordinates(
                image, coordinates, output=np.float64, prefilter=self.prefilter, **options
            )
            return values.astype(dtype, copy=False)
        # SciPy's own steps (map_coordinates with prefilter=True: the same values, bitwise),
        # the coefficients kept (in XLA's buffer for them, where it is float64)
        pad = self._padding()
        if pad:  # (SciPy's _prepad_for_spline_filter)
            if self.mode == "nearest":
                image = np.pad(image, pad, mode="edge")
            else:
                image = np.pad(image, pad, mode="constant", constant_values=self.cval)
            # (SciPy adds its nprepad to each coordinate, in float64)
            coordinates = np.asarray(coordinates, np.float64) + pad
        buffer = None if out is None or out[1].dtype != np.float64 or not residuals else out[1]
        into = None if buffer is None else buffer.reshape(image.shape)
        coefficients = scipy.ndimage.spline_filter(
            image, self.order, output=np.float64 if into is None else into, mode=self.mode
        )
        coefficients = coefficients if into is None else into
        values = scipy.ndimage.map_coordinates(
            coefficients, coordinates, output=np.float64, prefilter=False, **options
        )
        values = values.astype(dtype, copy=False)
        return (values, coefficients.reshape(-1)) if residuals else values

    def coefficients(self, input: jax.Array) -> jax.Array:
        """The spline's coefficients of one image (s) in JAX, flattened: the image
        prepadded and prefiltered (``SplineFilter``) as SciPy's, or the image itself."""
        if not self.saves_coefficients():
            return input
        image = input.reshape(self.shape)
        if pad := self._padding():  # SciPy's _prepad_for_spline_filter
            if self.mode == "nearest":
                image = jnp.pad(image, pad, mode="edge")
            else:
                image = jnp.pad(image, pad, constant_values=self.cval)
        return SplineFilter(self.order, self.mode)(image).reshape(-1)

    def evaluated(self, coefficients: jax.Array, coordinates: jax.Array) -> jax.Array:
        """The spline with ``coefficients`` (flattened) at ``coordinates`` (d, m)."""
        shape = tuple(n + 2 * self._padding() for n in self.shape)
        dtype = jb.result_dtype(coefficients, coordinates)
        grid = coefficients.reshape(shape).astype(dtype)
        points = coordinates.astype(dtype)
        return evaluate(grid, points, self.order, self.mode, self.cval, self._padding())

    def interpolant(self, input: jax.Array, coordinates: jax.Array) -> jax.Array:
        """The same values in JAX (one image (s), points (d, m)), for the rules."""
        dtype = jb.result_dtype(input, coordinates)
        return self.evaluated(self.coefficients(input), coordinates).astype(dtype)

    def _from_saved(self, res: tuple) -> Any:
        """The interpolant of ``(input, coordinates)`` (batched) for the rules, with the
        forward's saved coefficients as the prefilter's value (no second SciPy filter;
        its derivative is the prefilter's, ``saved_coefficients``)."""
        if not self.saves_coefficients():
            return jnp.vectorize(self.interpolant, signature="(s),(d,m)->(m)")
        saved = res[3]

        def interpolants(input, coordinates):
            dtype = jb.result_dtype(input, coordinates)
            coefficients = saved_coefficients(self, saved, input)
            values = jnp.vectorize(self.evaluated, signature="(c),(d,m)->(m)")
            return values(coefficients, coordinates).astype(dtype)

        return interpolants

    @compiled
    def pullback(self, res, g):
        return pulled_back(self._from_saved(res), res[:2], g)

    @compiled
    def pushforward(self, res, tangents):
        primals = [
            x if t is None else jnp.broadcast_to(x, t.shape) for x, t in zip(res[:2], tangents)
        ]
        tangents = [jnp.zeros_like(x) if t is None else t for x, t in zip(primals, tangents)]
        return jax.jvp(self._from_saved(res), tuple(primals), tuple(tangents))[1]


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def saved_coefficients(
    adapter: MapCoordinates, coefficients: jax.Array, input: jax.Array
) -> jax.Array:
    """``adapter.coefficients(input)`` (batched), whose value the forward saved as
    ``coefficients``: that value (a residual, constant to the bridge), the prefilter's
    tangent (``SplineFilter``'s, a bridged call) as its derivative in ``input``."""
    return jax.lax.stop_gradient(jnp.broadcast_to(coefficients, _batch(coefficients, input)))


@saved_coefficients.defjvp
def _saved_jvp(adapter: MapCoordinates, primals: tuple, tangents: tuple) -> tuple:
    coefficients, input = primals
    # (the value by the function itself, so that a derivative of this rule finds the
    # prefilter's derivative again, not a constant: forward over reverse)
    value = saved_coefficients(adapter, coefficients, input)
    linear = dataclasses.replace(adapter, cval=0.0)  # (the prepadding's cval is constant)
    d_coefficients = jnp.vectorize(linear.coefficients, signature="(s)->(c)")(tangents[1])
    return value, jnp.broadcast_to(d_coefficients, value.shape).astype(value.dtype)


def _batch(coefficients: jax.Array, input: jax.Array) -> tuple[int, ...]:
    """The coefficients' shape with the batch axes of both."""
    batch = np.broadcast_shapes(coefficients.shape[:-1], input.shape[:-1])
    return (*batch, coefficients.shape[-1])


def map_coordinates(
    input: Any,
    coordinates: Any,
    order: int = 3,
    mode: str = "constant",
    cval: float = 0.0,
    prefilter: bool = True,
) -> Any:
    """``scipy.ndimage.map_coordinates(input, coordinates, order=order, mode=mode,
    cval=cval, prefilter=prefilter)`` as ``MapCoordinates(order, mode, cval,
    prefilter)(input, coordinates)``."""
    return MapCoordinates(order, mode, cval, prefilter)(input, coordinates)  # type: ignore[arg-type]
