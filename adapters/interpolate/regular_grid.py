"""``RegularGridInterpolator``: interpolation on a rectilinear grid, linear in the values
(except "pchip"); its cotangent is the tensor product of the 1-D interpolants' transposes,
and "pchip"'s rules differentiate SciPy's fold of 1-D PCHIPs, written with bridged ones."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.interpolate
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._failure import InterpolationFailure, MayFail
from .._shared._fixed import held_fixed
from .._shared._parameters import check_choice
from .._shared._rules import total
from ._linear import derivative_transpose
from ._one_d import check_whole, data, queries, sites
from ._queries import isolating_nan_queries, per_point
from ._recent import Recent
from ._scattered import broadcast_batch
from ._sizes import reading, refuse_sizes, refused
from .pchip import PchipInterpolator

METHODS = ("linear", "nearest", "slinear", "cubic", "quintic", "pchip")
_DEGREE = {"linear": 1, "nearest": 0, "slinear": 1, "cubic": 3, "quintic": 5, "pchip": 3}
_BSPLINE = ("slinear", "cubic", "quintic")  # SciPy's tensor-product B-splines (with nu)

_built = Recent(2)  # SciPy's interpolants, for the value's and its partials' calls

NO_GRID_DERIVATIVE = "moving a grid line changes every cell along it; the grid is held fixed"


@isolating_nan_queries(1, lambda adapter, res: grid_corner(adapter.shape, res[0]))
class RegularGridInterpolator(MayFail):
    """SciPy's interpolant on the rectilinear grid ``points`` through ``values``, at ``xi``:
    ``RegularGridInterpolator(method, bounds_error, fill_value)(points, values, xi)`` is
    ``scipy.interpolate.RegularGridInterpolator(points, values, method, bounds_error,
    fill_value)(xi)``.

    ``points`` is a tuple of ``d`` strictly increasing 1-D arrays (the grid axes, lengths
    ``n_1 … n_d``), ``values`` has trailing shape ``(n_1, …, n_d)``, ``xi`` is (m, d) and
    the result (m,); leading axes of ``values`` and ``xi`` are batch axes.

    The call form is SciPy's; the bridged call underneath takes the axes concatenated into
    one vector and the values flattened (``"(g),(s),(m,d)->(m)"``), the axis lengths a
    static parameter (``shape``), because a gufunc signature has a fixed number of
    arguments and a grid any number of axes. A call with ``points`` a tuple sets ``shape``
    itself; one with ``points`` already concatenated (as the property suite draws it) needs
    ``shape`` given.

    Methods: "linear", "nearest", "slinear", "cubic", "quintic" (SciPy's tensor-product
    B-splines, solved here by a direct sparse solve: SciPy's default iterative solver stops
    near 1e-5 relative error), and "pchip". ``fill_value=None`` with ``bounds_error=False``
    extrapolates, as SciPy.

    Derivatives: in ``xi``, each partial derivative is the same interpolant with ``nu``
    raised along that axis (SciPy's ``nu=`` for the B-splines; "linear" is the degree-1
    B-spline, so its gradient is the piecewise-constant one, one-sided at grid lines as
    SciPy's; "nearest" has gradient 0): every order, both modes. In ``values``: the
    interpolant of the tangent, and for the cotangent the tensor product of each axis's
    1-D cardinal functions at ``xi`` contracted with the cotangent; every order,
    ``jax.linear_transpose`` too. "pchip" is SciPy's fold of 1-D PCHIPs (along the last
    axis at every query, then each axis before it), not linear in ``values``: its rules
    differentiate that fold written with bridged ``PchipInterpolator`` calls, in ``values``
    and ``xi``, every order, both modes, with PCHIP's branch points (a secant slope of 0 or
    a sign change); it is not transposable (``jax.linear_transpose`` is a ``TypeError``).
    Differentiating any method in ``points`` is a ``TypeError`` (the grid is held fixed).

    Parameters:
        method: one of ``METHODS``.
        bounds_error: True (SciPy's default): a query outside the grid is an error naming
            ``xi``; False: ``fill_value`` there.
        fill_value: the value outside the grid (NaN), a constant (every derivative 0
            there), or None to extrapolate.
        nu: keyword-only, the derivative order along each axis (None: the values); the
            B-spline methods and "linear"/"nearest" only.
        shape: keyword-only, the grid's axis lengths (set by the call with a tuple).
        on_failure: see ``MayFail``. Fails on axes that are not strictly increasing or
            too short for the method, a non-finite grid or values, queries out of bounds,
            with a ``ValueError`` naming the argument.
    """

    method: str = "linear"
    bounds_error: bool = True
    fill_value: float | None = math.nan
    _: dataclasses.KW_ONLY
    nu: tuple[int, ...] | None = None
    shape: tuple[int, ...] = ()

    signature = "(g),(s),(m,d)->(m)"
    linear_in = ("values",)
    domains = {"points": sites, "xi": queries}
    # the B-spline methods' transpose was an einsum that NumPy made a skinny matrix product
    # (dense cardinal functions of the m queries, (n₁, m) @ (m, n₂)); it woke OpenBLAS's
    # threads, which then busy-wait (see Adapter.blas_threads): on 2 cores, 40 x 40 "cubic"
    # at 1e4 queries, value_and_grad in the values took 2.65x SciPy's value quiet and 4.4x
    # beside a busy process with OpenBLAS's 2 threads, 1.6x and 2.1x with one. It is a
    # sparse sum and small sparse LU solves now (#56); the hold costs them nothing
    blas_threads = 1

    def __post_init__(self) -> None:
        owner = "RegularGridInterpolator"
        check_choice(owner, "method", self.method, METHODS)
        if self.bounds_error not in (True, False):
            raise ValueError(f"{owner}: parameter 'bounds_error' must be True or False.")
        if self.fill_value is not None and not isinstance(self.fill_value, (int, float)):
            raise ValueError(f"{owner}: parameter 'fill_value' must be a number or None.")
        for n in self.shape:
            check_whole(owner, "shape", n)
        if self.nu is not None:
            for order in self.nu:
                check_whole(owner, "nu", order)
            if self.method == "pchip":
                raise ValueError(f"{owner}: parameter 'nu' is not available for 'pchip'.")
            if self.shape and len(self.nu) != len(self.shape):
                raise ValueError(
                    f"{owner}: parameter 'nu' has {len(self.nu)} orders for a grid of "
                    f"{len(self.shape)} axes."
                )

    def __call__(self, points: Any, values: Any, xi: Any) -> Any:
        owner = "RegularGridInterpolator"
        adapter = self
        if isinstance(points, (tuple, list)):
            axes = [held_fixed(owner, "points", NO_GRID_DERIVATIVE, p) for p in points]
            if any(a.ndim != 1 for a in axes):
                raise ValueError(f"{owner}: argument 'points' must be a tuple of 1-D arrays.")
            shape = tuple(a.shape[0] for a in axes)
            values = jnp.asarray(values)
            if values.shape[values.ndim - len(shape) :] != shape or values.ndim < len(shape):
                raise ValueError(
                    f"{owner}: argument 'values' must have trailing shape {shape} (the grid's "
                    f"axis lengths); got shape {values.shape}."
                )
            # (the flat length named: -1 is ambiguous in an empty batch of grids)
            values = values.reshape(values.shape[: values.ndim - len(shape)] + (math.prod(shape),))
            points = jnp.concatenate(axes) if axes else jnp.zeros(0)
            adapter = dataclasses.replace(self, shape=shape)
        else:
            points = held_fixed(owner, "points", NO_GRID_DERIVATIVE, points)
            if not self.shape:
                raise ValueError(
                    f"{owner}: argument 'points' must be a tuple of 1-D arrays (the grid axes), "
                    "or the axes concatenated with the parameter 'shape' given."
                )
        if adapter.method == "pchip":
            fields = {f.name: getattr(adapter, f.name) for f in dataclasses.fields(adapter)}
            adapter = PchipGrid(**fields)
        return per_point(lambda q: jb.Adapter.__call__(adapter, points, values, q), xi, 1)

    def orders(self) -> tuple[int, ...]:
        return self.nu if self.nu is not None else (0,) * len(self.shape)

    def partial(self, axis: int) -> RegularGridInterpolator:
        """The same interpolant's derivative along ``axis`` in the queries (0 where
        ``fill_value`` is taken, as ``derivatives``)."""
        orders = list(self.orders())
        orders[axis] += 1
        return dataclasses.replace(self.derivatives(), nu=tuple(orders))

    def derivatives(self) -> RegularGridInterpolator:
        """The interpolant the derivatives are made of: this one with 0 where ``fill_value``
        is taken, a constant there (SciPy's ``fill_value`` at ``nu`` > 0, and the tangent's
        interpolant, gave ``fill_value`` as the derivative: 3 for ``fill_value=3``)."""
        return self if self.fill_value is None else dataclasses.replace(self, fill_value=0.0)

    def output_specs(self, points, values, xi):
        refuse_sizes("RegularGridInterpolator", self.on_failure, self.sizes(xi.shape))
        return jax.ShapeDtypeStruct(xi.shape[-2:-1], jb.result_dtype(points, values, xi))

    def forward(self, points, values, xi):
        dtype = jb.result_dtype(points, values, xi)
        axes, grid_values = self.grid(points, values)
        xi64 = np.asarray(xi, np.float64)
        problem = self.problem(axes, grid_values, xi64)
        if problem is None:
            try:
                return self.evaluate(axes, grid_values, xi64).astype(dtype)
            except ValueError as error:  # what SciPy refuses beyond the checks above
                problem = f"SciPy refused the data: {error}"
        error = InterpolationFailure.because(f"RegularGridInterpolator: {problem}")
        return self.nan_on_failure(error, xi.shape[:-1], dtype=dtype)

    def grid(self, points, values) -> tuple[list[np.ndarray], np.ndarray]:
        """The axes and the values on the grid, in float64, from their flat forms."""
        split = np.cumsum(self.shape)[:-1]
        axes = np.split(np.asarray(points, np.float64), split)
        return axes, np.asarray(values, np.float64).reshape(self.shape)

    def sizes(self, xi: tuple[int, ...]) -> str | None:
        """What is wrong with the grid's axis lengths (``shape``) and the shape of ``xi``,
        naming the argument, or None: the part of ``problem`` made when the call is traced."""
        if not self.shape:
            return "argument 'points' has no axes; a grid needs at least one"
        if xi[-1] != len(self.shape):
            return f"argument 'xi' has {xi[-1]} coordinates for a grid of {len(self.shape)} axes"
        least = max(_DEGREE[self.method] + 1, 2)
        for i, length in enumerate(self.shape):
            if length < least:
                return (
                    f"argument 'points' has {length} points along axis {i}; method "
                    f"{self.method!r} needs at least {least}"
                )
        return None

    def problem(self, axes, values, xi) -> str | None:
        """What is wrong with one grid and its queries, naming the argument, or None."""
        problem = self.sizes(xi.shape)
        if problem is not None:
            return problem
        for i, axis in enumerate(axes):
            if not np.isfinite(axis).all():
                return f"argument 'points' has non-finite entries along axis {i}"
            if not (np.diff(axis) > 0).all():
                return (
                    f"argument 'points' must be strictly increasing along each axis; axis {i} "
                    "is not"
                )
        if not np.isfinite(values).all():
            return "argument 'values' has non-finite entries (NaN or inf)"
        if self.bounds_error:
            for i, axis in enumerate(axes):
                q = xi[:, i]
                if ((q < axis[0]) | (q > axis[-1])).any():
                    return (
                        f"argument 'xi' has points outside the grid along axis {i} (pass "
                        "bounds_error=False for fill_value there, or fill_value=None to "
                        "extrapolate)"
                    )
        return None

    def evaluate(self, axes, values, xi) -> np.ndarray:
        """SciPy's interpolant (or its ``nu`` derivative) at ``xi``, from valid data."""
        method, nu = self.method, self.nu
        if nu is not None and not any(nu):
            nu = None
        if method == "nearest" and nu is not None:
            return np.where(self.outside(axes, xi), self.filled(), 0.0)
        if method == "linear" and nu is not None:
            method = "slinear"  # the same function; SciPy gives derivatives of this one
        options: dict[str, Any] = {"bounds_error": False, "fill_value": self.fill_value}
        if method in _BSPLINE:
            options["solver"] = scipy.sparse.linalg.spsolve

        def build(*arrays):
            return scipy.interpolate.RegularGridInterpolator(
                arrays[:-1], arrays[-1], method=method, **options
            )

        # built once for the value and its partial derivatives (a 40 x 40 "cubic" grid's
        # tensor-product system solved: 4-6 times as long as evaluating it at 1e4 queries)
        key = (method, repr(self.fill_value), len(axes))
        interpolant = _built.get(key, (*axes, values), build)
        return np.asarray(interpolant(xi, nu=nu) if nu is not None else interpolant(xi))

    def outside(self, axes, xi) -> np.ndarray:
        """The queries that get ``fill_value`` (none when it is None), or NaN."""
        out = np.isnan(xi).any(axis=-1)
        if self.fill_value is not None:
            for i, axis in enumerate(axes):
                out |= (xi[:, i] < axis[0]) | (xi[:, i] > axis[-1])
        return out

    def filled(self) -> float:
        return math.nan if self.fill_value is None else self.fill_value

    def pushforward(self, res, tangents):
        points, values, xi, out = res[:4]
        _, dvalues, dxi = tangents
        terms = [None if dvalues is None else self.derivatives()(points, dvalues, xi)]
        if dxi is not None:
            terms += [
                self.partial(j)(points, values, xi) * dxi[..., j] for j in range(len(self.shape))
            ]
        return reading(out, total(terms))

    def pullback(self, res, g):
        points, values, xi, out = res[:4]
        xi_bar = jnp.stack(
            [g * self.partial(j)(points, values, xi) for j in range(len(self.shape))], axis=-1
        )
        values_bar = GridTransposed(self.derivatives())(points, g, xi)
        return reading(out, (None, values_bar, xi_bar))

    def transpose(self, points, g, xi) -> np.ndarray:
        """``Aᵀ g`` on the host in float64. The interpolant is ``out = D (A₁⁻¹ ⊗ … ⊗ A_d⁻¹)
        values``: ``D`` the tensor-product B-spline basis at the queries (its ``nu``-th
        derivatives: the basis of degree ``k - nu`` on the inner knots, then each axis's
        map from coefficients to the derivative's), ``Aⱼ`` axis j's collocation matrix. So
        ``Aᵀ g`` is ``Dᵀ g``, a sparse sum of (k + 1)^d terms a query (the cardinal
        functions ``D A⁻¹`` of each query, dense, cost n a query and axis, and their
        product an einsum of (m, n) factors: #56), carried back through each axis's
        derivative map and ``Aⱼ⁻ᵀ`` (n x n, one sparse LU each)."""
        axes, _ = self.grid(points, np.zeros(self.shape))
        keep = ~self.outside(axes, xi)
        xi, g = xi[keep], g[keep]
        orders = self.orders()
        if self.method == "nearest":
            return self.nearest_transpose(axes, g, xi, orders)
        k = _DEGREE[self.method]
        size = math.prod(self.shape)
        if max(orders) > k or xi.shape[0] == 0:
            return np.zeros(size)
        knots = [scipy.interpolate.make_interp_spline(a, np.zeros(a.shape[0]), k).t for a in axes]
        inner = tuple(t[o : t.shape[0] - o] for t, o in zip(knots, orders))
        design = scipy.interpolate.NdBSpline.design_matrix(
            xi, inner, tuple(k - o for o in orders), extrapolate=True
        )
        sizes = [n - o for n, o in zip(self.shape, orders)]
        w = np.zeros(math.prod(sizes))
        summed = design.T @ g  # (short where no query reaches the last columns: SciPy reads
        w[: summed.shape[0]] = summed  # the matrix's width from the largest column it holds)
        w = w.reshape(sizes)
        for j, (axis, t, order) in enumerate(zip(axes, knots, orders)):
            w = np.moveaxis(w, j, 0)
            w = derivative_transpose(t, k, order, w)
            collocation = scipy.interpolate.BSpline.design_matrix(axis, t, k)
            lu = scipy.sparse.linalg.splu(collocation.T.tocsc())
            w = np.moveaxis(lu.solve(w.reshape(w.shape[0], -1)).reshape(w.shape), 0, j)
        return w.reshape(-1)

    def nearest_transpose(self, axes, g, xi, orders) -> np.ndarray:
        """The "nearest" method's ``Aᵀ g``: each query's cotangent on its nearest grid
        point (0 for a derivative: the interpolant is piecewise constant)."""
        size = math.prod(self.shape)
        if any(orders):
            return np.zeros(size)
        flat = np.zeros(xi.shape[0], np.intp)
        for j, axis in enumerate(axes):
            n, q = axis.shape[0], xi[:, j]
            i = np.clip(np.searchsorted(axis, q) - 1, 0, n - 2)  # as SciPy's find_indices
            nearer = (q - axis[i]) / (axis[i + 1] - axis[i]) <= 0.5
            flat = flat * n + np.where(nearer, i, i + 1)
        return np.bincount(flat, g, size)


class GridTransposed(jb.Adapter):
    """``values̄ = Aᵀ g``: the transpose of ``of``'s evaluation in its values, for the
    cotangent ``g`` of its result at the queries ``xi``. Its tangent in ``g`` is itself, in
    ``xi`` the transposed partial derivatives; its pullback is the evaluation again: a
    closed family, so every order works."""

    of: RegularGridInterpolator

    signature = "(g),(m),(m,d)->(s)"
    linear_in = ("g",)
    blas_threads = 1  # as RegularGridInterpolator's (of.transpose)

    def output_specs(self, points, g, xi):
        size = math.prod(self.of.shape)
        return jax.ShapeDtypeStruct((size,), jb.result_dtype(points, g, xi))

    def forward(self, points, g, xi):
        dtype = jb.result_dtype(points, g, xi)
        of = self.of
        axes, _ = of.grid(points, np.zeros(of.shape))
        xi64 = np.asarray(xi, np.float64)
        problem = of.problem(axes, np.zeros(of.shape), xi64)
        if refused("RegularGridInterpolator", of.on_failure, problem):
            return np.full(math.prod(of.shape), np.nan, dtype)
        return of.transpose(points, np.asarray(g, np.float64), xi64).astype(dtype)

    def pushforward(self, res, tangents):
        points, g, xi = res[:3]
        _, dg, dxi = tangents
        terms = [None if dg is None else self(points, dg, xi)]
        if dxi is not None:
            terms += [
                type(self)(self.of.partial(j))(points, g * dxi[..., j], xi)
                for j in range(len(self.of.shape))
            ]
        return total(terms)

    def pullback(self, res, ct):
        points, g, xi = res[:3]
        xi_bar = jnp.stack(
            [g * self.of.partial(j)(points, ct, xi) for j in range(len(self.of.shape))], axis=-1
        )
        return None, self.of(points, ct, xi), xi_bar


@isolating_nan_queries(1, lambda adapter, res: grid_corner(adapter.shape, res[0]))
class PchipGrid(RegularGridInterpolator):
    """What ``RegularGridInterpolator(method="pchip")`` calls: the same forward (SciPy's), not
    linear in ``values`` (so not transposable), with rules that differentiate SciPy's fold
    of 1-D PCHIPs written with bridged ``PchipInterpolator`` calls (``fold``), whose own
    rules give every order."""

    method: str = "pchip"

    linear_in = ()
    # (values rising ever faster along each axis: no PCHIP slope formula sits at a branch)
    domains = {"points": sites, "values": data, "xi": queries}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method != "pchip":
            raise ValueError(f"PchipGrid: parameter 'method' must be 'pchip'; got {self.method!r}.")

    def fold(self, points, values, xi):
        """SciPy's "pchip" on one grid as JAX code: a 1-D PCHIP along the last axis at
        every query, then along each axis before it, each at that query's coordinate
        (SciPy's ``_evaluate_spline``); NaN data gives NaN, as the forward's checks have
        already refused it or asked for NaN."""
        split = np.cumsum(self.shape)[:-1].tolist()
        axes = jnp.split(points, split)
        along = PchipInterpolator(on_failure="nan")
        grid = values.reshape(self.shape)  # (n₁, …, n_d)
        folded = jnp.moveaxis(along(axes[-1], grid, xi[:, -1]), -1, 0)  # (m, n₁, …, n_{d-1})
        for j in range(len(self.shape) - 2, -1, -1):
            at = xi[:, j].reshape((-1,) + (1,) * (j + 1))  # one query per folded line
            folded = along(axes[j], folded, at)[..., 0]
        return folded

    def outside_zero(self, points, xi, result):
        """``result`` (one grid's) with 0 where the query gets ``fill_value``, a constant."""
        if self.fill_value is None:
            return result
        split = np.cumsum(self.shape)[:-1].tolist()
        out = jnp.zeros(xi.shape[:-1], bool)
        for j, axis in enumerate(jnp.split(points, split)):
            out |= (xi[:, j] < axis[0]) | (xi[:, j] > axis[-1])
        return jnp.where(out, 0, result)

    def rule(self, points, values, xi):
        """The fold with 0 outside the grid where ``fill_value`` is taken, over batch axes."""
        core = lambda p, v, q: self.outside_zero(p, q, self.fold(p, v, q))  # noqa: E731
        return jnp.vectorize(core, signature="(g),(s),(m,d)->(m)")(points, values, xi)

    def pushforward(self, res, tangents):
        points, values, xi = res[:3]
        _, dvalues, dxi = tangents
        dvalues = jnp.zeros_like(values) if dvalues is None else dvalues
        dxi = jnp.zeros_like(xi) if dxi is None else dxi
        # (a tangent may carry batch axes that its primal lacks)
        points, values, xi, dvalues, dxi = broadcast_batch(
            (points, values, xi, dvalues, dxi), (1, 1, 2, 1, 2)
        )
        rule = lambda v, q: self.rule(points, v, q)  # noqa: E731
        return reading(res[3], jax.jvp(rule, (values, xi), (dvalues, dxi))[1])

    def pullback(self, res, g):
        points, values, xi, out = res[:4]
        _, vjp = jax.vjp(lambda v, q: self.rule(points, v, q), values, xi)
        return reading(out, (None, *vjp(g)))


def grid_corner(shape: tuple[int, ...], points: Any) -> Any:
    """The grid's first corner, (..., 1, d), from its axes concatenated in ``points``."""
    starts = np.concatenate([[0], np.cumsum(shape)[:-1]]).astype(int)
    return points[..., None, starts]
