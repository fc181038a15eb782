"""SciPy's own calls with a JAX ``fun`` through the bridge, beside jaxopt's SciPy wrappers and
SciPy called directly: time and accuracy, on the same problems, in one run.

Contenders, for each problem:
- ``jaxbridge``: ``jaxbridge.adapters.optimize.minimize`` / ``root`` / ``least_squares``,
  under ``jit``;
- ``jaxopt``: ``ScipyMinimize`` / ``ScipyRootFinding`` / ``ScipyLeastSquares`` (jaxopt
  0.8.5, no longer maintained; they cannot be jitted, so they run eagerly), where installed;
- ``scipy``: SciPy's call made directly with the function's value and gradient jitted by JAX
  (the floor: no bridge, no derivative in ``args``).

Each row prints the median time per call of the value and of ``grad`` in ``args``, the
ratios to SciPy's direct call, and each contender's error: of the solution against SciPy at
tight tolerances refined by Newton's method, and of the derivative in ``args`` against
central differences of those. Not a test: nothing is asserted.

    python benchmarks/scipy_calls.py           # 11 rounds
    python benchmarks/scipy_calls.py --quick   # 2 rounds: a smoke run
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
from _timing import medians  # noqa: E402

from jaxbridge.adapters import optimize as jo  # noqa: E402

try:
    import jaxopt
except ImportError:  # (not a dependency: its row is left out)
    jaxopt = None

_RNG = np.random.default_rng(0)
FEATURES, SAMPLES = 20, 200
X = _RNG.normal(size=(SAMPLES, FEATURES))
LABELS = np.where(
    _RNG.uniform(size=SAMPLES) < 1 / (1 + np.exp(-X @ _RNG.normal(size=FEATURES))), 1.0, -1.0
)
T = np.linspace(0, 4, 200)
Y = 2.5 * np.exp(-1.3 * T) + 0.05 * _RNG.normal(size=200)


def logistic(w, penalty):
    """Mean logistic loss of 200 points in 20 features, plus an L2 penalty."""
    margins = jnp.asarray(LABELS) * (jnp.asarray(X) @ w)
    return jnp.mean(jnp.logaddexp(0.0, -margins)) + 0.5 * penalty * (w @ w)


def bratu(u, lam):
    """A 1-D Bratu problem on 20 interior points: ``u'' + λ eᵘ = 0``."""
    h = 1.0 / (u.size + 1)
    padded = jnp.concatenate([jnp.zeros(1), u, jnp.zeros(1)])
    return (padded[:-2] - 2 * u + padded[2:]) / h**2 + lam * jnp.exp(u)


def decay(x, scale):
    """Residuals of an exponential fit to 200 points, the data scaled by ``scale``."""
    return x[0] * jnp.exp(-x[1] * jnp.asarray(T)) - scale * jnp.asarray(Y)


PROBLEMS = {
    "minimize BFGS, logistic n=20": ("minimize", logistic, jnp.zeros(FEATURES), 0.1, "BFGS"),
    "minimize L-BFGS-B, logistic n=20": (
        "minimize",
        logistic,
        jnp.zeros(FEATURES),
        0.1,
        "L-BFGS-B",
    ),
    "root hybr, Bratu n=20": ("root", bratu, jnp.zeros(20), 1.0, "hybr"),
    "least_squares trf, decay m=200": ("least_squares", decay, jnp.array([1.0, 1.0]), 1.0, "trf"),
}
TIGHT = {"minimize": {"gtol": 1e-12}, "root": {"xtol": 1e-14}, "least_squares": {}}


def scipy_solve(kind: str, fun: Callable, x0: np.ndarray, arg: float, method: str) -> np.ndarray:
    """SciPy's own call at tight tolerances, the function and its derivative jitted by JAX."""
    f, derivative = _jitted(kind, fun)
    if kind == "minimize":
        return scipy.optimize.minimize(
            lambda x: tuple(map(np.asarray, f(x, arg))),
            x0,
            jac=True,
            method=method,
            options={"gtol": 1e-12} if method == "BFGS" else {"gtol": 1e-12, "ftol": 1e-16},
        ).x
    jac = {"jac": lambda x: np.asarray(derivative(x, arg))}
    if kind == "root":
        return scipy.optimize.root(lambda x: np.asarray(f(x, arg)), x0, tol=1e-14, **jac).x
    tight = {"ftol": 1e-15, "xtol": 1e-15, "gtol": 1e-15}
    return scipy.optimize.least_squares(lambda x: np.asarray(f(x, arg)), x0, **tight, **jac).x


@functools.cache
def _jitted(kind: str, fun: Callable) -> tuple[Callable, Callable]:
    """``(value and gradient, Hessian)`` of an objective, ``(F, Jacobian)`` of a residual."""
    if kind == "minimize":
        return jax.jit(jax.value_and_grad(fun)), jax.jit(jax.hessian(fun))
    return jax.jit(fun), jax.jit(jax.jacfwd(fun))


def reference(kind: str, fun: Callable, x0: np.ndarray, arg: float, method: str) -> np.ndarray:
    """SciPy's solution refined by 3 Newton steps on its optimality conditions (exact
    derivatives from JAX): the reference and the differences' points, accurate to rounding."""
    x = scipy_solve(kind, fun, x0, arg, method)
    if kind == "least_squares":  # (Newton on the gradient of ½|r|²)
        fun = functools.partial(_half_squares, fun)
        kind = "minimize"
    f, derivative = _jitted(kind, fun)
    for _ in range(3):
        residual = f(x, arg)[1] if kind == "minimize" else f(x, arg)
        x = x - np.linalg.solve(np.asarray(derivative(x, arg)), np.asarray(residual))
    return x


def _half_squares(fun: Callable, x: jax.Array, arg: float) -> jax.Array:
    r = fun(x, arg)
    return 0.5 * r @ r


def bridged(kind: str, fun: Callable, x0: jax.Array, method: str) -> Callable:
    call = getattr(jo, kind)
    if kind == "least_squares":
        return lambda arg: call(fun, x0, method=method, args=(arg,)).x
    return lambda arg: call(fun, x0, args=(arg,), method=method).x


def jaxopt_solver(kind: str, fun: Callable, method: str) -> Callable:
    assert jaxopt is not None
    if kind == "minimize":
        solver = jaxopt.ScipyMinimize(fun=fun, method=method, tol=1e-12)
    elif kind == "root":
        solver = jaxopt.ScipyRootFinding(optimality_fun=fun, method=method, tol=1e-14)
    else:
        solver = jaxopt.ScipyLeastSquares(
            fun=fun, method=method, options={"ftol": 1e-15, "xtol": 1e-15, "gtol": 1e-15}
        )
    return solver


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="2 rounds: a smoke run")
    rounds = 2 if parser.parse_args().quick else 11
    print(
        f"{'problem':36s} {'contender':10s} {'value ms':>9s} {'x scipy':>8s} "
        f"{'grad ms':>9s} {'x value':>8s} {'|x - SciPy|':>12s} {'d/darg error':>13s}"
    )
    for name, (kind, fun, x0, arg, method) in PROBLEMS.items():
        x0_np = np.asarray(x0)
        expected = reference(kind, fun, x0_np, arg, method)
        h = 1e-5 * max(1.0, abs(arg))
        differences = (
            reference(kind, fun, expected, arg + h, method)
            - reference(kind, fun, expected, arg - h, method)
        ) / (2 * h)
        ours = bridged(kind, fun, x0, method)
        contenders: dict[str, tuple[Callable, Callable]] = {
            "jaxbridge": (jax.jit(ours), jax.jit(jax.jacfwd(ours))),
        }
        if jaxopt is not None:
            solver = jaxopt_solver(kind, fun, method)

            def theirs(a, solver=solver):
                return solver.run(x0, a).params

            contenders["jaxopt"] = (theirs, jax.jacrev(theirs))
        timed = {"scipy": lambda: scipy_solve(kind, fun, x0_np, arg, method)}
        for who, (value, derivative) in contenders.items():
            timed[f"{who} value"] = lambda value=value: value(arg)
            timed[f"{who} grad"] = lambda derivative=derivative: derivative(arg)
        times = medians(timed, rounds)
        scipy_time = times["scipy"]
        print(f"{name:36s} {'scipy':10s} {1e3 * scipy_time:9.2f} {1.0:8.2f}")
        for who, (value, derivative) in contenders.items():
            x_error = float(np.max(np.abs(np.asarray(value(arg)) - expected)))
            d_error = float(np.max(np.abs(np.asarray(derivative(arg)) - differences)))
            d_error /= float(np.max(np.abs(differences)))
            v, g = times[f"{who} value"], times[f"{who} grad"]
            print(
                f"{'':36s} {who:10s} {1e3 * v:9.2f} {v / scipy_time:8.2f} {1e3 * g:9.2f} "
                f"{g / v:8.2f} {x_error:12.2e} {d_error:13.2e}"
            )


if __name__ == "__main__":
    main()
