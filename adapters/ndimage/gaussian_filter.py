"""``gaussian_filter1d`` and ``gaussian_filter``: SciPy's Gaussian filters as ``Correlate1d``
calls with SciPy's kernel, made in JAX from ``sigma`` when it is traced (so that the result
is differentiable in it)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb

from ._images import filtered_axes, image_argument, per_axis, to_output
from .correlate1d import Correlate1d


def gaussian_kernel(sigma: Any, order: int, radius: int) -> Any:
    """SciPy's ``_gaussian_kernel1d``: the normalised Gaussian on ``-radius … radius``, or
    its ``order``-th derivative; NumPy's arithmetic for a number ``sigma`` (SciPy's weights
    to the bit), JAX's for a traced one."""
    xp = np if isinstance(sigma, float) else jnp
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    sigma2 = sigma * sigma
    phi = xp.exp(-0.5 / sigma2 * x**2)
    phi = phi / phi.sum()
    if order == 0:
        return phi
    # q(x) φ(x) is the order-th derivative: SciPy's recursion q <- q' + q · (-x / σ²)
    q: list[Any] = [1.0] + [0.0] * order
    for _ in range(order):
        q = [
            (q[k - 1] * (1.0 / -sigma2) if k > 0 else 0.0)
            + (k + 1) * (q[k + 1] if k < order else 0.0)
            for k in range(order + 1)
        ]
    return sum(c * x**k for k, c in enumerate(q)) * phi


class _PositiveSigma(jb.Adapter):
    """A traced ``sigma``, unchanged, refused on the host where it is not positive and
    finite: the eager call's check, for a value known only when the program runs. Without it
    a traced 0 was refused as NaN ``'weights'`` the caller never passed, and a negative one
    filtered as ``|sigma|`` where the eager call refuses it."""

    owner: str
    signature = "()->()"
    vectorized = True

    def forward(self, sigma):
        bad = ~(sigma > 0) | ~np.isfinite(sigma)
        if bad.any():
            got = float(sigma[bad].flat[0])
            raise ValueError(f"{self.owner}: argument 'sigma' must be positive; got {got!r}.")
        return sigma

    def pullback(self, res, g):
        return (g,)

    def pushforward(self, res, tangents):
        return tangents[0]


def _radius(owner: str, sigma: Any, truncate: float, radius: int | None) -> tuple[Any, int]:
    """``sigma`` as a float when it is a number (else as traced), and the kernel's radius."""
    try:
        value: Any = float(np.asarray(sigma))
    except (TypeError, jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        value = jnp.asarray(sigma, jnp.result_type(float))
        if value.ndim != 0:
            raise ValueError(f"{owner}: argument 'sigma' must be a number per axis.") from None
        if radius is None:
            raise ValueError(
                f"{owner}: argument 'sigma' is traced (under jit, grad or vmap), and the "
                "kernel's radius, int(truncate * sigma + 0.5), depends on its value; pass "
                "radius= to trace or differentiate sigma."
            ) from None
        value = _PositiveSigma(owner)(value)
    else:
        if not value > 0 or not np.isfinite(value):
            raise ValueError(f"{owner}: argument 'sigma' must be positive; got {sigma!r}.")
    if radius is None:
        radius = int(truncate * value + 0.5)
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or radius < 0:
        raise ValueError(f"{owner}: argument 'radius' must be a whole number >= 0; got {radius!r}.")
    return value, int(radius)


def gaussian_filter1d(
    input: Any,
    sigma: Any,
    axis: int = -1,
    order: int = 0,
    output: Any = None,
    mode: str = "reflect",
    cval: float = 0.0,
    truncate: float = 4.0,
    *,
    radius: int | None = None,
) -> Any:
    """``scipy.ndimage.gaussian_filter1d(input, sigma, axis, order, output, mode, cval,
    truncate, radius=radius)``, SciPy's arguments in SciPy's order (``output``: None or a
    floating dtype, see ``to_output``): ``Correlate1d`` with SciPy's Gaussian kernel (or its
    ``order``-th derivative) of standard deviation ``sigma`` on ``-radius … radius``,
    ``radius = int(truncate * sigma + 0.5)`` unless given.

    Differentiable, every order, in ``input`` (linear) and in ``sigma`` (through the
    kernel's weights, the radius held fixed). ``sigma`` may be traced only with ``radius``
    given: the default radius jumps with ``sigma``'s value. SciPy's values bitwise for a
    number ``sigma``; to rounding (JAX's ``exp``) for a traced one, and to float32 rounding
    with JAX's 64-bit mode off (the weights are then float32 arrays).
    """
    owner = "gaussian_filter1d"
    image = image_argument(owner, input)
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise ValueError(f"{owner}: argument 'order' must be a whole number >= 0; got {order!r}.")
    value, radius = _radius(owner, sigma, truncate, radius)
    weights = gaussian_kernel(value, order, radius)[::-1]
    result = Correlate1d(axis, mode, cval)(image, weights)  # type: ignore[arg-type]
    return to_output(owner, output, result)


def gaussian_filter(
    input: Any,
    sigma: Any,
    order: int | tuple[int, ...] = 0,
    output: Any = None,
    mode: str | tuple[str, ...] = "reflect",
    cval: float = 0.0,
    truncate: float = 4.0,
    *,
    radius: int | tuple[int, ...] | None = None,
    axes: int | tuple[int, ...] | None = None,
) -> Any:
    """``scipy.ndimage.gaussian_filter(input, sigma, order, output, mode, cval, truncate,
    radius=radius, axes=axes)``, SciPy's arguments in SciPy's order (``output``: None or a
    floating dtype, see ``to_output``): ``gaussian_filter1d`` along each axis in
    turn (along ``axes`` alone where given).

    ``sigma``, ``order``, ``mode`` and ``radius`` are one for every axis or one per axis
    (per axis of ``axes``). An axis with a ``sigma`` of at most 1e-15 (a negative one too)
    is left unfiltered, as SciPy's, traced or not (a traced ``sigma`` needs ``radius``;
    there the derivative in it is 0). Differentiable in ``input`` and ``sigma``, every
    order (see ``gaussian_filter1d``); the values are SciPy's bitwise for number sigmas
    (each pass in ``input``'s dtype, as SciPy's output).
    """
    owner = "gaussian_filter"
    image = image_argument(owner, input)
    along = filtered_axes(owner, axes, image.ndim)
    d = len(along)
    sigmas, orders, modes, radii = (
        per_axis(owner, name, value, d)
        for name, value in (("sigma", sigma), ("order", order), ("mode", mode), ("radius", radius))
    )
    out = image
    for k, axis in enumerate(along):
        sigma, axis_mode = sigmas[k], modes[k]

        def one_pass(image, sigma, axis=axis, k=k, axis_mode=axis_mode):
            return gaussian_filter1d(
                image, sigma, axis, orders[k], mode=axis_mode, cval=cval, truncate=truncate,
                radius=radii[k],
            )  # fmt: skip

        try:
            skipped = float(np.asarray(sigma)) <= 1e-15
        except (
            TypeError,
            jax.errors.TracerArrayConversionError,
            jax.errors.ConcretizationTypeError,
        ):
            # traced: SciPy's skip chosen by value, the filter given a sigma it accepts
            # where it is skipped (a negative one filtered as |sigma|, 0 gave NaN weights)
            sigma = jnp.asarray(sigma, jnp.result_type(float))
            if sigma.ndim != 0:
                raise ValueError("gaussian_filter: argument 'sigma' must be a number per axis.")
            filters = sigma > 1e-15
            filtered = one_pass(out, jnp.where(filters, sigma, 1.0))
            out = jnp.where(filters, filtered, out.astype(filtered.dtype))
            continue
        if not skipped:
            out = one_pass(out, sigma)
    out = out if out is not image else jnp.asarray(image, jnp.result_type(image, float))
    return to_output(owner, output, out)
