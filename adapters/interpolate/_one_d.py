"""What the 1-D interpolants share: the base class (call ``(x, y, xq)``, the checks of the
data, the failure policy, the derivative in the query points), and the domains their tests
draw from."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

import jaxbridge as jb

from .._shared._failure import InterpolationFailure, MayFail
from .._shared._fixed import held_fixed
from ._queries import per_point
from ._recent import Recent, sort_order
from ._sizes import refuse_sizes

_built = Recent(4)  # SciPy's interpolants, for the value's and the derivatives' calls
_CALL = ("nu", "extrapolate", "on_failure")  # parameters of the call, not of the interpolant

NO_SITE_DERIVATIVE = (
    "a spline of degree {k} is not a cubic Hermite or linear piece on each interval between "
    "sites (its knots lie between the sites, or skip some, or it is piecewise constant), and "
    "jaxbridge differentiates the construction in the sites for degrees 1 and 3 alone"
)


def sites(raw: np.ndarray) -> np.ndarray:
    """Sites ``x`` near the integers ``2 i - (n - 1)`` (within 0.02): sorted, at least 1.96
    apart, the knots always within 0.02 of an integer."""
    n = raw.shape[-1]
    return 2.0 * np.arange(n) - (n - 1) + 0.02 * raw


def data(raw: np.ndarray) -> np.ndarray:
    """Values ``i² / 2 + i`` (within 0.1): on ``sites`` their secant slopes are positive and
    increase by about 1/2 from one interval to the next, so that no slope formula sits at a
    branch (a slope of 0, two equal slopes, PCHIP's end slope at 0) where it is not
    differentiable."""
    i = np.arange(raw.shape[-1])
    return 0.5 * i**2 + i + 0.1 * raw


def queries(raw: np.ndarray) -> np.ndarray:
    """Query points in [-3.5, 3.65], at least 0.35 from every integer, hence at least 0.33
    from the knots of ``sites``: the interpolant is smooth around each of them."""
    u = 3.5 * raw
    whole = np.floor(u)
    return whole + 0.5 + 0.3 * (u - whole - 0.5)


class Interpolant1D(MayFail):
    """The 1-D interpolants: ``out = Interpolant(...)(x, y, xq)``, SciPy's interpolant through
    the points ``(x, y)`` (or its ``nu``-th derivative) evaluated at the queries ``xq``.

    ``x`` and ``y`` are (n,), ``xq`` and the result (m,); leading axes are batch axes that
    broadcast (each batch element builds its own interpolant on the host). Subclasses say
    how SciPy builds it (``interpolant``) and how few points it needs (``least_points``).

    The derivative in ``xq`` is the same interpolant with ``nu + 1``, a bridged call with
    rules of its own, so every order works in both modes. The derivative in ``x`` is the
    subclass's ``moved`` (see ``_sites``), or, where ``site_refusal`` gives a reason, a
    ``TypeError`` naming the adapter and ``x``.
    """

    _: dataclasses.KW_ONLY
    nu: int = 0
    extrapolate: bool | None = None

    signature = "(n),(n),(m)->(m)"
    default_extrapolate = True  # SciPy's, for extrapolate=None
    domains = {"x": sites, "y": data, "xq": queries}

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_whole(owner, "nu", self.nu)
        if self.extrapolate not in (None, True, False):
            raise ValueError(
                f"{owner}: parameter 'extrapolate' must be None, True or False; got "
                f"{self.extrapolate!r}."
            )

    def __call__(self, x: Any, y: Any, xq: Any) -> Any:
        why = self.site_refusal()
        if why is not None:
            x = held_fixed(type(self).__name__, "x", why, x)
        return per_point(lambda q: super(Interpolant1D, self).__call__(x, y, q), xq, 0)

    def name(self) -> str:
        """The name its errors give it (a rule's helper adapters name it too)."""
        return type(self).__name__

    def site_refusal(self) -> str | None:
        """Why this interpolant has no derivative in the sites ``x``, or None."""
        return None

    def moved(self, x: Any, data: tuple, xq: Any, dx: Any) -> Any:
        """The tangent of the result when the sites move by ``dx`` (``data`` = ``(y,)``
        held): JAX code of bridged calls, linear in ``dx`` and ``y`` (see ``_sites``)."""
        raise NotImplementedError

    def least_points(self) -> int:
        """The fewest points SciPy builds this interpolant from."""
        return 2

    def interpolant(self, x: np.ndarray, y: np.ndarray) -> Any:
        """SciPy's interpolant through ``(x, y)`` in float64 (``y`` may have trailing axes):
        an object called as ``(xq, nu, extrapolate)``."""
        raise NotImplementedError

    def extrapolates(self) -> bool:
        """Whether the interpolant continues outside ``[x[0], x[-1]]`` (else NaN there)."""
        return self.default_extrapolate if self.extrapolate is None else self.extrapolate

    def derivative(self) -> Interpolant1D:
        """The same interpolant's next derivative in the query points."""
        return dataclasses.replace(self, nu=self.nu + 1)

    def output_specs(self, x, y, xq):
        refuse_sizes(type(self).__name__, self.on_failure, too_few(self.least_points(), x.shape))
        return jax.ShapeDtypeStruct(xq.shape[-1:], jb.result_dtype(x, y, xq))

    def forward(self, x, y, xq):
        dtype = jb.result_dtype(x, y, xq)
        x64, y64 = np.asarray(x, np.float64), np.asarray(y, np.float64)
        problem = checked_data(self.least_points(), x64, y64)
        if problem is None:
            try:
                return self.evaluate(x64, y64, np.asarray(xq, np.float64)).astype(dtype)
            except ValueError as error:  # what SciPy refuses beyond the checks above
                problem = f"SciPy refused the data: {error}"
        error = InterpolationFailure.because(f"{type(self).__name__}: {problem}")
        return self.nan_on_failure(error, xq.shape, dtype=dtype)

    def evaluate(self, x: np.ndarray, y: np.ndarray, xq: np.ndarray) -> np.ndarray:
        """The interpolant's ``nu``-th derivative at ``xq``, from valid float64 data."""
        interpolant = self.built(x, y)
        return in_order(lambda q: interpolant(q, self.nu, self.extrapolate), xq)

    def built(self, x: np.ndarray, y: np.ndarray) -> Any:
        """``interpolant(x, y)``, built once for the calls of one derivative (the value and
        its next derivative in the queries; see ``_recent``)."""
        fields = dataclasses.fields(self)
        key = (type(self), *(getattr(self, f.name) for f in fields if f.name not in _CALL))
        return _built.get(key, (x, y), self.interpolant)

    def query_tangent(self, x, y, xq, dxq):
        return None if dxq is None else self.derivative()(x, y, xq) * dxq

    def query_cotangent(self, x, y, xq, g):
        return g * self.derivative()(x, y, xq)


def check_whole(owner: str, name: str, value: object) -> None:
    """Refuse a parameter that is not a whole number >= 0 (a derivative order, a degree)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{owner}: parameter '{name}' must be a whole number >= 0; got {value!r}.")


def too_few(least: int, x: tuple[int, ...]) -> str | None:
    """What is wrong with the shape ``x`` of the sites of an interpolant that needs at least
    ``least`` points, or None: the part of ``checked_data`` made when the call is traced."""
    n = x[-1]
    if n < least:
        return f"argument 'x' has {n} points; this interpolant needs at least {least}"
    return None


def checked_data(least: int, x: np.ndarray, y: np.ndarray) -> str | None:
    """What is wrong with the data ``(x, y)`` of one interpolant that needs at least
    ``least`` points, naming the argument, or None: too few points, non-finite values, sites
    that are not strictly increasing."""
    problem = too_few(least, x.shape)
    if problem is not None:
        return problem
    for name, values in (("x", x), ("y", y)):
        if not np.isfinite(values).all():
            return f"argument '{name}' has non-finite entries (NaN or inf)"
    steps = np.diff(x)
    if not (steps > 0).all():
        i = int(np.argmax(steps <= 0))
        return (
            f"argument 'x' must be strictly increasing, but x[{i + 1}] = {x[i + 1]!r} follows "
            f"x[{i}] = {x[i]!r}"
        )
    return None


def in_order(evaluate: Any, xq: np.ndarray) -> np.ndarray:
    """``evaluate(xq)`` for a pointwise ``evaluate``, made on the sorted queries: SciPy's
    spline evaluation and design matrices are 1.6-1.7x faster on sorted queries (m =
    100,000, n = 1,000: their memory accesses follow the knots; 1.5x at m = 10,000, n =
    100) than the sort costs, which the calls of one derivative share (``sort_order``)."""
    order = sorting(xq)
    if order is None:
        return np.asarray(evaluate(xq))
    values = np.asarray(evaluate(xq[order]))
    result = np.empty_like(values)
    result[order] = values
    return result


def sorting(xq: np.ndarray) -> np.ndarray | None:
    """The order that sorts the queries ``xq``, or None where they are too few to gain."""
    return None if xq.shape[0] < 1024 else sort_order(xq)


def inside(x: np.ndarray, xq: np.ndarray, extrapolate: bool) -> np.ndarray:
    """The queries an interpolant's value depends on the data at: all finite ones when it
    extrapolates, else those within ``[x[0], x[-1]]`` (outside, SciPy gives NaN)."""
    if extrapolate:
        return np.isfinite(xq)
    return (xq >= x[0]) & (xq <= x[-1])
