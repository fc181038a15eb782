"""The integrations behind ``OdeSolve``, each a ``solve_ivp`` call whose status is checked:
the solve itself, the forward-sensitivity system, the directional (tangent) system and the
adjoint system, with the Jacobians SciPy's implicit methods want for each.

Everything here runs on the host, in float64, on NumPy arrays.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.sparse

import jaxbridge as jb

from .._shared._user_function import UserFunction
from ._bdf import BdfSteps
from ._checks import failure
from ._dense import Interpolant
from ._lapack import solver_class
from ._steps import Steps, recorder, through_steps_jvp, through_steps_vjp

METHODS = ("BDF", "Radau", "LSODA", "RK45", "RK23", "DOP853")
IMPLICIT = frozenset({"BDF", "Radau", "LSODA"})  # the methods that use a Jacobian


class Settings(Protocol):
    """What the integrations take from ``OdeSolve``: ``solve_ivp``'s options."""

    @property
    def method(self) -> str: ...
    @property
    def rtol(self) -> float: ...
    @property
    def atol(self) -> float: ...
    @property
    def max_step(self) -> float: ...
    @property
    def max_evaluations(self) -> int: ...
    @property
    def control_quadrature(self) -> bool: ...
    def sensitivity_for(self, n: int, /) -> str: ...


def integrate(
    settings: Settings,
    what: str,
    fun: Callable[[float, np.ndarray], np.ndarray],
    jac: Callable[[float, np.ndarray], Any] | None,
    span: tuple[float, float],
    z0: np.ndarray,
    t_eval: np.ndarray | None = None,
    dense: bool = False,
    quadratures: int = 0,
    solver: type | None = None,
) -> Any:
    """``solve_ivp`` with the adapter's settings; raise ``IntegrationFailure`` naming
    ``what`` and quoting SciPy's message unless it reached ``span[1]`` with finite values.

    The last ``quadratures`` components (integrals of the others, which nothing feeds
    back from) are left out of the error control, as CVODES does by default: they follow
    the steps the others need. Held to ``atol`` while they start from 0, they could make
    the Newton iterations of BDF fail on their rounding alone.

    A non-finite derivative or Jacobian stops the solve at once: SciPy's LSODA would
    otherwise stall on it for ever (its time stops advancing while it reports success, step
    after step), and the others fail less clearly. So does the ``max_evaluations``-th
    evaluation of the derivative: SciPy's solvers have no step limit, and LSODA can also
    creep on in minute steps for ever. Warnings SciPy raises on the way (LSODA's
    "repeated convergence failures") join the message of a failure.

    The solver runs in the span's own time, ``s = |t - span[0]|`` from 0, whichever way
    ``span`` goes: its smallest step is ten spacings of the floating-point numbers at the
    current time, so at ``t = 1e5`` it could not take the 1e-11 steps a stiff transient
    needs there (SciPy's BDF then fails with "Required step size is less than spacing
    between numbers"), while near ``s = 0`` it can.

    Returns the solution at ``t_eval`` (columns), or at ``span[1]`` alone, and with
    ``dense`` an interpolant of ``t``. ``solver``: SciPy's class for the method to use
    instead of its name (one that records its steps).
    """
    start, end = float(span[0]), float(span[1])
    sign = 1.0 if end >= start else -1.0

    atol: Any = settings.atol
    if quadratures:
        atol = np.full(len(z0), float(settings.atol))
        atol[len(z0) - quadratures :] = _UNCONTROLLED
    options: dict[str, Any] = {"rtol": settings.rtol, "atol": atol}
    if settings.max_step != np.inf:
        options["max_step"] = settings.max_step
    reached = [start, 0]  # the last time asked about, for the messages; evaluations

    def finite_fun(s: float, z: np.ndarray) -> np.ndarray:
        t = start + sign * s
        reached[0] = t
        reached[1] += 1
        if reached[1] > settings.max_evaluations:
            raise _Stop(
                t,
                f"needed more than max_evaluations = {settings.max_evaluations} "
                "evaluations of the derivative",
            )
        dz = fun(t, z)  # a new array below: SciPy keeps some, the rhs may reuse its own
        dz = dz.copy() if sign > 0 else -dz
        # a finite sum of squares has finite terms, and is quicker to take than isfinite
        # per entry (one that overflows is looked at entry by entry)
        if not (math.isfinite(np.dot(dz, dz)) or np.isfinite(dz).all()):
            raise _Stop(t, "met a non-finite derivative (NaN or inf)")
        return dz

    def finite_jac(s: float, z: np.ndarray) -> Any:
        t = start + sign * s
        m = sign * jac(t, z)  # type: ignore[misc]
        m = _dense(m) if settings.method == "LSODA" else m  # LSODA takes dense ones only
        values = m.data if scipy.sparse.issparse(m) else m
        if not np.isfinite(values).all():
            raise _Stop(t, "met a non-finite Jacobian (NaN or inf)")
        return m

    if settings.method in IMPLICIT and jac is not None:
        options["jac"] = finite_jac
    method = settings.method
    where = f"[{span[0]:.8g}, {span[1]:.8g}]"
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            sol = scipy.integrate.solve_ivp(
                finite_fun,
                (0.0, abs(end - start)),
                z0,
                method=solver_class(method) if solver is None else solver,  # type: ignore[arg-type]
                t_eval=None
                if t_eval is None
                else np.minimum(sign * (t_eval - start), abs(end - start)),
                dense_output=dense,
                **options,
            )
        except _Stop as stop:
            raise failure(
                f"{what}: solve_ivp(method={method!r}) {stop.problem} at t = {stop.t:.8g} of "
                f"{where}{_quoted(warned)}"
            ) from None
    if sol.status != 0:
        raise failure(
            f"{what}: solve_ivp(method={method!r}) stopped near t = {reached[0]:.8g} of "
            f"{where}: {sol.message.rstrip('.')}{_quoted(warned)}"
        )
    if not np.isfinite(sol.y).all():
        raise failure(
            f"{what}: the solution is not finite (it overflowed) before t = {span[1]:.8g}"
        )
    values = sol.y if t_eval is not None else sol.y[:, -1]
    return values, Interpolant(sol.sol, start, sign) if dense else None


Trajectory = Interpolant | Steps | BdfSteps
"""What the derivatives need of a solve between its output times: its dense output, or
its steps (``sensitivity="steps"``)."""


_UNCONTROLLED = 1e300  # an absolute tolerance that no error reaches: no error control


class _Stop(Exception):
    def __init__(self, t: float, problem: str) -> None:
        super().__init__(t, problem)
        self.t, self.problem = float(t), problem


def _quoted(warned: list[warnings.WarningMessage]) -> str:
    messages = dict.fromkeys(str(w.message).strip() for w in warned)
    return "".join(f" (SciPy warned: {m.rstrip('.')})" for m in messages)


def _dense(m: Any) -> np.ndarray:
    return m.toarray() if scipy.sparse.issparse(m) else np.asarray(m)


def block_diagonal(block: Any, count: int) -> Any:
    """``count`` copies of ``block`` on a diagonal, sparse if ``block`` is."""
    if scipy.sparse.issparse(block):
        return scipy.sparse.block_diag([block] * count, format="csc")
    return scipy.linalg.block_diag(*([block] * count))


def jacobian_hook(rhs: jb.Adapter) -> Callable[..., Any] | None:
    """The rhs's own ``jacobian(t, y, theta)`` (``∂f/∂y``), where it defines one."""
    return getattr(rhs, "jacobian", None)


class Dynamics:
    """The right-hand side with ``theta`` fixed, as SciPy calls it: ``f(t, y)``, its
    Jacobians, and products with them, on float64 arrays."""

    def __init__(self, rhs: jb.Adapter, theta: np.ndarray, n: int) -> None:
        self.rhs = rhs
        self.host = UserFunction(rhs, "OdeSolve's rhs", (n,))
        self.theta = theta
        self.n = n
        self.hook = jacobian_hook(rhs)

    def args(self, t: float, y: np.ndarray) -> tuple[np.ndarray, ...]:
        return np.asarray(t, np.float64), np.asarray(y, np.float64), self.theta

    def f(self, t: float, y: np.ndarray) -> np.ndarray:
        # (``args`` spelt out: SciPy's loops call this at every evaluation)
        return self.host.value(np.asarray(t, np.float64), np.asarray(y, np.float64), self.theta)

    def jacobians(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(∂f/∂y, ∂f/∂θ)``, from ``n`` backward calls."""
        _, jy, jtheta = self.host.linearize(self.args(t, y))[1]
        return jy, jtheta

    def jac_y(self, t: float, y: np.ndarray) -> Any:
        """``∂f/∂y``: the rhs's own ``jacobian(t, y, theta)`` if it has one (dense or
        ``scipy.sparse``), else from ``n`` backward calls."""
        if self.hook is None:
            return self.jacobians(t, y)[0]
        jy = self.hook(*self.args(t, y))
        if not scipy.sparse.issparse(jy):
            jy = np.asarray(jy, np.float64)
        if jy.shape != (self.n, self.n):
            raise ValueError(
                f"OdeSolve's rhs {type(self.rhs).__name__}.jacobian returned shape "
                f"{jy.shape}, expected ({self.n}, {self.n}) (∂f/∂y)."
            )
        return jy

    def vjp(
        self, t: float, y: np.ndarray, lam: np.ndarray, f: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(λᵀ ∂f/∂y, λᵀ ∂f/∂θ)``: one forward and one backward call (one backward where
        the caller has ``f(t, y)``)."""
        _, ybar, thetabar = self.host.vjp(self.args(t, y), lam, f)
        return ybar, thetabar

    def jvp(self, t: float, y: np.ndarray, v: np.ndarray, dtheta: np.ndarray) -> np.ndarray:
        """``∂f/∂y v + ∂f/∂θ θ̇``: the rhs's ``jvp`` if it has one, else from its Jacobians."""
        return self.host.jvp(self.args(t, y), (None, v, dtheta))


def solve(
    settings: Settings, dyn: Dynamics, y0: np.ndarray, ts: np.ndarray, dense: bool = False
) -> tuple[np.ndarray, Trajectory | None]:
    """``y`` at every time in ``ts`` (strictly increasing), ``(k, n)``, row 0 ``y0``; with
    ``dense`` also what the derivatives need of the solve between them (None for one
    time or no unknowns): with ``sensitivity="steps"`` the steps taken (``_steps``), else
    the dense output. The outputs are the same to the bit either way: ``solve_ivp`` reads ``t_eval``
    from the same interpolants."""
    ys = np.empty((len(ts), len(y0)))
    ys[0] = y0
    if len(ts) == 1 or not len(y0):  # nothing to integrate
        return ys, None
    steps = None
    if dense and settings.sensitivity_for(len(y0)) == "steps":
        steps = recorder(settings.method, ts[0], 1.0, y0)
    values, interpolant = integrate(
        settings,
        "the solve",
        dyn.f,
        dyn.jac_y,
        (ts[0], ts[-1]),
        y0,
        t_eval=ts,
        dense=dense and steps is None,
        solver=None if steps is None else steps.solver(),
    )
    ys[1:] = values.T[1:]
    return ys, steps if steps is not None else interpolant


_COUPLING_STEP = float(np.sqrt(np.finfo(np.float64).eps))
"""Relative step of the one-sided differences for the coupling of ``S'`` to ``y``: half
the digits, plenty for a Newton iteration matrix."""


def solve_with_sensitivities(
    settings: Settings, dyn: Dynamics, y0: np.ndarray, ts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``y`` and ``S = ∂y/∂(y0, θ)`` at every time in ``ts``: ``(k, n)`` and ``(k, n, n+p)``.

    Integrates ``S' = ∂f/∂y S + [0, ∂f/∂θ]`` with ``y`` (error control on both), ``S``
    stored transposed. The Jacobian SciPy's implicit methods get is ``∂f/∂y`` repeated on
    the diagonal, and below it how ``S'`` moves with ``y`` (the terms in ``∂²f``), by
    differences of ``S'`` in each ``y_k``: n more linearizations per Jacobian. Without them
    Newton's iteration crept on stiff problems (Robertson's took 100,000 evaluations where
    the plain solve takes 1,600); they change nothing in the result, only how fast Newton
    gets there.
    """
    n, p = len(y0), len(dyn.theta)
    m = n + p
    st0 = np.zeros((m, n))
    st0[:n] = np.eye(n)
    sens = np.empty((len(ts), n, m))
    sens[0] = st0.T
    ys = np.empty((len(ts), n))
    ys[0] = y0
    if len(ts) == 1 or not n:  # nothing to integrate
        return ys, sens

    def fun(t: float, z: np.ndarray) -> np.ndarray:
        y, st = z[:n], z[n:].reshape(m, n)
        f, jy, jtheta = _linearized(dyn, t, y)
        dst = st @ jy.T
        dst[n:] += jtheta.T
        return np.concatenate([f, dst.ravel()])

    def jac(t: float, z: np.ndarray) -> Any:
        diagonal = block_diagonal(dyn.jac_y(t, z[:n]), m + 1)
        base = fun(t, z)[n:]
        coupling = np.empty((m * n, n))
        for k in range(n):
            step = _COUPLING_STEP * max(1.0, abs(z[k]))
            moved = z.copy()
            moved[k] += step
            coupling[:, k] = (fun(t, moved)[n:] - base) / step
        if not scipy.sparse.issparse(diagonal):
            diagonal[n:, :n] = coupling
            return diagonal
        rows, columns = np.divmod(np.arange(m * n * n), n)
        corner = scipy.sparse.csc_matrix(
            (coupling.ravel(), (n + rows, columns)), shape=diagonal.shape
        )
        return (diagonal + corner).tocsc()

    z0 = np.concatenate([y0, st0.ravel()])
    values, _ = integrate(
        settings, "the forward sensitivities", fun, jac, (ts[0], ts[-1]), z0, t_eval=ts
    )
    zs = values.T
    ys[1:] = zs[1:, :n]
    sens[1:] = np.swapaxes(zs[1:, n:].reshape(-1, m, n), -1, -2)
    return ys, sens


def _linearized(dyn: Dynamics, t: float, y: np.ndarray):
    f, (_, jy, jtheta) = dyn.host.linearize(dyn.args(t, y))
    return f, jy, jtheta


def adjoint(
    settings: Settings,
    dyn: Dynamics,
    ts: np.ndarray,
    ys: np.ndarray,
    trajectory: Trajectory | None,
    g: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gradient of ``Σ_i g_i · y(t_i)`` in ``y0``, ``θ`` and ``ts``, by the adjoint.

    Optimise-then-discretise, interval by interval from the last output back: integrate
    ``λ' = -∂f/∂yᵀ λ`` and ``μ' = -∂f/∂θᵀ λ`` backwards over ``[t_{i-1}, t_i]`` along the
    solve's dense ``trajectory`` with the same method (``μ`` accumulates ``θ̄``), and add
    ``g_{i-1}`` to ``λ`` at ``t_{i-1}``. ``y`` is never integrated backwards in time,
    which is unstable for dissipative systems.

    Output times: ``∂L/∂t_i = g_i · f(t_i, y_i)`` for ``i > 0``, and ``∂L/∂t_0 = -λ(t_0) ·
    f(t_0, y_0)`` with ``λ(t_0)`` taken before ``g_0`` is added.

    Given a solve's ``Steps`` instead of its dense output, ``λ(t_0)`` and ``θ̄`` come from
    the reverse pass through them (``_steps``).
    """
    k, n = ys.shape
    p = len(dyn.theta)
    tbar, thetabar = np.zeros(k), np.zeros(p)
    nonzero = np.flatnonzero(np.any(g != 0, axis=1))
    if len(nonzero) == 0:
        return np.zeros(n), thetabar, tbar
    last = int(nonzero[-1])
    for i in range(1, last + 1):
        tbar[i] = g[i] @ dyn.f(ts[i], ys[i])
    if last == 0:
        return g[0].copy(), thetabar, tbar
    if isinstance(trajectory, (Steps, BdfSteps)):
        lam, thetabar = through_steps_vjp(dyn, trajectory, ts, g)
    else:
        assert trajectory is not None  # (there is one wherever there are two times)
        lam = np.zeros(n)  # λ just after each output time, before its cotangent is added
        for i in range(last, 0, -1):
            lam += g[i]
            lam, dtheta = _adjoint_interval(settings, dyn, ts[i - 1], ts[i], trajectory, lam)
            thetabar += dtheta
    tbar[0] = -lam @ dyn.f(ts[0], ys[0])
    return lam + g[0], thetabar, tbar


def _adjoint_interval(
    settings: Settings,
    dyn: Dynamics,
    start: float,
    end: float,
    trajectory: Interpolant,
    lam_end: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``λ(start)`` and ``∫ λᵀ ∂f/∂θ dt`` over ``[start, end]``, from ``λ(end)``."""
    n, p = dyn.n, len(dyn.theta)
    where = f"the adjoint over [{start:.8g}, {end:.8g}]"

    def fun(t: float, z: np.ndarray) -> np.ndarray:
        ybar, thetabar = dyn.vjp(t, trajectory(t), z[:n])
        return -np.concatenate([ybar, thetabar])

    def jac(t: float, z: np.ndarray) -> Any:
        y = trajectory(t)
        if dyn.hook is not None:  # ∂f/∂θ is not at hand: Newton's iteration does without it
            jy = dyn.jac_y(t, y)
            if scipy.sparse.issparse(jy):
                return -scipy.sparse.bmat(
                    [[jy.T, None], [None, scipy.sparse.csc_array((p, p))]], format="csc"
                )
            jtheta = np.zeros((n, p))
        else:
            jy, jtheta = dyn.jacobians(t, y)
        top = np.concatenate([jy.T, np.zeros((n, p))], axis=1)
        bottom = np.concatenate([jtheta.T, np.zeros((p, p))], axis=1)
        return -np.concatenate([top, bottom])

    z0 = np.concatenate([lam_end, np.zeros(p)])
    quadratures = 0 if settings.control_quadrature else p
    z, _ = integrate(settings, where, fun, jac, (end, start), z0, quadratures=quadratures)
    return z[:n], z[n:]


def tangent(
    settings: Settings,
    dyn: Dynamics,
    ts: np.ndarray,
    ys: np.ndarray,
    trajectory: Trajectory | None,
    dy0: np.ndarray,
    dtheta: np.ndarray,
    dts: np.ndarray,
) -> np.ndarray:
    """The tangent of every output along ``(ẏ0, θ̇, ṫ)``, by the directional sensitivity
    ``v' = ∂f/∂y v + ∂f/∂θ θ̇`` integrated along the solve's dense ``trajectory`` interval
    by interval, from ``v(t_0) = ẏ0 - f(t_0, y_0) ṫ_0``; ``ẏ_i = v(t_i) + f(t_i, y_i) ṫ_i``."""
    k, n = ys.shape
    out = np.empty((k, n))
    out[0] = dy0
    if k == 1:
        return out
    assert trajectory is not None  # (there is one wherever there are two times)
    v = dy0 - dyn.f(ts[0], ys[0]) * dts[0]
    if isinstance(trajectory, (Steps, BdfSteps)):
        out[1:] = through_steps_jvp(dyn, trajectory, ts, v, dtheta)
    else:
        out[1:] = _tangent_intervals(settings, dyn, ts, trajectory, v, dtheta)
    for i in range(1, k):
        out[i] += dyn.f(ts[i], ys[i]) * dts[i]
    return out


def _tangent_intervals(
    settings: Settings,
    dyn: Dynamics,
    ts: np.ndarray,
    trajectory: Interpolant,
    v: np.ndarray,
    dtheta: np.ndarray,
) -> np.ndarray:
    """``v(t_i)`` for ``i > 0``, from ``v(t_0) = v``, interval by interval."""

    def fun(t: float, v: np.ndarray) -> np.ndarray:
        return dyn.jvp(t, trajectory(t), v, dtheta)

    def jac(t: float, v: np.ndarray) -> Any:
        return dyn.jac_y(t, trajectory(t))

    out = np.empty((len(ts) - 1, len(v)))
    for i in range(1, len(ts)):
        where = f"the tangent over [{ts[i - 1]:.8g}, {ts[i]:.8g}]"
        v = integrate(settings, where, fun, jac, (ts[i - 1], ts[i]), v)[0]
        out[i - 1] = v
    return out
