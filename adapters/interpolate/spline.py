"""``InterpSpline`` (``make_interp_spline``): the interpolating B-spline of degree ``k``,
linear in the data; its cotangent is the transposed B-spline basis and interpolation system,
its tangent in the sites (degrees 1 and 3) the moved pieces of ``_sites``."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import scipy.interpolate

from ._hermite import hermite_form_moved
from ._linear import LinearSpline, bspline_transpose
from ._one_d import NO_SITE_DERIVATIVE, check_whole
from ._sites import interval_terms, within
from ._spline_slopes import spline_slopes

BC_TYPES = (None, "not-a-knot", "natural", "clamped", "periodic")

_SORTED_FROM = 32
"""Sites per degree + 1 from which the queries are evaluated sorted. SciPy's B-spline finds
each query's knot interval by walking from the last query's, about n/3 steps apart on
unsorted queries; sorting costs more than that saves below about 32 (k + 1) sites (measured
for k = 1, 3, 5 at 10,000 and 100,000 queries: sorted / unsorted 0.95-1.13 at k = 3 and
n = 128; 1.18-1.37 at n = 64, 0.70-0.83 at n = 256)."""


class InterpSpline(LinearSpline):
    """The interpolating B-spline through ``(x, y)`` evaluated at ``xq``:
    ``InterpSpline(k, bc_type)(x, y, xq)`` is ``make_interp_spline(x, y, k, bc_type)(xq,
    nu, extrapolate)``.

    ``x`` (n,) strictly increasing, ``y`` (n,), ``xq`` (m,) → (m,); leading axes are batch
    axes. ``bc_type`` is one of SciPy's names: None (not-a-knot for odd ``k``), "not-a-knot",
    "natural", "clamped" (derivatives set to 0 at both ends) or "periodic" (``y[0] ==
    y[-1]``). Values are SciPy's.

    Derivatives: in ``xq``, the spline's next derivative (every order, both modes; at a
    knot the derivative SciPy's ``.derivative()`` gives there); in ``y``, the spline of the
    tangent, and for the cotangent the transposed B-spline design matrix at ``xq`` and the
    transposed interpolation system solved by sparse LU (O(n + m); periodic splines use the
    interpolants of the unit vectors, O(n m)): every order, ``jax.linear_transpose`` too; in
    ``x``, for degrees 3 and 1, the construction differentiated exactly (no finite
    difference): the cubic spline is the cubic Hermite interpolant with its own slopes at the
    sites, so moving the sites stretches and shifts its pieces (Hermite's rule in ``x``) and
    moves the slopes (SciPy's slope system solved again in JAX, differentiated); the broken
    line only stretches and shifts. Every order in both modes, mixed with ``y`` and ``xq``
    too; against central differences of SciPy it agrees to 1e-7 relative (the differences'
    own error). Other degrees, not cubic or linear between the sites: a ``TypeError`` naming
    ``x``.

    Parameters:
        k: the degree (SciPy's default 3).
        bc_type: the boundary condition, by name.
        nu: the derivative in ``xq`` to evaluate (keyword-only, as ``extrapolate`` and
            ``on_failure``).
        extrapolate: None or True: the end polynomials continue outside ``[x[0], x[-1]]``
            (periodically for "periodic"); False: NaN there.
        on_failure: see ``MayFail``. Fails (an ``InterpolationFailure``, a ``ValueError``
            naming the argument) on too few points, non-finite data or sites not strictly
            increasing, or data SciPy refuses.
    """

    k: int = 3
    bc_type: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_whole("InterpSpline", "k", self.k)
        if self.bc_type not in BC_TYPES:
            raise ValueError(
                f"InterpSpline: parameter 'bc_type' must be one of {BC_TYPES}; got "
                f"{self.bc_type!r} (derivative values other than 0 would make the spline "
                "affine, not linear, in y)."
            )

    def least_points(self) -> int:
        return self.k + 1

    def site_refusal(self) -> str | None:
        return None if self.k in (1, 3) else NO_SITE_DERIVATIVE.format(k=self.k)

    def slopes(self, x, y):
        """The cubic spline's slopes at the sites, in JAX."""
        return spline_slopes(x, y, self.bc_type or "not-a-knot")

    def moved(self, x, data, xq, dx):
        if self.k == 3:
            return hermite_form_moved(self, self.slopes, x, data[0], xq, dx)
        # k = 1, the broken line: its pieces have no part that scales with h (P₀ = 0)
        (y,) = data
        shift, stretch = interval_terms(x, dx, xq)  # l and l'
        keep = within(x, xq, self.extrapolates())
        following = jnp.where(keep, self.derivative()(x, y, xq), 0)
        here = jnp.where(keep, self(x, y, xq), 0) if self.nu else 0
        return -(following * shift + self.nu * here * stretch)

    def pieces_in_jax(self, n):
        return self.k == 3 and n >= self.least_points() and not self.periodic()

    def interpolant(self, x, y):
        return scipy.interpolate.make_interp_spline(x, y, self.k, bc_type=self.bc_type)

    def evaluate(self, x, y, xq):
        if x.shape[-1] < _SORTED_FROM * (self.k + 1):
            return np.asarray(self.built(x, y)(xq, self.nu, self.extrapolate))
        return super().evaluate(x, y, xq)

    def transpose(self, x, g, xq):
        if not self.periodic():
            found = bspline_transpose(x, g, xq, self.k, self.bc_type, self.nu, self.extrapolates())
            if found is not None:
                return (found,)
        return (self.transpose_by_columns(x, g, xq),)


make_interp_spline = InterpSpline()
"""``scipy.interpolate.make_interp_spline`` (cubic, not-a-knot) as a ready adapter:
``make_interp_spline(x, y, xq)`` is ``make_interp_spline(x, y)(xq)``."""
