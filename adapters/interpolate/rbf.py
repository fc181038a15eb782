"""``RBFInterpolator``: scattered-data interpolation by radial basis functions, linear in the
data values; derivatives in the queries and the sites by differentiating the interpolant
written in JAX around a bridged solve of its interpolation system."""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from scipy.interpolate import RBFInterpolator as _SciPyRBF
from scipy.interpolate import _rbfinterp_np  # SciPy's own system builder, for the solve

import jaxbridge as jb

from .._shared._failure import InterpolationFailure, MayFail
from .._shared._parameters import check_choice
from .._shared._rules import compiled
from ._queries import first_point, isolating_nan_queries, per_point
from ._scattered import broadcast_batch, inner_queries, scattered_sites
from ._sizes import reading, refuse_sizes, refused

KERNELS = (
    "linear",
    "thin_plate_spline",
    "cubic",
    "quintic",
    "multiquadric",
    "inverse_multiquadric",
    "inverse_quadratic",
    "gaussian",
)
_SCALE_INVARIANT = ("linear", "thin_plate_spline", "cubic", "quintic")
_MIN_DEGREE = {"multiquadric": 0, "linear": 0, "thin_plate_spline": 1, "cubic": 1, "quintic": 2}


def _kernel(name: str, square: jax.Array) -> jax.Array:
    """SciPy's kernel ``φ(r)`` at ``r² = square``. The smooth kernels are written in ``r²``:
    at ``r = 0`` (a query on a site) ``r`` has no derivative and the bridge takes 0 for it,
    which would drop their curvature there, while ``r²``'s derivatives are exact. The others
    are written in ``r``, finite at ``r = 0`` (``r³``'s curvature there is 0, as ``r``'s
    zero derivative gives; in ``r²`` it would be ``0 · ∞``)."""
    if name == "multiquadric":
        return -jnp.sqrt(square + 1)
    if name == "inverse_multiquadric":
        return 1 / jnp.sqrt(square + 1)
    if name == "inverse_quadratic":
        return 1 / (square + 1)
    if name == "gaussian":
        return jnp.exp(-square)
    positive = square > 0
    r = jnp.where(positive, jnp.sqrt(jnp.where(positive, square, 1)), 0)  # (0: its derivative)
    if name == "linear":
        return -r
    if name == "thin_plate_spline":
        return jnp.where(positive, square * jnp.log(jnp.where(positive, r, 1)), 0)
    if name == "cubic":
        return r**3
    return -(r**5)  # quintic


def _square_distance(a: jax.Array, b: jax.Array) -> jax.Array:
    """``|a_i - b_j|²`` for every pair, (i, j)."""
    return jnp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)


@isolating_nan_queries(1, first_point)
class RBFInterpolator(MayFail):
    """SciPy's radial basis function interpolant through the sites ``y`` with values ``d``,
    evaluated at ``x``: ``RBFInterpolator(kernel, epsilon, smoothing, degree)(y, d, x)`` is
    ``scipy.interpolate.RBFInterpolator(y, d, kernel=kernel, epsilon=epsilon,
    smoothing=smoothing, degree=degree)(x)``.

    ``y`` (p, n), ``d`` (p,), ``x`` (m, n) → (m,); leading axes are batch axes. Values are
    SciPy's. The interpolant is ``s(x) = Σᵢ cᵢ φ(ε |x - yᵢ|) + Σⱼ bⱼ Pⱼ(x)`` with ``(c, b)`` the
    solution of the symmetric system ``S(y) (c, b) = (d, 0)``.

    Derivatives: every order in ``x``, ``y`` and ``d`` (mixed too), from ``s`` written in
    JAX (the kernel's closed form, through autodiff) around a bridged solve with ``S(y)``
    whose own rules are solves with ``S`` again (``dz = S⁻¹ (dr - dS z)``, its transpose
    itself): the tangent and cotangent of ``s`` in ``y`` are those of the interpolation
    system. Linear in ``d``: ``jax.linear_transpose`` too. The polynomial's shift and scale
    (SciPy's, from ``y``) are held constant: the interpolant does not depend on them. The
    kernels ``linear`` and ``thin_plate_spline`` are not differentiable at a site (a query
    on one has the derivative of ``r = 0`` taken as 0). The rules build the (m, p) kernel
    matrix in JAX, so memory grows as m p.

    Parameters are SciPy's (``neighbors`` excepted): ``kernel`` one of ``KERNELS``;
    ``epsilon`` (None: 1 for the scale-invariant kernels, required for the others);
    ``smoothing`` a float >= 0; ``degree`` (None: SciPy's least for the kernel);
    ``on_failure`` as for every ``MayFail``: fails on non-finite sites or values, too few
    sites for the polynomial, a singular system (repeated sites), with a ``ValueError``
    naming the argument.
    """

    kernel: str = "thin_plate_spline"
    epsilon: float | None = None
    smoothing: float = 0.0
    degree: int | None = None

    signature = "(p,n),(p),(m,n)->(m)"
    linear_in = ("d",)
    domains = {"y": scattered_sites, "x": inner_queries}
    # SciPy's solve of the system and its kernel-matrix products at the queries woke
    # OpenBLAS's threads, which then busy-wait (see Adapter.blas_threads); on 2 cores, one
    # thread took 0.78-0.9x the time of two (evaluation, 300 and 1000 sites, 2000 queries;
    # not measured on more cores, where the solve of thousands of sites may want threads)
    blas_threads = 1

    def __post_init__(self) -> None:
        owner = "RBFInterpolator"
        check_choice(owner, "kernel", self.kernel, KERNELS)
        if self.epsilon is None and self.kernel not in _SCALE_INVARIANT:
            raise ValueError(
                f"{owner}: parameter 'epsilon' must be given for kernel {self.kernel!r} (only "
                f"{_SCALE_INVARIANT} default to 1), as SciPy requires."
            )
        for name in ("epsilon", "smoothing"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
            ):
                raise ValueError(
                    f"{owner}: parameter '{name}' must be a number >= 0; got {value!r}."
                )
        if self.degree is not None and (
            isinstance(self.degree, bool) or not isinstance(self.degree, int) or self.degree < -1
        ):
            raise ValueError(
                f"{owner}: parameter 'degree' must be an int >= -1; got {self.degree!r}."
            )

    def scale(self) -> float:
        return 1.0 if self.epsilon is None else float(self.epsilon)

    def __call__(self, y: Any, d: Any, x: Any) -> Any:
        return per_point(lambda q: super(RBFInterpolator, self).__call__(y, d, q), x, 1)

    def resolved_degree(self) -> int:
        """SciPy's degree for ``degree=None``: the kernel's least, at least 0."""
        return max(_MIN_DEGREE.get(self.kernel, -1), 0) if self.degree is None else self.degree

    def powers(self, ndim: int) -> np.ndarray:
        """The monomials' exponents, (q, ndim), in SciPy's order."""
        return _rbfinterp_np._monomial_powers(ndim, self.resolved_degree(), np)

    def output_specs(self, y, d, x):
        refuse_sizes("RBFInterpolator", self.on_failure, self.sizes(y.shape))
        return jax.ShapeDtypeStruct(x.shape[-2:-1], jb.result_dtype(y, d, x))

    def forward(self, y, d, x):
        dtype = jb.result_dtype(y, d, x)
        y64, d64, x64 = (np.asarray(a, np.float64) for a in (y, d, x))
        problem = self.problem(y64, d64)
        if problem is None:
            try:
                interpolant = _SciPyRBF(
                    y64,
                    d64,
                    smoothing=self.smoothing,
                    kernel=self.kernel,
                    epsilon=self.epsilon,
                    degree=self.degree,
                )
                return np.asarray(interpolant(x64)).astype(dtype)
            except (ValueError, np.linalg.LinAlgError) as error:
                problem = f"SciPy refused the data (argument 'y': repeated sites?): {error}"
        error = InterpolationFailure.because(f"RBFInterpolator: {problem}")
        return self.nan_on_failure(error, x.shape[:-1], dtype=dtype)

    def sizes(self, y: tuple[int, ...]) -> str | None:
        """What is wrong with the shape of the sites ``y``, naming it, or None: the part of
        ``check`` made when the call is traced."""
        p, n = y[-2:]
        # SciPy takes n = 0, but every site is then the same point: a constant, not an
        # interpolant, and the rules' polynomial has no coordinate to start from
        if n < 1:
            return f"argument 'y' must be (p, n) with n >= 1; got n = {n}"
        least = self.powers(n).shape[0]
        if p < max(least, 1):
            return (
                f"argument 'y' has {p} sites; degree {self.resolved_degree()} in {n} "
                f"dimensions needs at least {least}"
            )
        return None

    def problem(self, y: np.ndarray, d: np.ndarray) -> str | None:
        """What is wrong with the sites and values, naming the argument, or None."""
        problem = self.sizes(y.shape)
        if problem is not None:
            return problem
        for name, values in (("y", y), ("d", d)):
            if not np.isfinite(values).all():
                return f"argument '{name}' has non-finite entries (NaN or inf)"
        # interpolating (no smoothing), a repeated site makes the system singular; SciPy
        # refuses it in some versions and not in others, so it is checked here
        if self.smoothing == 0 and len(np.unique(y, axis=0)) < len(y):
            return "argument 'y' has repeated sites, which need smoothing > 0"
        return None

    def pushforward(self, res, tangents):
        y, d, x, out = res[:4]
        tangents = tuple(jnp.zeros_like(a) if t is None else t for a, t in zip((y, d, x), tangents))
        return reading(out, _tangent(self, y, d, x, *tangents))

    def pullback(self, res, g):
        y, d, x, out = res[:4]
        return reading(out, tuple(_cotangent(self, y, d, x, g)))


def _polynomial(adapter: RBFInterpolator, points: jax.Array, shift, scale) -> jax.Array:
    """(k, q): the monomials at ``points`` (k, n), in the shifted and scaled domain."""
    unit = (points - shift) / scale
    columns = [
        math.prod(
            (unit[:, j] ** int(e) for j, e in enumerate(row) if e), start=jnp.ones_like(unit[:, 0])
        )
        for row in adapter.powers(points.shape[-1])
    ]
    return jnp.stack(columns, axis=-1) if columns else jnp.zeros(points.shape[:1] + (0,))


def _shift_and_scale(y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """SciPy's polynomial domain from the sites, held constant (the interpolant does not
    depend on it)."""
    y = jax.lax.stop_gradient(y)
    low, high = y.min(axis=0), y.max(axis=0)
    half = (high - low) / 2
    return (high + low) / 2, jnp.where(half == 0, 1, half)


def _interpolant(adapter: RBFInterpolator, y, d, x):
    """``s(x)`` for one batch element, in JAX around the bridged solve."""
    shift, scale = _shift_and_scale(y)
    q = adapter.powers(y.shape[-1]).shape[0]
    coefficients = SystemSolve(adapter)(
        y, shift, scale, jnp.concatenate([d, jnp.zeros(q, d.dtype)])
    )
    eps = adapter.scale()
    basis = jnp.concatenate(
        [
            _kernel(adapter.kernel, _square_distance(eps * x, eps * y)),
            _polynomial(adapter, x, shift, scale),
        ],
        axis=-1,
    )
    return basis @ coefficients


def _batched(adapter, y, d, x):
    return jnp.vectorize(
        functools.partial(_interpolant, adapter), signature="(p,n),(p),(m,n)->(m)"
    )(y, d, x)


@compiled
def _tangent(adapter, y, d, x, dy, dd, dx):
    y, d, x, dy, dd, dx = broadcast_batch((y, d, x, dy, dd, dx), (2, 1, 2, 2, 1, 2))
    return jax.jvp(functools.partial(_batched, adapter), (y, d, x), (dy, dd, dx))[1]


@compiled
def _cotangent(adapter, y, d, x, g):
    _, pullback = jax.vjp(functools.partial(_batched, adapter), y, d, x)
    return pullback(g)


def _system_times(adapter: RBFInterpolator, y, shift, scale, z):
    """``S(y) z`` for one batch element, in JAX: the interpolation system's matrix (kernel
    block plus smoothing, polynomial blocks) applied to ``z``."""
    p = y.shape[0]
    eps = adapter.scale()
    kernel = _kernel(adapter.kernel, _square_distance(eps * y, eps * y))
    poly = _polynomial(adapter, y, shift, scale)
    c, b = z[:p], z[p:]
    top = kernel @ c + adapter.smoothing * c + poly @ b
    return jnp.concatenate([top, poly.T @ c])


class SystemSolve(jb.Adapter):
    """``z = S(y)⁻¹ r``: the RBF interpolation system (SciPy's own matrix, for ``shift`` and
    ``scale`` computed from ``y`` as SciPy does) solved by LU. ``S`` is symmetric, so the
    cotangent in ``r`` is a solve again; in ``y``, ``-∂(r̄ᵀ S(y) z)/∂y`` in JAX; the tangent
    ``S⁻¹ (dr - dS z)``: every order. ``shift`` and ``scale`` are constants (their tangents
    are ignored: the interpolant does not depend on them)."""

    of: RBFInterpolator

    signature = "(p,n),(n),(n),(r)->(r)"
    linear_in = ("r",)
    # as RBFInterpolator's: value_and_grad in the sites took 0.76-0.81x the time with one
    # thread on a loaded 2-core machine (300 and 1000 sites), 0.34-1.0x beside a busy process
    blas_threads = 1

    def output_specs(self, y, shift, scale, r):
        return jax.ShapeDtypeStruct(r.shape[-1:], jb.result_dtype(y, r))

    def forward(self, y, shift, scale, r):
        dtype = jb.result_dtype(y, r)
        y64 = np.asarray(y, np.float64)
        of = self.of
        if refused("RBFInterpolator", of.on_failure, of.problem(y64, np.zeros(y64.shape[0]))):
            return np.full(r.shape, np.nan, dtype)
        smoothing = np.full(y64.shape[0], float(of.smoothing))
        powers = of.powers(y64.shape[-1])
        rhs = np.zeros((y64.shape[0], 1))
        lhs = _rbfinterp_np._build_system(y64, rhs, smoothing, of.kernel, of.scale(), powers, np)[0]
        try:
            z = scipy.linalg.solve(lhs, np.asarray(r, np.float64), assume_a="sym")
        except np.linalg.LinAlgError as error:
            refused(
                "RBFInterpolator", of.on_failure, f"the interpolation system is singular ({error})"
            )
            return np.full(r.shape, np.nan, dtype)
        return z.astype(dtype)

    def pushforward(self, res, tangents):
        y, shift, scale, r, z = res[:5]
        dy, _, _, dr = tangents
        change = None if dr is None else dr
        if dy is not None:
            moved = _system_jvp(self.of, y, shift, scale, z, dy)
            change = -moved if change is None else change - moved
        return None if change is None else self(y, shift, scale, change)

    def pullback(self, res, z_bar):
        y, shift, scale, r, z = res[:5]
        r_bar = self(y, shift, scale, z_bar)
        y_bar = -_system_vjp(self.of, y, shift, scale, z, r_bar)
        return y_bar, None, None, r_bar


def _system_product(adapter, y, shift, scale, z):
    return jnp.vectorize(
        functools.partial(_system_times, adapter), signature="(p,n),(n),(n),(r)->(r)"
    )(y, shift, scale, z)


def _system_jvp(adapter, y, shift, scale, z, dy):
    """``dS z``: the system matrix's change along ``dy``, applied to ``z``."""
    y, shift, scale, z, dy = broadcast_batch((y, shift, scale, z, dy), (2, 1, 1, 1, 2))
    return jax.jvp(lambda y_: _system_product(adapter, y_, shift, scale, z), (y,), (dy,))[1]


def _system_vjp(adapter, y, shift, scale, z, w):
    """``∂(wᵀ S(y) z)/∂y``."""
    _, pullback = jax.vjp(lambda y_: _system_product(adapter, y_, shift, scale, z), y)
    (y_bar,) = pullback(w)
    return y_bar
