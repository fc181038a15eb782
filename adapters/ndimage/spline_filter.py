"""``SplineFilter``: SciPy's ``spline_filter`` (an image's B-spline coefficients), linear;
its transpose is SciPy's filter again between two diagonal scalings where the mode's
boundary makes it so, each axis's filter matrix transposed elsewhere."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import numpy as np
import scipy.ndimage

import jaxbridge as jb

from .._shared._rules import compiled
from ._images import check_order, check_shape, empty_result, flat_size, image_argument
from ._splines import Mode


class SplineFilter(jb.Adapter):
    """The B-spline coefficients of ``input`` along every axis, with SciPy on the host:
    ``SplineFilter(order, mode)(input)`` is ``scipy.ndimage.spline_filter(input, order,
    mode=mode)`` (computed in float64; the result takes ``input``'s floating dtype, float64
    for an integer image).

    The filter is linear in ``input``: its tangent is the filter of the tangent, its
    cotangent the transposed filter, so derivatives of every order and
    ``jax.linear_transpose`` work. The transpose is one pass of SciPy's filter where the
    boundary allows: "grid-wrap"'s filter is symmetric, and the whole-sample mirror's
    ("mirror", and "constant", "grid-constant", "wrap", which SciPy filters so) is
    ``Mᵀ = W M W⁻¹`` with ``W`` 1/2 at both ends of each axis and 1 inside. "reflect",
    "grid-mirror" and "nearest" (whose filters SciPy starts with truncated sums) take
    each axis's filter as a matrix (SciPy's ``spline_filter1d`` of the identity),
    transposed: ``n`` times the work per axis of length ``n``.

    The call form is SciPy's (an image of any rank); the bridged call underneath takes the
    image flattened (``"(s)->(s)"``, leading axes batch axes), its axis lengths the static
    parameter ``shape``, which a call with the image sets itself.

    Parameters:
        order: the spline's degree, 2 to 5.
        mode: SciPy's boundary condition for the filter (``"mirror"``, SciPy's default).
        shape: keyword-only, the image's axis lengths (for the flattened form).
        transposed: keyword-only; True gives the filter's transpose (the cotangent map).
    """

    order: int = 3
    mode: Mode = "mirror"
    _: dataclasses.KW_ONLY
    shape: tuple[int, ...] = ()
    transposed: bool = False

    signature = "(s)->(s)"
    blas_threads = 1  # the transpose's tensordot woke OpenBLAS's threads (see Adapter.blas_threads)
    linear_in = ("input",)

    def __post_init__(self) -> None:
        check_order("SplineFilter", self.order, least=2)
        check_shape("SplineFilter", self.shape)
        if self.transposed not in (True, False):
            raise ValueError("SplineFilter: parameter 'transposed' must be True or False.")

    def __call__(self, input: Any) -> Any:
        if self.shape:
            return jb.Adapter.__call__(self, input)
        image = image_argument("SplineFilter", input)
        if image.size == 0:
            return empty_result(image.shape, image)
        adapter = dataclasses.replace(self, shape=image.shape)
        return jb.Adapter.__call__(adapter, image.reshape(-1)).reshape(image.shape)

    def output_specs(self, input):
        flat_size("SplineFilter", self.shape, input.shape)
        return jax.ShapeDtypeStruct(input.shape[-1:], jb.result_dtype(input))

    def forward(self, input):
        image = np.asarray(input, np.float64).reshape(self.shape)
        if self.transposed and self.mode in _MIRRORED:
            ends = _ends(self.shape)
            image = scipy.ndimage.spline_filter(image * ends, self.order, np.float64, self.mode)
            image /= ends
        elif self.transposed and self.mode != "grid-wrap":  # ("grid-wrap": symmetric)
            for axis, n in enumerate(self.shape):
                # the filter along `axis` is y = M x there, its transpose Mᵀ
                image = np.moveaxis(
                    np.tensordot(filter_matrix(n, self.order, self.mode).T, image, (1, axis)),
                    0,
                    axis,
                )
        else:
            image = scipy.ndimage.spline_filter(image, self.order, np.float64, self.mode)
        return image.reshape(-1).astype(jb.result_dtype(input), copy=False)

    @compiled
    def pullback(self, res, g):
        return (dataclasses.replace(self, transposed=not self.transposed)(g),)


_MIRRORED = ("mirror", "wrap", "constant", "grid-constant")
"""The modes whose filter SciPy runs with the whole-sample mirror's boundary: there the
matrix ``B`` that samples a spline from its coefficients has ``W B`` symmetric (``W`` 1/2
at the ends, 1 inside), so the filter ``M = B⁻¹`` has ``Mᵀ = W M W⁻¹``."""


@functools.lru_cache(maxsize=16)
def _ends(shape: tuple[int, ...]) -> np.ndarray:
    """``W⁻¹`` of every axis at once: 2 at each end of an axis longer than 1 (twice at a
    corner), 1 inside."""
    scale = np.ones(shape)
    for axis, n in enumerate(shape):
        if n > 1:
            edges: list[Any] = [slice(None)] * len(shape)
            for end in (0, n - 1):
                edges[axis] = end
                scale[tuple(edges)] *= 2
    return scale


@functools.lru_cache(maxsize=16)
def filter_matrix(n: int, order: int, mode: str) -> np.ndarray:
    """SciPy's 1-D spline filter on ``n`` samples as an (n, n) matrix: column ``j`` is the
    filter of the ``j``-th unit vector (the filter is linear, so this is exactly SciPy's)."""
    return scipy.ndimage.spline_filter1d(np.eye(n), order, axis=0, output=np.float64, mode=mode)


def spline_filter(input: Any, order: int = 3, mode: str = "mirror") -> Any:
    """``scipy.ndimage.spline_filter(input, order, mode=mode)`` as ``SplineFilter(order,
    mode)(input)``."""
    return SplineFilter(order, mode)(input)  # type: ignore[arg-type]
