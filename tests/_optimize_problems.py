"""Reference problems for the optimize adapters: residuals, objectives and constraints as
host Adapters, with closed-form solutions and sensitivities to test against.

Each ``domains`` keeps drawn inputs (``jaxbridge.testing``) away from kinks of the solution
map, so that finite differences through a whole solve are meaningful.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters._shared._jax_function import (
    JaxObjective,
    JaxResidual,
    JaxScalarEquation,
    JaxSquareResidual,
    Packing,
)
from jaxbridge.adapters.optimize import Linprog, Nnls, OptimizeError
from jaxbridge.adapters.optimize._root_scalar_call import (
    EquationCurvature,
    EquationSlopes,
    RootScalarSolve,
)
from jaxbridge.adapters.optimize.linprog import LinprogMarginals

SECOND_ORDER = 1e-8
"""``check_adapter``'s rtol for the implicit solvers' "hessian" check: their second
derivatives come from extrapolated differences of the user's first derivatives (about 1e-10
relative), which the compositions of modes take by different formulas."""

# --------------------------------------------------------------------------- Kepler


def _kepler_theta(raw: np.ndarray) -> np.ndarray:
    """Eccentricity in [0.1, 0.7], mean anomaly in [-2, 2]."""
    return np.stack([0.4 + 0.3 * raw[..., 0], 2.0 * raw[..., 1]], axis=-1)


class Kepler(jb.Adapter):
    """Kepler's equation ``E - e sin E - M = 0`` for the eccentric anomaly ``E``; theta is
    ``(e, M)``. No hooks: the Jacobian comes from ``backward``."""

    signature = "(n),(p)->(n)"
    # MINPACK's hybr bounds its first step by 100 |x0|: from a start such as 1e-10 it stalls
    # ("not making good progress"), so drawn starts keep |x0| >= 1/4
    domains = {"x": "away_from_zero", "theta": _kepler_theta}

    def forward(self, x, theta):
        e, m = theta[..., 0], theta[..., 1]
        return x - e[..., None] * np.sin(x) - m[..., None]

    def backward(self, res, g):
        x, theta, _ = res
        e = theta[..., 0]
        gx = g * (1 - e[..., None] * np.cos(x))
        gt = np.stack([-np.sum(g * np.sin(x), -1), -np.sum(g, -1)], -1)
        return gx, gt


class VectorizedKepler(Kepler):
    """The same, vectorized: its Jacobian comes from one batched ``backward`` call."""

    vectorized = True


def kepler_reference(e: float, m: float) -> tuple[float, float, float]:
    """``E`` by bisection (independent of SciPy's root finders), and ``dE/de``, ``dE/dM``."""
    low, high = m - 1.0, m + 1.0  # |E - M| = e |sin E| < 1
    for _ in range(200):
        mid = (low + high) / 2
        if mid - e * np.sin(mid) - m > 0:
            high = mid
        else:
            low = mid
    big_e = (low + high) / 2
    denominator = 1 - e * np.cos(big_e)
    return big_e, np.sin(big_e) / denominator, 1 / denominator


# ----------------------------------------------------------------------- Rosenbrock


def _rosenbrock_theta(raw: np.ndarray) -> np.ndarray:
    """``a`` in [0.5, 1.5], ``b`` in [3, 7]."""
    return np.stack([1.0 + 0.5 * raw[..., 0], 5.0 + 2.0 * raw[..., 1]], axis=-1)


class Rosenbrock(jb.Adapter):
    """``(a - x₀)² + b (x₁ - x₀²)²``, minimised at ``(a, a²)``; theta is ``(a, b)``. Exact
    ``hessian`` hook."""

    signature = "(n),(p)->()"
    domains = {"theta": _rosenbrock_theta}

    def forward(self, x, theta):
        a, b = theta
        return (a - x[0]) ** 2 + b * (x[1] - x[0] ** 2) ** 2

    def backward(self, res, g):
        x, theta, _ = res
        a, b = theta
        r = x[1] - x[0] ** 2
        gx = np.array([-2 * (a - x[0]) - 4 * b * r * x[0], 2 * b * r])
        return g * gx, g * np.array([2 * (a - x[0]), r**2])

    def hessian(self, x, theta):
        a, b = theta
        r = x[1] - x[0] ** 2
        hxx = np.array([[2 - 4 * b * r + 8 * b * x[0] ** 2, -4 * b * x[0]], [-4 * b * x[0], 2 * b]])
        hxt = np.array([[-2, -4 * r * x[0]], [0, 2 * r]])
        return hxx, hxt


class PlainRosenbrock(Rosenbrock):
    """The same without the hook: second derivatives by differences of the gradient."""

    hessian = None  # type: ignore[assignment]


# ---------------------------------------------------------------- projections


def _away_from_box(raw: np.ndarray) -> np.ndarray:
    """Points whose coordinates are in (-1, 1) or in ±[2, 3]: never within 1/4 of the bounds
    that ``MinimizeBounded`` draws (lower in [-1.75, -1.25], upper in [1.25, 1.75])."""
    inside = np.abs(raw) < 0.5
    return np.where(inside, 2 * raw, np.sign(raw) * (2 + 2 * (np.abs(raw) - 0.5)))


class Distance(jb.Adapter):
    """``½ |x - θ|²``: minimised over a set, its minimiser is the projection of ``θ``. Exact
    ``hessian`` hook; vectorized."""

    signature = "(n),(n)->()"
    vectorized = True
    domains = {"theta": _away_from_box}

    def forward(self, x, theta):
        return 0.5 * np.sum((x - theta) ** 2, -1)

    def backward(self, res, g):
        x, theta, _ = res
        return g[..., None] * (x - theta), -g[..., None] * (x - theta)

    def hessian(self, x, theta):
        n = x.shape[-1]
        return np.eye(n), -np.eye(n)


def _simplex_theta(raw: np.ndarray) -> np.ndarray:
    """Three points whose projection onto the simplex has support {0, 1} with margins: the
    third coordinate is clipped to 0 with a multiplier at least 0.55."""
    return raw * 0.2 + np.array([0.6, 0.3, -1.0])


class SimplexDistance(Distance):
    domains = {"theta": _simplex_theta}


class SumToOne(jb.Adapter):
    """``Σ x - 1`` (one equality); no dependence on theta. Exact hooks."""

    signature = "(n),(p)->(m)"

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct((1,), x.dtype)

    def forward(self, x, theta):
        return np.array([np.sum(x) - 1.0])

    def backward(self, res, g):
        x, theta, _ = res
        return g[0] * np.ones_like(x), np.zeros_like(theta)

    def jacobian(self, x, theta):
        return np.ones((1, len(x))), np.zeros((1, len(theta)))

    def hessian(self, x, theta):
        n, p = len(x), len(theta)
        return np.zeros((1, n, n)), np.zeros((1, n, p))


class Nonnegative(jb.Adapter):
    """``x >= 0`` as ``c(x) = x``; its ``jacobian`` and ``hessian`` hooks are exact."""

    signature = "(n),(p)->(n)"

    def forward(self, x, theta):
        return x.copy()

    def backward(self, res, g):
        _, theta, _ = res
        return g, np.zeros_like(theta)

    def jacobian(self, x, theta):
        return np.eye(len(x)), np.zeros((len(x), len(theta)))

    def hessian(self, x, theta):
        n, p = len(x), len(theta)
        return np.zeros((n, n, n)), np.zeros((n, n, p))


def simplex_projection(theta: np.ndarray) -> np.ndarray:
    """The Euclidean projection onto the probability simplex, by sorting (Held et al.)."""
    u = np.sort(theta)[::-1]
    cumulative = np.cumsum(u) - 1
    k = np.flatnonzero(u - cumulative / np.arange(1, len(u) + 1) > 0)[-1]
    return np.maximum(theta - cumulative[k] / (k + 1), 0)


class HalfPlanes(jb.Adapter):
    """Two inequalities in the plane: ``x₀ + x₁ <= 1`` (active when projecting ``θ`` with
    ``θ₀ + θ₁ > 1``) and ``x₀ >= -5`` (slack)."""

    signature = "(n),(p)->(m)"

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct((2,), x.dtype)

    def forward(self, x, theta):
        return np.array([1 - x[0] - x[1], x[0] + 5])

    def backward(self, res, g):
        _, theta, _ = res
        return np.array([g[1] - g[0], -g[0]]), np.zeros_like(theta)


# ------------------------------------------------------------------- least squares

DESIGN = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])


class LinearModel(jb.Adapter):
    """``X β - y`` with a fixed 4×2 design ``X``; theta is ``y``."""

    signature = "(n),(p)->(m)"
    vectorized = True

    def output_specs(self, beta, y):
        return jax.ShapeDtypeStruct(y.shape, beta.dtype)

    def forward(self, beta, y):
        return beta @ DESIGN.T - y

    def backward(self, res, g):
        return g @ DESIGN, -g


def _growth_theta(raw: np.ndarray) -> np.ndarray:
    """Observations near ``2 exp(0.8 t)`` at t = 0, 1/3, 2/3, 1."""
    return 2.0 * np.exp(0.8 * np.linspace(0, 1, 4)) + 0.1 * raw


class Growth(jb.Adapter):
    """``a exp(k tᵢ) - yᵢ`` at four times; x is ``(a, k)``, theta is ``y``. Nonlinear, no hooks
    (second derivatives by differences of the Jacobian)."""

    signature = "(n),(p)->(p)"
    domains = {"x": lambda raw: np.array([2.0, 0.8]) + 0.2 * raw, "y": _growth_theta}

    def forward(self, x, y):
        t = np.linspace(0, 1, len(y))
        return x[0] * np.exp(x[1] * t) - y

    def backward(self, res, g):
        x, y, _ = res
        t = np.linspace(0, 1, len(y))
        e = np.exp(x[1] * t)
        return np.array([g @ e, g @ (x[0] * t * e)]), -g


# ------------------------------------------------------------------------- a ball


class TargetDistance(jb.Adapter):
    """``½ |x - t|²`` with theta ``(t₀, t₁, r)`` (``r`` is the ball's radius, unused here)."""

    signature = "(n),(p)->()"

    def forward(self, x, theta):
        return 0.5 * np.sum((x - theta[:2]) ** 2)

    def backward(self, res, g):
        x, theta, _ = res
        return g * (x - theta[:2]), g * np.array([*(theta[:2] - x), 0.0])


class InBall(jb.Adapter):
    """``r² - |x|² >= 0``: nonlinear, and moving with theta; no hooks (its Jacobian from
    ``backward``, its second derivatives by differences)."""

    signature = "(n),(p)->(m)"

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct((1,), x.dtype)

    def forward(self, x, theta):
        return np.array([theta[2] ** 2 - np.sum(x**2)])

    def backward(self, res, g):
        x, theta, _ = res
        return -2 * g[0] * x, np.array([0.0, 0.0, 2 * g[0] * theta[2]])


def ball_projection(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r t / |t|`` for ``|t| > r``, and its Jacobian in ``(t₀, t₁, r)``."""
    t, r = theta[:2], theta[2]
    norm = np.linalg.norm(t)
    jac_t = r / norm * (np.eye(2) - np.outer(t, t) / norm**2)
    return r * t / norm, np.concatenate([jac_t, (t / norm)[:, None]], axis=1)


# --------------------------------------------------------------------------- Linprog


class NondegenerateLinprog(Linprog):
    """``Linprog`` whose drawn problems (n = p = 2, no equalities) are non-degenerate with a
    margin: ``A_ub`` within 0.1 of the identity and ``b_ub`` positive put the vertex
    ``x = A_ub⁻¹ b_ub`` well inside the bounds ``[-10 ± 1, 10 ± 1]``, and ``c`` in [-1.25,
    -0.75] gives both inequalities multipliers ``A_ub⁻ᵀ c`` below about -0.4."""

    domains = {
        "c": lambda raw: -1.0 - 0.25 * raw,
        "A_ub": lambda raw: np.eye(raw.shape[-1]) + 0.1 * raw,
        "b_ub": "positive",
        "lower": lambda raw: -10.0 + raw,
        "upper": lambda raw: 10.0 + raw,
    }


class NondegenerateLinprogMarginals(LinprogMarginals):
    """``LinprogMarginals`` on ``NondegenerateLinprog``'s problems: the marginals
    ``A_ub⁻ᵀ c`` move with ``c`` and ``A_ub``, and are held in ``b_ub`` and the bounds."""

    domains = NondegenerateLinprog.domains


def _nnls_matrix(raw: np.ndarray) -> np.ndarray:
    """Within 0.1 of ``[[1, 0], [0, 1], [0, 0]]``."""
    return np.eye(*raw.shape[-2:]) + 0.1 * raw


def _nnls_target(raw: np.ndarray) -> np.ndarray:
    """About ``(1, -1, 0)``: the first entry of ``x`` near 1, the second held at 0 by a
    multiplier near 1."""
    return np.array([1.0, -1.0, 0.0]) + np.array([0.25, 0.25, 0.5]) * raw


class NondegenerateNnls(Nnls):
    """``Nnls`` whose drawn problems (m = 3, n = 2) have one positive entry and one held at
    zero, both with a margin, so that finite differences keep the active set."""

    domains = {"A": _nnls_matrix, "b": _nnls_target}


# ------------------------------------------------ the same problems written in JAX
# (what SciPy's call forms, ``minimize(fun, x0, args)`` and its siblings, hand the solvers:
# the host evaluates them compiled for the CPU backend, every derivative from JAX)


def _jax_rosenbrock(x, a, b):
    return (a - x[0]) ** 2 + b * (x[1] - x[0] ** 2) ** 2


def _jax_kepler(x, e, m):
    return x - e * jnp.sin(x) - m


def _jax_growth(x, y):
    return x[0] * jnp.exp(x[1] * jnp.linspace(0, 1, y.shape[-1])) - y


class JaxRosenbrock(JaxObjective):
    domains = Rosenbrock.domains


class JaxKepler(JaxSquareResidual):
    domains = Kepler.domains


class JaxGrowth(JaxResidual):
    domains = {"x": Growth.domains["x"], "theta": Growth.domains["y"]}


def _kepler_start(raw: np.ndarray) -> np.ndarray:
    """A bracket (a, b) in [-3.2, -2.8] and [3.3, 3.7] around every root that
    ``_kepler_theta_off_zero`` puts in [-2.5, 2.5] (``|E - M| <= e``), and starts x0, x1
    near 0."""
    return np.stack(
        [-3 + 0.2 * raw[..., 0], 3.5 + 0.2 * raw[..., 1], 0.1 * raw[..., 2], 0.1 * raw[..., 3]],
        axis=-1,
    )


def _kepler_theta_off_zero(raw: np.ndarray) -> np.ndarray:
    """Eccentricity in [0.1, 0.5] (newton from 0 failed on 8 of 7,440 grid points with
    0.7, none with 0.5), the mean anomaly in ±[1/4, 2]: at 0 the root is 0 to SciPy's
    absolute tolerance (1e-18 here), noise that no relative comparison can judge."""
    m = np.where(raw[..., 1] >= 0, 1.0, -1.0) * (0.25 + 1.75 * np.abs(raw[..., 1]))
    return np.stack([0.3 + 0.2 * raw[..., 0], m], axis=-1)


class KeplerRootScalar(RootScalarSolve):
    """``root_scalar``'s host solve on Kepler's equation, ``f(x, theta)`` in JAX."""

    domains = {"theta": _kepler_theta_off_zero, "start": _kepler_start}


class KeplerSlopes(EquationSlopes):
    """The slopes ``root_scalar``'s rules take on the host, of Kepler's equation."""

    domains = {"x": "real", "theta": _kepler_theta}


class KeplerCurvature(EquationCurvature):
    """Their derivative, Kepler's equation's Hessian along ``(dx, dtheta)``."""

    domains = {"x": "real", "theta": _kepler_theta, "dx": "real", "dtheta": "real"}


JAX_ROSENBROCK = JaxRosenbrock(_jax_rosenbrock, Packing.of(np.zeros(2)), Packing.of((1.0, 1.0)))
JAX_KEPLER = JaxKepler(_jax_kepler, Packing.of(np.zeros(1)), Packing.of((1.0, 1.0)))
JAX_GROWTH = JaxGrowth(_jax_growth, Packing.of(np.zeros(2)), Packing.of((np.zeros(4),)))
KEPLER_EQUATION = JaxScalarEquation(
    _jax_kepler, Packing.of(np.float64(0.0)), Packing.of((1.0, 1.0)), role="f"
)


def assert_derivative_refused(solution, match):
    """The derivative of the scalar ``solution(c)`` at ``c = 0`` is refused by name, an
    ``OptimizeError`` matching ``match``, in reverse mode, under ``jax.jit(jax.grad)`` (where
    XLA drops a forward whose value is unused) and in forward mode; and is NaN where
    ``solution`` is given ``on_failure="nan"``."""
    with pytest.raises(OptimizeError, match=match):
        jax.grad(solution)(0.0)
    with pytest.raises(OptimizeError, match=match), jb.host_errors():
        jax.block_until_ready(jax.jit(jax.grad(solution))(0.0))
    with pytest.raises(OptimizeError, match=match):
        jax.jvp(solution, (0.0,), (1.0,))
    assert np.isnan(float(jax.grad(lambda c: solution(c, on_failure="nan"))(0.0)))
