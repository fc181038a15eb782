"""What do SciPy's solvers cost through the bridge, beside SciPy called directly?

For each solver, ``jit`` of the adapter's value against the same SciPy call made directly
(in a Python loop for a batch, with the same exact gradient or Jacobian), and
``jit(value_and_grad)`` against the value; medians of interleaved rounds, ratios printed
beside. Not a test: nothing is asserted.

- ``Minimize`` (BFGS, L-BFGS-B): ``vmap`` over 64 Rosenbrock problems, n = 2, without a
  ``hessian`` hook (second derivatives from the exact gradient) and with one; L-BFGS-B on
  one chained Rosenbrock problem of 50 unknowns, with a hook, without one (a vectorized
  objective and a looped one).
- ``Root`` (hybr): a 50-unknown Bratu problem, with and without a ``jacobian`` hook.
- ``LeastSquares`` (trf): ``vmap`` over 64 exponential fits, 2 unknowns, 20 residuals; and
  one fit of 3 unknowns to 2000 residuals in 1000 parameters, without hooks.
- ``OdeSolve``: Robertson over [0, 40], rtol 1e-6, atol 1e-10 (BDF, Radau; the adjoint,
  forward sensitivities and the steps), and Lotka-Volterra with RK45 (the
  adjoint and the steps); diffrax (Kvaerno5) beside Robertson where installed; BDF on a
  reaction-diffusion system of 40 unknowns, the adjoint and the steps, with a
  ``jacobian`` hook and without (looped, and vectorized); BDF on Robertson over [0, 1e5]
  with a loss on 31 output times (a fit's), the default ("auto": the steps), the adjoint
  and forward sensitivities.

    python benchmarks/solvers.py           # 11 rounds
    python benchmarks/solvers.py --quick   # 2 rounds, fewer rows: a smoke run
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.integrate  # noqa: E402
import scipy.optimize  # noqa: E402
from _timing import medians  # noqa: E402

import jaxbridge as jb  # noqa: E402
from jaxbridge.adapters.integrate import OdeSolve  # noqa: E402
from jaxbridge.adapters.optimize import LeastSquares, Minimize, Root  # noqa: E402

BATCH = 64

# ------------------------------------------------------------------------------- problems


class Rosenbrock(jb.Adapter):
    """``(a - x₀)² + b (x₁ - x₀²)²``, theta ``(a, b)``: exact gradient, no ``hessian``."""

    signature = "(n),(p)->()"

    def forward(self, x, theta):
        return rosenbrock(x, theta)[0]

    def backward(self, res, g):
        x, theta, _ = res
        a, b = theta
        r = x[1] - x[0] ** 2
        return g * rosenbrock(x, theta)[1], g * np.array([2 * (a - x[0]), r**2])


class HookedRosenbrock(Rosenbrock):
    """The same with an exact ``hessian`` hook."""

    def hessian(self, x, theta):
        a, b = theta
        r = x[1] - x[0] ** 2
        hxx = np.array([[2 - 4 * b * r + 8 * b * x[0] ** 2, -4 * b * x[0]], [-4 * b * x[0], 2 * b]])
        return hxx, np.array([[-2.0, -4 * r * x[0]], [0.0, 2 * r]])


def rosenbrock(x, theta):
    """SciPy's ``fun`` with ``jac=True``: the value and the gradient in ``x``."""
    a, b = theta
    r = x[1] - x[0] ** 2
    return (a - x[0]) ** 2 + b * r**2, np.array([-2 * (a - x[0]) - 4 * b * r * x[0], 2 * b * r])


class Chained(jb.Adapter):
    """``Σ (a - x_i)² + b (x_{i+1} - x_i²)²``, theta ``(a, b)``: vectorized, no hook."""

    signature = "(n),(p)->()"
    vectorized = True

    def forward(self, x, theta):
        a, b = theta[..., 0:1], theta[..., 1:2]
        return np.sum((a - x[..., :-1]) ** 2 + b * (x[..., 1:] - x[..., :-1] ** 2) ** 2, -1)

    def backward(self, res, g):
        x, theta, _ = res
        a, b = theta[..., 0:1], theta[..., 1:2]
        head, r = x[..., :-1], x[..., 1:] - x[..., :-1] ** 2
        gx = np.zeros(np.broadcast_shapes(x.shape, theta.shape[:-1] + (1,)))
        gx[..., :-1] += -2 * (a - head) - 4 * b * r * head
        gx[..., 1:] += 2 * b * r
        gt = np.stack([np.sum(2 * (a - head), -1), np.sum(r**2, -1)], -1)
        g = np.asarray(g)[..., None]
        return g * gx, g * gt


class LoopedChained(Chained):
    vectorized = False


class HookedChained(Chained):
    def hessian(self, x, theta):
        a, b = theta
        head, r = x[:-1], x[1:] - x[:-1] ** 2
        diagonal = np.zeros(len(x))
        diagonal[:-1] += 2 - 4 * b * r + 8 * b * head**2
        diagonal[1:] += 2 * b
        hxx = np.diag(diagonal) + np.diag(-4 * b * head, 1) + np.diag(-4 * b * head, -1)
        hxt = np.zeros((len(x), 2))
        hxt[:-1, 0] = -2
        hxt[:-1, 1] -= 4 * r * head
        hxt[1:, 1] += 2 * r
        return hxx, hxt


def chained(x, theta):
    """SciPy's ``fun`` with ``jac=True`` for ``Chained``."""
    value = Chained().forward(x, theta)
    return value, Chained().backward((x, theta, value), 1.0)[0]


BRATU_N = 50
_H = 1.0 / (BRATU_N + 1)
_LAPLACIAN = (np.diag(-2.0 * np.ones(BRATU_N)) + np.eye(BRATU_N, k=1) + np.eye(BRATU_N, k=-1)) / (
    _H * _H
)


def bratu(u, lam):
    """``u'' + λ eᵘ`` on (0, 1), ``u = 0`` at the ends, by central differences."""
    return _LAPLACIAN @ u + lam * np.exp(u)


def bratu_jacobian(u, lam):
    return _LAPLACIAN + np.diag(lam * np.exp(u))


class Bratu(jb.Adapter):
    """Bratu's problem, ``theta = (λ,)``; vectorized: its Jacobian is one ``backward`` call."""

    signature = "(n),(p)->(n)"
    vectorized = True

    def forward(self, u, theta):
        return u @ _LAPLACIAN.T + theta[..., :1] * np.exp(u)

    def backward(self, res, g):
        u, theta, _ = res
        gu = g @ _LAPLACIAN + theta[..., :1] * np.exp(u) * g
        return gu, np.sum(g * np.exp(u), -1, keepdims=True)


class HookedBratu(Bratu):
    def jacobian(self, u, theta):
        return bratu_jacobian(u, theta[0]), np.exp(u)[:, None]


FIT_TIMES = np.linspace(0.0, 3.0, 20)


class ExponentialFit(jb.Adapter):
    """Residuals ``a e^{-k t_i} - y_i`` of a fit of ``x = (a, k)`` to data ``theta = y``."""

    signature = "(n),(m)->(m)"

    def forward(self, x, y):
        return x[0] * np.exp(-x[1] * FIT_TIMES) - y

    def backward(self, res, g):
        x, y, _ = res
        return fit_jacobian(x).T @ g, -g

    def jacobian(self, x, y):
        return fit_jacobian(x), -np.eye(len(y))


def fit_jacobian(x):
    e = np.exp(-x[1] * FIT_TIMES)
    return np.stack([e, -x[0] * FIT_TIMES * e], -1)


MANY_TIMES = np.linspace(0.0, 4.0, 2000)
MANY_P = 1000


class ManyParameterFit(jb.Adapter):
    """Residuals ``x₀ e^{-x₁ t_i} + x₂ - θ_{i mod p}``: three unknowns, 2000 residuals, and
    1000 data values ``θ``, each measured twice (at ``t`` and ``t + 2``). Vectorized, no
    hooks: the Jacobian is one batched ``backward`` call, its θ part a dense (2000, 1000)."""

    signature = "(n),(p)->(m)"
    vectorized = True

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct((*x.shape[:-1], len(MANY_TIMES)), x.dtype)

    def forward(self, x, theta):
        e = np.exp(-x[..., 1:2] * MANY_TIMES)
        return x[..., :1] * e + x[..., 2:] - np.concatenate([theta, theta], -1)

    def backward(self, res, g):
        x, theta, _ = res
        ge = g * np.exp(-x[..., 1:2] * MANY_TIMES)
        gx = np.stack([ge.sum(-1), -x[..., 0] * (ge @ MANY_TIMES), g.sum(-1)], -1)
        return gx, -(g[..., :MANY_P] + g[..., MANY_P:])


def many_parameter_residual(x, theta):
    return x[0] * np.exp(-x[1] * MANY_TIMES) + x[2] - np.concatenate([theta, theta])


def many_parameter_jacobian(x, theta):
    e = np.exp(-x[1] * MANY_TIMES)
    return np.stack([e, -x[0] * MANY_TIMES * e, np.ones_like(e)], -1)


ROBERTSON_TIMES = np.array([0.0, 40.0])
STIFF = {"rtol": 1e-6, "atol": 1e-10}


def robertson(t, y, theta):
    k1, k2, k3 = np.exp(theta)
    y1, y2, y3 = y
    return np.array([-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2**2 - k3 * y2 * y3, k2 * y2**2])


def robertson_jacobian(t, y, theta):
    k1, k2, k3 = np.exp(theta)
    _, y2, y3 = y
    return np.array(
        [[-k1, k3 * y3, k3 * y2], [k1, -2 * k2 * y2 - k3 * y3, -k3 * y2], [0.0, 2 * k2 * y2, 0.0]]
    )


class RightHandSide(jb.Adapter):
    """An ODE's right-hand side ``f(t, y, theta)`` whose ``backward`` is its Jacobians in
    ``y`` and ``theta``, from ``_jacobians``."""

    signature = "(),(n),(p)->(n)"

    def _jacobians(self, t, y, theta) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def backward(self, res, g):
        t, y, theta, _ = res
        jy, jt = self._jacobians(t, y, theta)
        return None, g @ jy, g @ jt


class Robertson(RightHandSide):
    """Robertson's stiff kinetics; ``theta`` the log rate constants; a ``jacobian`` hook."""

    def forward(self, t, y, theta):
        return robertson(t, y, theta)

    def _jacobians(self, t, y, theta):
        k1, k2, k3 = np.exp(theta)
        y1, y2, y3 = y
        by_log_rate = np.array(
            [
                [-k1 * y1, 0.0, k3 * y2 * y3],
                [k1 * y1, -(k2 * y2**2), -k3 * y2 * y3],
                [0.0, k2 * y2**2, 0.0],
            ]
        )
        return robertson_jacobian(t, y, theta), by_log_rate

    def jacobian(self, t, y, theta):
        return robertson_jacobian(t, y, theta)


LOTKA_TIMES = np.linspace(0.0, 10.0, 11)
NON_STIFF = {"rtol": 1e-8, "atol": 1e-10}


def lotka_volterra(t, y, theta):
    a, b, c, d = theta
    return np.array([a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]])


class LotkaVolterra(RightHandSide):
    def forward(self, t, y, theta):
        return lotka_volterra(t, y, theta)

    def _jacobians(self, t, y, theta):
        a, b, c, d = theta
        jy = np.array([[a - b * y[1], -b * y[0]], [c * y[1], c * y[0] - d]])
        jt = np.array([[y[0], -y[0] * y[1], 0.0, 0.0], [0.0, 0.0, y[0] * y[1], -y[1]]])
        return jy, jt


REACTION_N = 40


@functools.cache
def laplacian(n: int) -> np.ndarray:
    """The second difference on ``n`` interior points of (0, 1), zero at the ends."""
    return (np.diag(-2.0 * np.ones(n)) + np.eye(n, k=1) + np.eye(n, k=-1)) * (n + 1) ** 2


def reaction_start(n: int) -> jax.Array:
    xs = np.linspace(1, n, n) / (n + 1)
    return jnp.asarray(0.5 * np.sin(np.pi * xs) + 0.2 * np.sin(3 * np.pi * xs))


class Reaction(RightHandSide):
    """``y' = D Δy + k (y - y³)`` on ``y``'s points (stiff diffusion), ``theta = (log D,
    k)``; no ``jacobian`` hook: SciPy's Newton iterations get ``∂f/∂y`` from ``n`` backward
    calls."""

    def forward(self, t, y, theta):
        return np.exp(theta[0]) * (laplacian(len(y)) @ y) + theta[1] * (y - y**3)

    def _jacobians(self, t, y, theta):
        lap = laplacian(len(y))
        jy = np.exp(theta[0]) * lap + np.diag(theta[1] * (1 - 3 * y**2))
        jt = np.stack([np.exp(theta[0]) * (lap @ y), y - y**3], 1)
        return jy, jt


REACTION_THETA = jnp.asarray([np.log(0.5), 3.0])
REACTION_TOLERANCES = {"rtol": 1e-6, "atol": 1e-9}


class HookedReaction(Reaction):
    def jacobian(self, t, y, theta):
        return self._jacobians(t, y, theta)[0]


class VectorizedReaction(Reaction):
    """``Reaction`` written for leading batch axes (``vectorized``), no hook: a Jacobian is
    one backward call on a stack of unit cotangents."""

    vectorized = True

    def forward(self, t, y, theta):
        diffusion = np.exp(theta[..., :1]) * (y @ laplacian(y.shape[-1]).T)
        return diffusion + theta[..., 1:2] * (y - y**3)

    def backward(self, res, g):
        t, y, theta, _ = res
        lap, rate = laplacian(y.shape[-1]), np.exp(theta[..., 0])
        ybar = rate[..., None] * (g @ lap) + theta[..., 1:2] * (1 - 3 * y**2) * g
        by_rate = rate * np.sum(g * (y @ lap.T), -1)
        return None, ybar, np.stack([by_rate, np.sum(g * (y - y**3), -1)], -1)


# ------------------------------------------------------------------------------- the rows


def table(
    title: str,
    contenders: dict[str, Callable[[], object]],
    base: str,
    rounds: int,
    inner: int = 1,
):
    times = medians(contenders, rounds, inner)
    print(f"\n{title}")
    print(f"  {'':50} {'median':>10} {'÷ first':>8}")
    for name, seconds in times.items():
        print(f"  {name:50} {seconds * 1e3:>7.2f} ms {seconds / times[base]:>8.2f}")


def minimize_rows(rounds: int, methods: tuple[str, ...]) -> None:
    from jaxbridge.adapters.optimize._minimizing import defaults

    rng = np.random.default_rng(0)
    thetas = np.stack([rng.uniform(0.5, 1.5, BATCH), rng.uniform(3.0, 7.0, BATCH)], -1)
    starts = np.tile([-1.2, 1.0], (BATCH, 1))
    x0, theta = jnp.asarray(starts), jnp.asarray(thetas)
    for method in methods:
        solver = Minimize(Rosenbrock(), method=method)
        value = jax.jit(jax.vmap(solver))
        hooked = jax.jit(jax.vmap(Minimize(HookedRosenbrock(), method=method)))
        loss = jax.jit(jax.value_and_grad(lambda x0, t: jax.vmap(solver)(x0, t).sum(), 1))
        options = defaults(method, None)  # the adapter's tight tolerances, to SciPy alike

        def direct(method=method, options=options):
            return [
                scipy.optimize.minimize(
                    rosenbrock, s, args=(t,), jac=True, method=method, options=options
                ).x
                for s, t in zip(starts, thetas)
            ]

        def split(method=method, options=options, objective=Rosenbrock()):
            def fun(x, t):  # what the bridge calls: forward, then backward (∂f/∂x and ∂f/∂θ)
                value = objective.forward(x, t)
                return value, objective.backward((x, t, value), 1.0)[0]

            return [
                scipy.optimize.minimize(fun, s, (t,), method, True, options=options).x
                for s, t in zip(starts, thetas)
            ]

        table(
            f"Minimize({method}), vmap over {BATCH} Rosenbrock problems (n = 2)",
            {
                "scipy.optimize.minimize, Python loop": direct,
                "the same, fun = the adapter's forward + backward": split,
                "jit(vmap(Minimize)) value": lambda: value(x0, theta),
                "jit(value_and_grad) in theta": lambda: loss(x0, theta),
                "jit(vmap(Minimize)) value, hessian hook": lambda: hooked(x0, theta),
            },
            "scipy.optimize.minimize, Python loop",
            rounds,
        )

        # the same problems through a vectorized objective (Chained at n = 2 is Rosenbrock):
        # its batched NumPy code costs about twice the scalar formulas per call, so the
        # bridge is compared with SciPy's loop calling that same code
        batched = Minimize(Chained(), method=method)
        vectorized = jax.jit(jax.vmap(batched))
        vectorized_loss = jax.jit(
            jax.value_and_grad(lambda x0, t: jax.vmap(batched)(x0, t).sum(), 1)
        )
        table(
            f"Minimize({method}), vmap over {BATCH} Rosenbrock problems, a vectorized objective",
            {
                "scipy.optimize.minimize, Python loop, fun = the objective's forward + backward": (
                    functools.partial(split, objective=Chained())
                ),
                "jit(vmap(Minimize)) value": lambda: vectorized(x0, theta),
                "jit(value_and_grad) in theta": lambda: vectorized_loss(x0, theta),
            },
            "scipy.optimize.minimize, Python loop, fun = the objective's forward + backward",
            rounds,
        )


def chained_rows(rounds: int) -> None:
    """One problem of 50 unknowns: the price of second derivatives without a hook."""
    from jaxbridge.adapters.optimize._minimizing import defaults

    n, theta = 50, np.array([1.0, 5.0])
    start = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)
    options = defaults("L-BFGS-B", None)
    x0, t = jnp.asarray(start), jnp.asarray(theta)
    solvers = {
        name: jax.jit(Minimize(objective))
        for name, objective in (
            ("hooked", HookedChained()),
            ("vectorized", Chained()),
            ("looped", LoopedChained()),
        )
    }
    loss = jax.jit(jax.value_and_grad(lambda x0, t: Minimize(Chained())(x0, t).sum(), 1))
    table(
        f"Minimize(L-BFGS-B), one chained Rosenbrock problem (n = {n})",
        {
            "scipy.optimize.minimize": lambda: (
                scipy.optimize.minimize(
                    chained, start, (theta,), "L-BFGS-B", True, options=options
                ).x
            ),
            "jit(Minimize) value, hessian hook": lambda: solvers["hooked"](x0, t),
            "the same, no hook, vectorized objective": lambda: solvers["vectorized"](x0, t),
            "the same, no hook, looped objective": lambda: solvers["looped"](x0, t),
            "jit(value_and_grad), no hook, vectorized": lambda: loss(x0, t),
        },
        "scipy.optimize.minimize",
        rounds,
    )


def root_rows(rounds: int) -> None:
    u0, lam = np.zeros(BRATU_N), np.array([1.0])
    x0, theta = jnp.asarray(u0), jnp.asarray(lam)
    contenders: dict[str, Callable[[], object]] = {
        "scipy.optimize.root, exact jac": lambda: (
            scipy.optimize.root(bratu, u0, args=(lam[0],), jac=bratu_jacobian, method="hybr").x
        )
    }
    for name, residual in (("jacobian hook", HookedBratu()), ("no hook", Bratu())):
        solver = Root(residual)
        value = jax.jit(solver)
        loss = jax.jit(jax.value_and_grad(lambda x0, t, s=solver: s(x0, t).sum(), 1))
        contenders[f"jit(Root) value, {name}"] = lambda v=value: v(x0, theta)
        contenders[f"jit(value_and_grad), {name}"] = lambda f=loss: f(x0, theta)
    table(
        f"Root(hybr), Bratu's problem, {BRATU_N} unknowns",
        contenders,
        "scipy.optimize.root, exact jac",
        rounds,
        inner=20,  # a millisecond each: many calls per round
    )


def least_squares_rows(rounds: int) -> None:
    rng = np.random.default_rng(1)
    truth = np.stack([rng.uniform(1.0, 2.0, BATCH), rng.uniform(0.5, 1.5, BATCH)], -1)
    data = truth[:, :1] * np.exp(-truth[:, 1:] * FIT_TIMES) + 0.01 * rng.standard_normal(
        (BATCH, len(FIT_TIMES))
    )
    starts = np.tile([1.0, 1.0], (BATCH, 1))
    x0, y = jnp.asarray(starts), jnp.asarray(data)
    solver = LeastSquares(ExponentialFit())
    value = jax.jit(jax.vmap(solver))
    loss = jax.jit(jax.value_and_grad(lambda x0, y: jax.vmap(solver)(x0, y).sum(), 1))

    def direct():
        return [
            scipy.optimize.least_squares(
                lambda x, d=d: x[0] * np.exp(-x[1] * FIT_TIMES) - d,
                s,
                jac=fit_jacobian,  # pyright: ignore[reportArgumentType]
                ftol=1e-12,
                xtol=1e-12,
                gtol=1e-12,
            ).x
            for s, d in zip(starts, data)
        ]

    table(
        f"LeastSquares(trf), vmap over {BATCH} exponential fits (2 unknowns, 20 residuals)",
        {
            "scipy.optimize.least_squares, Python loop": direct,
            "jit(vmap(LeastSquares)) value": lambda: value(x0, y),
            "jit(value_and_grad) in the data": lambda: loss(x0, y),
        },
        "scipy.optimize.least_squares, Python loop",
        rounds,
    )


def many_parameter_rows(rounds: int) -> None:
    rng = np.random.default_rng(2)
    data = 1.5 * np.exp(-0.7 * MANY_TIMES[:MANY_P]) + 0.3 + 0.01 * rng.standard_normal(MANY_P)
    start = np.array([1.0, 1.0, 0.0])
    x0, theta = jnp.asarray(start), jnp.asarray(data)
    solver = LeastSquares(ManyParameterFit())
    value = jax.jit(solver)
    loss = jax.jit(jax.value_and_grad(lambda x0, t: solver(x0, t).sum(), 1))

    def direct(jacobian=many_parameter_jacobian):
        return scipy.optimize.least_squares(
            many_parameter_residual,
            start,
            jac=jacobian,  # pyright: ignore[reportArgumentType]
            args=(data,),
            ftol=1e-12,
            xtol=1e-12,
            gtol=1e-12,
        ).x

    def by_backward(x, theta, residual=ManyParameterFit()):
        """What the bridge has without a hook: ``backward`` with each unit cotangent."""
        value = residual.forward(x, theta)
        return residual.backward((x, theta, value), np.eye(len(value)))[0]

    table(
        f"LeastSquares(trf), {len(MANY_TIMES)} residuals, 3 unknowns, {MANY_P} parameters, "
        "no hooks",
        {
            "scipy.optimize.least_squares": direct,
            "the same, jac = the adapter's backward": lambda: direct(by_backward),
            "jit(LeastSquares) value": lambda: value(x0, theta),
            "jit(value_and_grad) in the data": lambda: loss(x0, theta),
        },
        "scipy.optimize.least_squares",
        rounds,
    )


def ode_rows(rounds: int, methods: tuple[str, ...], contender: bool) -> None:
    y0_host, theta_host = np.array([1.0, 0.0, 0.0]), np.log([0.04, 3.0e7, 1.0e4])
    y0, theta, ts = map(jnp.asarray, (y0_host, theta_host, ROBERTSON_TIMES))
    weights = jnp.array([1.0, 1e4, 1.0])
    for method in methods:
        contenders: dict[str, Callable[[], object]] = {
            "scipy.integrate.solve_ivp": lambda m=method: (
                scipy.integrate.solve_ivp(
                    robertson,
                    (0.0, 40.0),
                    y0_host,
                    method=m,
                    t_eval=ROBERTSON_TIMES,
                    args=(theta_host,),
                    jac=robertson_jacobian,
                    **STIFF,
                ).y
            )
        }
        for sensitivity in ("adjoint", "forward"):
            solver = OdeSolve(Robertson(), method=method, sensitivity=sensitivity, **STIFF)
            # (a value with forward sensitivities solves for y alone: the same cost)
            value = jax.jit(solver)
            contenders[f"jit(OdeSolve) value, {sensitivity}"] = lambda v=value: v(y0, theta, ts)
            loss = jax.jit(
                jax.value_and_grad(lambda y0, t, s=solver: s(y0, t, ts)[-1] @ weights, (0, 1))
            )
            contenders[f"jit(value_and_grad), {sensitivity}"] = lambda f=loss: f(y0, theta)
        if method in ("BDF", "Radau"):  # derivatives through the steps taken
            stepped = OdeSolve(Robertson(), method=method, sensitivity="steps", **STIFF)
            loss = jax.jit(
                jax.value_and_grad(lambda y0, t: stepped(y0, t, ts)[-1] @ weights, (0, 1))
            )
            contenders["jit(value_and_grad), steps"] = lambda f=loss: f(y0, theta)
        controlled = OdeSolve(Robertson(), method=method, control_quadrature=True, **STIFF)
        loss = jax.jit(
            jax.value_and_grad(lambda y0, t: controlled(y0, t, ts)[-1] @ weights, (0, 1))
        )
        contenders["jit(value_and_grad), adjoint, control_quadrature"] = lambda: loss(y0, theta)
        if contender:
            contenders.update(diffrax_robertson(y0, theta, weights))
        table(
            f"OdeSolve({method}), Robertson over [0, 40], rtol 1e-6, atol 1e-10",
            contenders,
            "scipy.integrate.solve_ivp",
            rounds,
        )
    lv_y0, lv_theta = np.array([1.0, 0.5]), np.array([1.5, 1.0, 1.0, 3.0])
    y0, theta, ts = map(jnp.asarray, (lv_y0, lv_theta, LOTKA_TIMES))
    solver = OdeSolve(LotkaVolterra(), method="RK45", sensitivity="adjoint", **NON_STIFF)
    stepped = OdeSolve(LotkaVolterra(), method="RK45", sensitivity="steps", **NON_STIFF)
    value = jax.jit(solver)
    loss = jax.jit(jax.value_and_grad(lambda y0, t: solver(y0, t, ts).sum(), (0, 1)))
    through = jax.jit(jax.value_and_grad(lambda y0, t: stepped(y0, t, ts).sum(), (0, 1)))
    contenders = {
        "scipy.integrate.solve_ivp": lambda: (
            scipy.integrate.solve_ivp(
                lotka_volterra,
                (0.0, 10.0),
                lv_y0,
                method="RK45",
                t_eval=LOTKA_TIMES,
                args=(lv_theta,),
                **NON_STIFF,
            ).y
        ),
        "jit(OdeSolve) value": lambda: value(y0, theta, ts),
        "jit(value_and_grad), adjoint": lambda: loss(y0, theta),
        "jit(value_and_grad), steps": lambda: through(y0, theta),
    }
    table(
        "OdeSolve(RK45), Lotka-Volterra over [0, 10], 11 outputs, rtol 1e-8, atol 1e-10",
        contenders,
        "scipy.integrate.solve_ivp",
        rounds,
    )


def fit_rows(rounds: int) -> None:
    """A fit's loss reads the solution at many times (``examples/stiff_kinetics.py``'s
    setting): the adjoint restarts at each, the steps do not."""
    y0_host, theta_host = np.array([1.0, 0.0, 0.0]), np.log([0.04, 3.0e7, 1.0e4])
    times = np.concatenate([[0.0], np.logspace(-5, 5, 30)])
    tolerances = {"rtol": 1e-7, "atol": 1e-14}
    y0, theta, ts = map(jnp.asarray, (y0_host, theta_host, times))
    weights = jnp.asarray(np.random.default_rng(1).uniform(0.5, 1.5, (len(times), 3)))
    contenders: dict[str, Callable[[], object]] = {
        "scipy.integrate.solve_ivp": lambda: (
            scipy.integrate.solve_ivp(
                robertson,
                (0.0, times[-1]),
                y0_host,
                method="BDF",
                t_eval=times,
                args=(theta_host,),
                jac=robertson_jacobian,
                **tolerances,
            ).y
        ),
        "jit(OdeSolve) value": lambda v=jax.jit(OdeSolve(Robertson(), **tolerances)): v(
            y0, theta, ts
        ),
    }
    for sensitivity in ("auto", "adjoint", "forward"):
        solver = OdeSolve(Robertson(), sensitivity=sensitivity, **tolerances)
        loss = jax.jit(
            jax.value_and_grad(lambda y0, t, s=solver: jnp.sum(weights * s(y0, t, ts)), (0, 1))
        )
        used = solver.sensitivity_for(3)
        name = f"{sensitivity} ({used})" if used != sensitivity else sensitivity
        contenders[f"jit(value_and_grad), {name}"] = lambda f=loss: f(y0, theta)
    table(
        "OdeSolve(BDF), Robertson over [0, 1e5], a loss on 31 output times, rtol 1e-7, atol 1e-14",
        contenders,
        "scipy.integrate.solve_ivp",
        rounds,
    )


def reaction_rows(rounds: int) -> None:
    """A larger stiff system: BDF's derivatives by the adjoint and by the steps, with a
    ``jacobian`` hook and without (then each recorded step's Jacobian is 40 backward calls,
    or one for a ``vectorized`` rhs)."""
    y0 = reaction_start(REACTION_N)
    theta, ts = REACTION_THETA, jnp.linspace(0.0, 2.0, 5)
    weights = jnp.asarray(np.cos(np.arange(REACTION_N)))
    tolerances = REACTION_TOLERANCES
    contenders: dict[str, Callable[[], object]] = {}
    rhss = (
        ("jacobian hook", HookedReaction()),
        ("no hook", Reaction()),
        ("no hook, vectorized", VectorizedReaction()),
    )
    for name, rhs in rhss:
        value = jax.jit(OdeSolve(rhs, **tolerances))
        contenders[f"jit(OdeSolve) value, {name}"] = lambda v=value: v(y0, theta, ts)
        for sensitivity in ("adjoint", "steps"):
            solver = OdeSolve(rhs, sensitivity=sensitivity, **tolerances)
            loss = jax.jit(
                jax.value_and_grad(lambda y0, t, s=solver: s(y0, t, ts)[-1] @ weights, (0, 1))
            )
            contenders[f"jit(value_and_grad), {sensitivity}, {name}"] = lambda f=loss: f(y0, theta)
    table(
        f"OdeSolve(BDF), reaction-diffusion, {REACTION_N} unknowns over [0, 2], rtol 1e-6",
        contenders,
        "jit(OdeSolve) value, jacobian hook",
        rounds,
    )


def looped_rows(rounds: int) -> None:
    """BDF with a looped rhs and no hook, by size: each recorded step's Jacobian is ``n``
    backward calls, so the steps lose to the adjoint as ``n`` grows, and win as the loss
    reads more output times (the adjoint restarts at each): where ``"auto"`` draws the line
    (``LOOPED_STEPS``)."""
    theta, ts = REACTION_THETA, jnp.linspace(0.0, 2.0, 6)
    for n in (8, 16, 24, 40):
        y0, weights = reaction_start(n), jnp.asarray(np.cos(np.arange(n)))
        value = jax.jit(OdeSolve(Reaction(), **REACTION_TOLERANCES))
        contenders: dict[str, Callable[[], object]] = {
            "jit(OdeSolve) value": lambda v=value, y0=y0: v(y0, theta, ts)
        }
        for read, rows in (("the last output", -1), ("five outputs", slice(1, None))):
            for sensitivity in ("adjoint", "steps"):
                solver = OdeSolve(Reaction(), sensitivity=sensitivity, **REACTION_TOLERANCES)
                loss = jax.jit(
                    jax.value_and_grad(
                        lambda y0, t, s=solver, r=rows, w=weights: jnp.sum(s(y0, t, ts)[r] @ w),
                        (0, 1),
                    )
                )
                name = f"jit(value_and_grad), {sensitivity}, {read}"
                contenders[name] = lambda f=loss, y0=y0: f(y0, theta)
        used = OdeSolve(Reaction()).sensitivity_for(n)
        table(
            f"OdeSolve(BDF), looped reaction-diffusion without a hook, {n} unknowns ('auto': "
            f"{used})",
            contenders,
            "jit(OdeSolve) value",
            rounds,
        )


def diffrax_robertson(y0, theta, weights) -> dict[str, Callable[[], object]]:
    """diffrax's Kvaerno5 on the same problem, value and value-and-grad (checkpointed
    reverse mode through the solver), if diffrax is installed."""
    try:
        import diffrax
    except ImportError:
        return {}

    def field(t, y, theta):
        k1, k2, k3 = jnp.exp(theta)
        y1, y2, y3 = y
        return jnp.stack([-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2**2 - k3 * y2 * y3, k2 * y2**2])

    def solve(y0, theta):
        return diffrax.diffeqsolve(
            diffrax.ODETerm(field),
            diffrax.Kvaerno5(),
            t0=0.0,
            t1=40.0,
            dt0=1e-6,
            y0=y0,
            args=theta,
            stepsize_controller=diffrax.PIDController(**STIFF),
            max_steps=100_000,
        ).ys[-1]  # pyright: ignore[reportOptionalSubscript]

    value = jax.jit(solve)
    loss = jax.jit(jax.value_and_grad(lambda y0, t: solve(y0, t) @ weights, (0, 1)))
    return {
        "diffrax Kvaerno5 value": lambda: value(y0, theta),
        "diffrax Kvaerno5 value_and_grad": lambda: loss(y0, theta),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, fewer rows")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 11, 2 with --quick)")
    parser.add_argument(
        "--only", choices=("minimize", "root", "least_squares", "ode"), help="one family"
    )
    options = parser.parse_args()
    rounds = options.rounds or (2 if options.quick else 11)
    print(f"float64, medians of {rounds} interleaved rounds; ratios to each table's first row")
    quick = options.quick
    rows = {
        "minimize": lambda: (
            minimize_rows(rounds, ("L-BFGS-B",) if quick else ("BFGS", "L-BFGS-B")),
            chained_rows(rounds),
        ),
        "root": lambda: root_rows(rounds),
        "least_squares": lambda: (least_squares_rows(rounds), many_parameter_rows(rounds)),
        "ode": lambda: (
            ode_rows(rounds, ("BDF",) if quick else ("BDF", "Radau"), not quick),
            None if quick else fit_rows(rounds),
            None if quick else reaction_rows(rounds),
            None if quick else looped_rows(rounds),
        ),
    }
    for name, run in rows.items():
        if options.only in (None, name):
            run()


if __name__ == "__main__":
    main()
