"""``OdeSolve``: ``y' = f(t, y, θ)`` by ``scipy.integrate.solve_ivp`` (BDF, Radau, LSODA, ...),
differentiable in ``y0``, ``θ`` and every output time: through the solve's steps, by the adjoint
or by forward sensitivities."""

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import scipy

import jaxbridge as jb

from .._shared._failure import IntegrationFailure, MayFail, require_finite
from .._shared._parameters import check_choice
from .._shared._scipy_version import SOLVER_STEPS, STEPS_FOLLOWED, span
from ._checks import check_positive, failure, kept_on
from ._ode import (
    METHODS,
    Dynamics,
    adjoint,
    jacobian_hook,
    solve,
    solve_with_sensitivities,
    tangent,
)
from ._ode_gradient import OdeGradient, OdeTangent, SavedOdeGradient, SavedOdeTangent
from ._steps import RECORDED
from ._trajectories import kept, nbytes

SENSITIVITIES = ("auto", "adjoint", "forward", "steps")

LOOPED_STEPS = 16
"""The most unknowns for which ``"auto"`` takes BDF's steps when each step's Jacobian is
``n`` backward calls (no ``jacobian`` hook, not ``vectorized``). Measured on a
reaction-diffusion system (``benchmarks/solvers.py``, ``looped_rows``), ``value_and_grad``
by the steps over that by the adjoint, in three runs: with one output time read, 0.67-0.93x
at 8 unknowns, 0.86-1.07x at 16, 1.10-1.27x at 20 and 24, 1.37-1.79x at 40; with five,
0.33-0.56x at all of these (the adjoint restarts at each)."""


RECHECKED_AT = 10.0
"""``check_derivatives`` computes every first derivative again at tolerances this many
times tighter (``rtol`` and ``atol`` alike): the difference is its error estimate."""

TIGHTEST_RTOL = 1e-13
"""The tightest ``rtol`` at which ``"auto"`` computes a derivative again when none of its
settings passes the check at ``rtol``: SciPy's solvers raise any below ``100 eps`` to it."""

FORWARD_SIZE = 2000
"""The largest sensitivity system (``n (n + p + 1)`` unknowns) that ``"auto"`` tries when
its first choice fails the check."""


def derivative_tolerance(rtol: float) -> float:
    """The relative accuracy ``check_derivatives`` asks of a first derivative at ``rtol``:
    ``1000 rtol``, between 1e-5 and 1e-2. Values solved to
    ``rtol`` are typically 10-1000 ``rtol`` off (vdp1000 at 1e-8: 1.7e-6)."""
    return min(max(1e3 * rtol, 1e-5), 1e-2)


_RHS_SIGNATURE = re.compile(r"^\(\),\((\w+)\),\((\w+)\)->\((\w+)\)$")


def increasing_times(raw: np.ndarray) -> np.ndarray:
    """Output times for ``jaxbridge.testing``: ``ts[0]`` in [-0.3, 0.3], then steps of
    0.25 to 0.75 (strictly increasing, whatever the raw values in [-1, 1])."""
    steps = 0.5 + 0.25 * raw[..., 1:]
    return np.concatenate([0.3 * raw[..., :1], 0.3 * raw[..., :1] + np.cumsum(steps, -1)], -1)


class OdeSolve(MayFail):
    """Solve ``dy/dt = f(t, y, θ)`` on the host with SciPy: ``ys = OdeSolve(rhs)(y0, theta, ts)``.

    ``y0`` is (n,), ``theta`` (p,) and ``ts`` (k,) strictly increasing output times, the
    first of them the initial time; ``ys`` is (k, n) with ``ys[i] = y(ts[i])`` and
    ``ys[0] = y0``. Leading axes are batch axes (one host call per ``vmap``, looping over
    the batch there). Gradients flow to ``y0``, ``theta`` and every ``ts[i]``, ``ts[0]``
    included; forward mode (``jvp``, ``jacfwd``) works too, and second derivatives
    (``jax.hessian``, ``jax.jvp`` of ``jax.grad``, ``jax.jacrev`` of ``jax.jacrev``), with
    every method and sensitivity setting.

    ``rhs`` is an ``Adapter`` with signature ``"(),(n),(p)->(n)"``: its host
    ``forward(t, y, theta)`` (float64 NumPy arrays, ``t`` 0-d) is what SciPy calls at every
    step, and its host ``backward`` (cotangents of ``t``, ``y``, ``theta``) gives the
    derivatives. It may define ``jacobian(self, t, y, theta)`` returning ``∂f/∂y`` (an (n, n)
    array or ``scipy.sparse`` matrix; LSODA densifies it) for the implicit methods' Newton
    iterations; without it they get ``∂f/∂y`` from ``n`` backward calls. If it defines a host
    ``jvp``, the forward mode of the adjoint setting uses it, and so do second derivatives.

    Second derivatives: forward over the first-order rule of the setting chosen. The
    gradient is a bridged call of its own (the same host work as before: under ``jit`` a
    gradient costs what it did; eagerly 0.15-0.25 ms more a call), and its derivative
    along a direction ``v`` of ``(y0, θ, ts)`` is the gradient of ``⟨g, J v⟩``, where
    ``J v`` comes from one more solve, of the ODE together with its directional
    sensitivity (``2n`` unknowns, ``2p`` parameters, the same method, tolerances and
    setting), and its gradient from that solve's own first-order rule
    (the steps, the adjoint or forward sensitivities): a Hessian-vector product measured
    3.8-6.0x a gradient (BDF, Robertson and a 20-state linear chain,
    ``benchmarks/second_order_ode.py``), a Hessian in ``p`` parameters about ``p`` of them.
    They are as accurate as the first derivatives (within 10x, against closed forms). That
    solve's rhs needs how the rhs's ``backward`` moves along a direction of ``(t, y, θ)``:
    from its host method ``backward_jvp(self, res, g, tangents)`` if it defines one
    (``res`` and ``g`` as ``backward`` gets them, ``tangents`` one per input, None for zero;
    it returns the derivative of each of ``backward``'s cotangents along them, ``g`` held,
    None for zero), else from central differences of ``backward`` at two steps extrapolated
    (4 calls, about 1e-12 relative on a smooth rhs). Second derivatives in ``ts`` use the
    rhs's ``∂f/∂t`` (``backward``'s first cotangent: None reads as 0, right for an
    autonomous rhs only). Forward over forward (``jacfwd`` of ``jacfwd``) is not
    available (the forward mode is a host rule), and third derivatives are refused (a
    ``TypeError``).

    Parameters:
        method: any of ``solve_ivp``'s: ``"BDF"`` (the default), ``"Radau"``, ``"LSODA"``
            for stiff problems; ``"RK45"``, ``"RK23"``, ``"DOP853"``.
        rtol, atol: ``solve_ivp``'s tolerances, for the solve and for every derivative
            integration alike (the adjoint and sensitivity variables included; the
            adjoint's ``θ`` quadrature follows the adjoint's steps without error control of
            its own, as in CVODES, unless ``control_quadrature``). Results and derivatives
            are as accurate as these make them, not to rounding. Measured on Robertson's
            problem over [0, 40] at ``rtol=1e-6``, ``atol=1e-10``, the largest relative
            error of the gradient in ``θ`` against a tight reference: BDF 2e-4, LSODA 2e-4,
            Radau 1e-6 by the adjoint; 3e-5, 3e-5, 1e-8 with ``control_quadrature``; 3e-6,
            1e-6, 1e-8 by forward sensitivities (in ``y0``, 4e-6, 4e-6, 8e-8 by the
            adjoint). Tighten
            ``atol`` for components that become tiny but matter relatively (``y' = -40 y``
            to t = 1 needs ``atol`` below ``exp(-40)``).
        max_step: ``solve_ivp``'s largest step (``inf``: no limit).
        max_evaluations: the most evaluations of the derivative one integration may make
            before it stops with an error. SciPy's solvers have no step limit of their own,
            and LSODA can creep on in minute steps, or stall, for ever.
        control_quadrature: ``True`` puts the adjoint's ``θ`` quadrature under the error
            control (``rtol``, ``atol``) with ``λ``: the ``θ`` gradient is then 7-100 times
            more accurate (see ``rtol``), for 10-45% more time in the backward (measured).
            Off by default, as in CVODES: held to ``atol`` from 0, at tight tolerances it
            can make BDF's Newton iterations fail on rounding alone.
        sensitivity: ``"auto"`` (the default): ``"steps"`` for RK45, and for BDF where a
            step's Jacobian is cheap: the rhs has a ``jacobian`` hook, is ``vectorized``
            (one batched backward call), or has at most 16 unknowns (``n`` backward calls).
            There the steps were measured more accurate than the adjoint in every case
            below, and faster; the more output times the loss reads, the larger the gain,
            as the adjoint restarts at each (``examples/stiff_kinetics.py``,
            BDF on Robertson's problem at 31 output times: 0.17 s a gradient against the
            adjoint's 1.6 s, and BFGS converged in 18 gradients where the adjoint's,
            inconsistent with the computed loss at the tolerance, ended in a line-search
            failure after 61). ``"adjoint"`` otherwise: for BDF with a larger looped rhs
            (with one output time read, the steps took 1.1-1.3x the adjoint's time on 24
            unknowns and 1.4-1.8x on 40; with five read, 0.5-0.56x on 40: a loss that reads
            many output times may ask for ``"steps"``); Radau's and RK23's steps were less
            accurate in some cases; LSODA and DOP853 have none; and with
            ``control_quadrature`` (the adjoint's option), and under a SciPy whose step code
            was not compared (below). ``sensitivity_for(n)`` says which.
            ``"adjoint"``: a call that is differentiated solves
            with dense output and keeps the interpolant on the host; the backward integrates
            the adjoint ``λ' = -∂f/∂yᵀ λ`` (with the quadrature of ``λᵀ ∂f/∂θ``) backwards
            along it with the same method, and the forward mode the directional sensitivity
            forwards. ``y`` is never integrated backwards in time (unstable, and wrong, on
            dissipative problems). The backward's cost is one integration of size ``n + p``,
            whatever the number of parameters, each evaluation calling the rhs's
            ``forward`` and ``backward``. Up to 64 MiB of interpolants (or steps, below) are
            kept, the oldest dropped first; a rule whose interpolant is gone (or a pullback
            called again later) solves again by the same call, so the derivatives do not
            depend on it.
            The adjoint restarts at each output time from a first step of its own choosing:
            LSODA can fail, or creep, at such a restart into a very stiff regime where the
            forward's single solve went through; BDF and Radau restart reliably.
            ``"forward"``: a call that is differentiated also integrates the sensitivities
            ``∂y/∂(y0, θ)`` with ``y`` (a system of size ``n (n + p + 1)``, so for small
            ``n·p``) and saves them at the output times, ``(k, n, n + p)``; the backward
            and the forward mode are then products with them, no further solves, and exact
            transposes of each other. A call that is not differentiated solves for ``y``
            alone, and the outputs are that solve's in both cases. Measured (``value_and_grad``
            against the value, Robertson): BDF 3.0-3.3x by the adjoint, 5.3-6.0x by
            forward sensitivities (Radau 4.0-4.1x and 8.2-8.6x): the forward sensitivities
            are the accurate choice (above), the steps (below) the fast one.
            ``"steps"`` (RK23, RK45, Radau and BDF): a call that is differentiated keeps the
            steps its solve took, and the backward and the forward mode differentiate exactly
            those, the step sizes (and BDF's orders) held as the solve chose them
            (discretise-then-optimise): per step one product with the rhs's derivatives
            per stage (Radau: also its three stages' Jacobians, from the ``jacobian`` hook
            or ``n`` backward calls each, and a linear system of ``3n`` unknowns; BDF: one
            Jacobian, one product and a system of ``n`` unknowns), no integration of their
            own. The gradient is the exact derivative of the computed outputs (BDF's: of
            its corrector solved exactly), the forward mode its exact transpose, and its
            error against the true gradient the solve's own size. Measured
            (``value_and_grad`` against the value): RK45 on Lotka-Volterra at ``rtol=1e-8``
            2.6-2.9x (the adjoint 4.2-5.1x), Radau on Robertson 2.0-2.1x (the adjoint
            4.0-4.1x), BDF on Robertson 1.4-1.6x (the adjoint 3.0-3.3x). The error against
            tight references, median of 6 losses: RK45 at ``rtol`` 1e-6, 1e-8, 1e-10:
            1.1e-5, 4.5e-8, 3.6e-10 (the adjoint 3.2e-5, 1.4e-7, 6.8e-10); RK23 7.7e-5,
            7.8e-7, 8.0e-9 (4.8e-5, 5.1e-7, 5.0e-9); Radau on Robertson in ``θ`` at 1e-6
            and 1e-8: 7.0e-8 and 1.9e-10 (the adjoint's own error control gives 2.9e-8
            and 1.4e-10); BDF on Robertson (four output times, ``atol = 1e-4 rtol``) in ``θ``
            at 1e-6 and 1e-8: 2.2e-6 and 5.0e-8 (the adjoint 2.9e-5 and 3.2e-7, forward
            sensitivities 7.0e-7 and 1.7e-8), in ``y0`` 5.7e-10 and 1.8e-11 (2.5e-9 and
            3.2e-11). For BDF it is the faster and the more accurate choice where the rhs
            has a ``jacobian`` hook: on a reaction-diffusion system of 40 unknowns (rtol
            1e-6) 1.95-2.02x against the adjoint's 4.9-5.5x, the ``θ`` gradient 3.0e-7 off
            against 5.0e-5. Without the hook each step's Jacobian is ``n`` backward calls
            (one batched call for a ``vectorized`` rhs): 8.4-8.8x there, the adjoint
            5.4-6.1x. LSODA and DOP853 have no steps of this kind: a ``ValueError``. It
            reads SciPy's private step code, the same in SciPy 1.11 to 1.18; under any
            other SciPy it is refused (a ``ValueError``) rather than trusted.
        check_derivatives: ``True`` (the default) checks every first derivative (the
            backward, and the forward mode) a posteriori: it is computed again, by the same
            method and setting, at ``rtol`` and ``atol`` ten times tighter, and refused (an
            ``IntegrationFailure`` naming ``OdeSolve``, the setting and how far it moved;
            NaN under ``on_failure="nan"``) where twice that move exceeds
            ``derivative_tolerance(rtol)`` (``1000 rtol``, between 1e-5 and 1e-2, relative
            to the largest entry; the output times' cotangents ``f(t_i, y_i)`` are left
            out). Under ``"auto"`` a setting that fails gives way to the steps, forward
            sensitivities and the adjoint in turn, the first that passes; if none does,
            each setting, the one that moved least first, is computed again at tolerances
            ten times tighter each time (down to ``rtol=TIGHTEST_RTOL``) until two in a row
            agree, and the looser of the two is returned: error control of the derivative
            itself (a setting whose solve fails on the way gives way to the next; the error
            names every setting and step if none settles). Otherwise what is
            returned is the derivative at the asked tolerances (the steps' still the exact
            derivative of the outputs). It costs a second solve and derivative at the
            tighter tolerances: 2-4x a gradient, and more where ``"auto"`` tightens
            (vdp1000 by Radau at ``rtol=1e-8``: 37 s, 4.2e-7 off). Why
            (issue #65): on van der Pol's oscillator at μ = 970 (vdp1000, 20 observations
            over [0, 3000], ``rtol=1e-8``) the gradient in ``log μ`` passes two relaxation
            jumps, and was off by 15% through BDF's steps, 23% by its adjoint, 10% by its
            forward sensitivities (error-controlled: BDF's error estimate does not see the
            sensitivities' growth through a jump), 1.5-4.4% by LSODA, 1.0e-4 by Radau's
            adjoint, 1.1e-5 through its steps, 3.8e-5 by forward sensitivities; every one
            of these is refused, and Radau's steps at ``rtol=1e-9`` pass (within 1e-5 of
            SciPy's own central differences), as does Radau's ``"auto"`` at ``1e-8``, which
            tightens. BDF's ``"auto"`` there is refused: SciPy's BDF fails on vdp1000 at
            ``rtol=1e-10`` ("required step size is less than spacing between numbers").
            ``False``: unchecked, as before.
        on_failure: see ``MayFail``. Fails on a solve that does not reach the last time
            (SciPy's status and message), one that overflows, and non-finite ``y0``,
            ``theta`` or ``ts``, in the forward or a derivative's integrations; never a
            partial result.

    ``ts`` that are not strictly increasing are always an error. Every integration runs in
    the time of its own interval (from 0), so stiff transients late in time (t = 1e5) are
    not limited by the spacing of floating-point numbers there. Everything runs in float64
    on the host; float32 inputs give float32 results.
    """

    rhs: jb.Adapter
    method: str = "BDF"
    rtol: float = 1e-8
    atol: float = 1e-10
    max_step: float = np.inf
    max_evaluations: int = 100_000
    control_quadrature: bool = False
    sensitivity: str = "auto"
    check_derivatives: bool = True

    signature = "(n),(p),(k)->(k,n)"
    domains = {"ts": increasing_times}
    # the implicit methods' steps are a loop of small linear algebra (LU factors and solves,
    # products with the Jacobian) that woke OpenBLAS's threads to busy-wait (see
    # Adapter.blas_threads); the rhs's host code, run in these calls, is held too. BDF on a
    # 1-D heat equation with a cubic sink, value_and_grad in theta, 2 cores: one thread took
    # 0.45x the time of two at n = 100 and 0.33x at n = 400 (quiet), 0.74x and 0.23x beside
    # a busy process
    blas_threads = 1

    def __post_init__(self) -> None:
        if not isinstance(self.rhs, jb.Adapter):
            raise TypeError(
                f"OdeSolve: parameter 'rhs' must be a jaxbridge.Adapter with signature "
                f"'(),(n),(p)->(n)' (forward(t, y, theta)); got {type(self.rhs).__name__}."
            )
        match = _RHS_SIGNATURE.match(self.rhs.signature.replace(" ", ""))
        if match is None or match[1] != match[3]:
            raise ValueError(
                f"OdeSolve: parameter 'rhs' ({type(self.rhs).__name__}) must have signature "
                f"'(),(n),(p)->(n)' (time, state, parameters -> derivative of the state); "
                f"got {self.rhs.signature!r}."
            )
        check_choice("OdeSolve", "method", self.method, METHODS)
        check_choice("OdeSolve", "sensitivity", self.sensitivity, SENSITIVITIES)
        if self.sensitivity == "steps" and self.method not in RECORDED:
            raise ValueError(
                f"OdeSolve: sensitivity='steps' differentiates the steps of a solve: parameter "
                f"'method' must be one of {sorted(RECORDED)}; got {self.method!r} (its "
                "derivatives: sensitivity='adjoint' or 'forward')."
            )
        if self.sensitivity == "steps" and not STEPS_FOLLOWED:
            raise ValueError(
                f"OdeSolve: sensitivity='steps' reads SciPy's own step code, checked against "
                f"{span(SOLVER_STEPS)}; this is SciPy {scipy.__version__}, whose steps it "
                "might misread: sensitivity='adjoint' or 'forward' instead."
            )
        check_positive("OdeSolve", "rtol", self.rtol)
        check_positive("OdeSolve", "atol", self.atol, allow_zero=True)
        check_positive("OdeSolve", "max_step", self.max_step)
        if not (isinstance(self.max_evaluations, int) and self.max_evaluations >= 1):
            raise ValueError(
                "OdeSolve: parameter 'max_evaluations' must be a positive integer; got "
                f"{self.max_evaluations!r}."
            )
        if not isinstance(self.check_derivatives, bool):
            raise TypeError(
                "OdeSolve: parameter 'check_derivatives' must be True or False; got "
                f"{self.check_derivatives!r}."
            )
        if not isinstance(self.control_quadrature, bool):
            raise TypeError(
                "OdeSolve: parameter 'control_quadrature' must be True or False; got "
                f"{self.control_quadrature!r}."
            )

    def sensitivity_for(self, n: int) -> str:
        """The way derivatives are taken of a system of ``n`` unknowns: ``sensitivity``, or
        the one ``"auto"`` chooses."""
        if self.sensitivity != "auto":
            return self.sensitivity
        # where the steps were measured more accurate than the adjoint, and faster: BDF's
        # steps need a Jacobian each, from the hook, one batched call (vectorized), or n
        # backward calls (then up to LOOPED_STEPS unknowns)
        cheap = jacobian_hook(self.rhs) is not None or self.rhs.vectorized or n <= LOOPED_STEPS
        steps = self.method == "RK45" or (self.method == "BDF" and cheap)
        return "steps" if steps and STEPS_FOLLOWED and not self.control_quadrature else "adjoint"

    def output_specs(self, y0, theta, ts):
        return jax.ShapeDtypeStruct((*ts.shape, *y0.shape), jb.result_dtype(y0, theta, ts))

    def residual_specs(self, y0, theta, ts):
        n, p = y0.shape[0], theta.shape[0]
        if self.sensitivity_for(n) != "forward":
            return ()
        shape = (*ts.shape, n, n + p)
        return jax.ShapeDtypeStruct(shape, jb.result_dtype(y0, theta, ts))

    def forward(self, y0, theta, ts, *, residuals=True):
        dtype = jb.result_dtype(y0, theta, ts)
        y0, theta, ts = _checked_inputs(y0, theta, ts)
        k, n, p = len(ts), len(y0), len(theta)
        # integrated, or kept, only where a rule will read them
        forward_sensitivity = self.sensitivity_for(n) == "forward" and residuals
        keep = not forward_sensitivity and residuals
        if k == 0:
            empty = np.zeros((0, n), dtype), np.zeros((0, n, n + p), dtype)
            return empty if forward_sensitivity else empty[0]
        try:
            for name, value in (("y0", y0), ("theta", theta), ("ts", ts)):
                require_finite(f"argument '{name}'", value, failure)
            dyn = Dynamics(self.rhs, theta, n)
            ys, trajectory = solve(self, dyn, y0, ts, dense=keep)
            if trajectory is not None:
                kept.put(self, (y0, theta, ts), trajectory, nbytes(trajectory))
        except IntegrationFailure as error:
            ys = self.nan_on_failure(error, (k, n))
        if not forward_sensitivity:
            return ys.astype(dtype)
        # The outputs are the plain solve's, whether the call is differentiated or not (the
        # sensitivities' error control takes other steps); the sensitivities come from
        # their own solve, done only when a rule will read them.
        if np.isfinite(ys).all():
            try:
                sens = solve_with_sensitivities(self, dyn, y0, ts)[1]
            except IntegrationFailure as error:
                sens = self.nan_on_failure(error, (k, n, n + p))
        else:
            sens = np.full((k, n, n + p), np.nan)
        return ys.astype(dtype), np.asarray(sens, dtype)

    def backward(self, res, g):
        y0, theta, ts, ys, *saved = res
        args = (y0, theta, ts)
        g, ts64, ys64 = (np.asarray(a, np.float64) for a in (g, ts, ys))
        # a failed forward (NaN results) or a NaN cotangent: NaN gradients, no solves
        if not ys64.size:  # no output times or no unknowns: nothing depends on the arguments
            cts = tuple(np.zeros(a.shape) for a in args)
        elif np.isfinite(ys64).all() and np.isfinite(g).all():
            dyn = Dynamics(self.rhs, np.asarray(theta, np.float64), ys.shape[-1])
            try:
                if saved:
                    sens = np.asarray(saved[0], np.float64)
                    cts = _sensitivity_vjp(dyn, ts64, ys64, sens, g)
                else:
                    trajectory = self._trajectory(dyn, y0, ts64)
                    cts = adjoint(self, dyn, ts64, ys64, trajectory, g)
                if self.check_derivatives:
                    cts = self._checked(
                        res,
                        cts,
                        lambda solver, res: solver.backward(res, g),
                        np.abs(g).sum(),
                        lambda result, res: result[:2],  # (ts's: below)
                    )
            except IntegrationFailure as error:
                cts = self.nan_on_failure(error, *(a.shape for a in args))
        else:
            cts = _nans(args)
        return tuple(np.asarray(c, jb.result_dtype(a)) for c, a in zip(cts, args))

    def pullback(self, res, g):
        # the host backward as a bridged call of its own (the same host work), whose rules
        # give the second derivatives (``_ode_gradient``)
        kind = SavedOdeGradient if len(res) > 4 else OdeGradient
        gradient = kept_on(self, f"_{kind.__name__}", lambda: kind(self))
        cts = gradient(*res, g)
        return tuple(c if jnp.issubdtype(a.dtype, jnp.floating) else None for c, a in zip(cts, res))

    def pushforward(self, res, tangents):
        # the host jvp as a bridged call of its own (the same host work), whose rules say
        # by name that forward over forward is not available (``_ode_gradient``)
        if all(t is None for t in tangents):
            return None
        kind = SavedOdeTangent if len(res) > 4 else OdeTangent
        rule = kept_on(self, f"_{kind.__name__}", lambda: kind(self))
        filled = (
            jnp.zeros(a.shape, jb.result_dtype(a)) if t is None else t
            for t, a in zip(tangents, res[:3])
        )
        return rule(*res, *filled)

    def jvp(self, res, tangents):
        y0, theta, ts, ys, *saved = res
        if all(t is None for t in tangents):
            return None
        dy0, dtheta, dts = (
            np.zeros(a.shape) if t is None else np.asarray(t, np.float64)
            for t, a in zip(tangents, (y0, theta, ts))
        )
        ts64, ys64 = np.asarray(ts, np.float64), np.asarray(ys, np.float64)
        if not ys64.size:  # (no output times or no unknowns)
            return np.zeros(ys.shape, ys.dtype)
        if not (np.isfinite(ys64).all() and np.isfinite(np.concatenate([dy0, dtheta, dts])).all()):
            return np.full(ys.shape, np.nan, ys.dtype)
        dyn = Dynamics(self.rhs, np.asarray(theta, np.float64), ys.shape[-1])
        try:
            if saved:
                sens = np.asarray(saved[0], np.float64)
                out = _sensitivity_jvp(dyn, ts64, ys64, sens, dy0, dtheta, dts)
            else:
                trajectory = self._trajectory(dyn, y0, ts64)
                out = tangent(self, dyn, ts64, ys64, trajectory, dy0, dtheta, dts)
            if self.check_derivatives:
                scale = np.abs(np.concatenate([dy0, dtheta, dts])).max()
                directions = (dy0, dtheta, dts)
                (out,) = self._checked(
                    res,
                    (out,),
                    lambda solver, res: (solver.jvp(res, directions),),
                    scale,
                    lambda result, res: (_without_times(dyn, res, result[0], dts),),
                )
        except IntegrationFailure as error:
            out = self.nan_on_failure(error, ys.shape)
        return out.astype(ys.dtype)

    def _checked(self, own, first, rule, scale, compared):
        """``first`` (a derivative's arrays by this solver's setting), if computing it again
        by ``rule`` at tolerances ``RECHECKED_AT`` times tighter moves it by less than half
        of ``derivative_tolerance`` (relative to its largest entry, per array; the error
        is estimated as twice the move, assuming it at least halves): else, under
        ``"auto"``, the first other setting's that passes; else an ``IntegrationFailure``
        that names the settings and what they moved by."""
        args = own[:3]
        y0, theta, ts = (np.asarray(a, np.float64) for a in args)
        n, p = len(y0), len(theta)
        chosen = self.sensitivity_for(n)
        candidates = [chosen]
        if self.sensitivity == "auto":
            steps = self.method in RECORDED and STEPS_FOLLOWED
            others = ("steps",) if steps else ()
            others += ("forward",) if n * (n + p + 1) <= FORWARD_SIZE else ()
            candidates += [s for s in (*others, "adjoint") if s != chosen]
        wanted = derivative_tolerance(self.rtol)
        floor = 100 * self.atol * scale  # where the derivatives are all below atol's level

        def move(a, a_res, b, b_res):
            return max(
                float(np.max(np.abs(u - v), initial=0.0))
                / max(float(np.max(np.abs(v), initial=0.0)), floor, np.finfo(float).tiny)
                for u, v in zip(compared(a, a_res), compared(b, b_res))
            )

        def finite(result):
            return all(np.isfinite(a).all() for a in result)

        moved, tried = [], []
        for setting in candidates:
            try:
                result, res = (
                    (first, own) if setting == chosen else self._by(setting, 1.0, args, rule)
                )
                again, again_res = self._by(setting, RECHECKED_AT, args, rule)
            except IntegrationFailure as error:
                moved.append(f"sensitivity={setting!r} could not be recomputed ({error})")
                continue
            estimate = move(result, res, again, again_res)
            if 2 * estimate <= wanted and finite(result):
                return result
            moved.append(f"sensitivity={setting!r} moved by {estimate:.1e}")
            if np.isfinite(estimate):  # (a NaN derivative is not worth tightening)
                tried.append((estimate, setting, again, again_res))
        if self.sensitivity == "auto":
            # error control of the derivatives themselves: each setting, the one that moved
            # least first, at tolerances tighter by RECHECKED_AT each time until two in a row
            # agree; one whose solve fails at a tighter tolerance gives way to the next
            for _, setting, result, res in sorted(tried, key=lambda t: t[0]):
                tighter = RECHECKED_AT
                while self.rtol / (tighter * RECHECKED_AT) >= TIGHTEST_RTOL * (1 - 1e-9):
                    tighter *= RECHECKED_AT
                    try:
                        again, again_res = self._by(setting, tighter, args, rule)
                    except IntegrationFailure as error:
                        moved.append(
                            f"{setting!r} at rtol={self.rtol / tighter:g} failed ({error})"
                        )
                        break
                    estimate = move(result, res, again, again_res)
                    if 2 * estimate <= wanted and finite(result):
                        return result
                    moved.append(
                        f"{setting!r} from rtol={self.rtol * RECHECKED_AT / tighter:g} to "
                        f"{self.rtol / tighter:g} moved by {estimate:.1e}"
                    )
                    result, res = again, again_res
        raise failure(
            f"OdeSolve: the derivatives (method={self.method!r}, sensitivity="
            f"{self.sensitivity!r}, rtol={self.rtol:g}, atol={self.atol:g}) are not accurate "
            f"to {wanted:.0e} (relative) on this problem: computed again at tolerances "
            f"{RECHECKED_AT:g} times tighter, {'; '.join(moved)}. Tighten rtol and atol, or "
            "choose another method or sensitivity"
            + ("" if self.sensitivity == "auto" else " ('auto' tightens them until they settle)")
            + " (check_derivatives=False returns them unchecked)"
        )

    def _by(self, setting, tighter, args, rule):
        """``rule(solver, res)`` for this solve by ``setting`` at tolerances ``tighter``
        times tighter, unchecked: its own forward, then the rule."""
        solver = dataclasses.replace(
            self,
            sensitivity=setting,
            rtol=self.rtol / tighter,
            atol=self.atol / tighter,
            check_derivatives=False,
            on_failure="raise",
        )
        y0, theta, ts = (np.asarray(a, np.float64) for a in args)
        out = solver.forward(y0, theta, ts)
        ys, saved = (out[0], out[1:]) if isinstance(out, tuple) else (out, ())
        res = (y0, theta, ts, ys, *saved)
        return tuple(np.asarray(a, np.float64) for a in rule(solver, res)), res

    def _trajectory(self, dyn, y0, ts):
        """The dense solution the differentiated forward kept, or the same solve again."""
        inputs = (np.asarray(y0, np.float64), dyn.theta, ts)
        trajectory = kept.take(self, inputs)
        if trajectory is None:
            trajectory = solve(self, dyn, inputs[0], ts, dense=True)[1]
        return trajectory


def _nans(arrays):
    return tuple(np.full(a.shape, np.nan) for a in arrays)


def _sensitivity_vjp(dyn, ts, ys, sens, g):
    """The gradient from the saved sensitivities ``S_i = ∂y_i/∂(y0, θ)``."""
    n = ys.shape[1]
    fs = np.stack([dyn.f(t, y) for t, y in zip(ts, ys)])
    later = np.einsum("kn,knm->m", g[1:], sens[1:])  # Σ_{i≥1} S_iᵀ g_i
    ybar, thetabar = later[:n] + g[0], later[n:]  # S_0 = [I, 0]: y_0 is y0 itself
    tbar = np.einsum("kn,kn->k", g, fs)
    # moving t0 moves the trajectory after it, ∂y_i/∂t0 = -S_y,i f_0, but not y_0 = y0:
    # summed over i ≥ 1 alone, so that it is exactly 0 when only y_0 has a cotangent
    tbar[0] = -later[:n] @ fs[0]
    return ybar, thetabar, tbar


def _sensitivity_jvp(dyn, ts, ys, sens, dy0, dtheta, dts):
    """The tangent from the saved sensitivities: ``S_y,i (ẏ0 - f_0 ṫ0) + S_θ,i θ̇ + f_i ṫ_i``."""
    fs = np.stack([dyn.f(t, y) for t, y in zip(ts, ys)])
    direction = np.concatenate([dy0 - fs[0] * dts[0], dtheta])
    out = np.einsum("knm,m->kn", sens, direction) + fs * dts[:, None]
    out[0] = dy0  # y_0 is y0 itself, exactly (the sum above cancels only to rounding)
    return out


def _without_times(dyn, res, out, dts):
    """A tangent less its terms ``f(t_i, y_i) ṫ_i``: ``y'(t_i)`` at the computed ``y_i``,
    which on a stiff problem amplifies ``y_i``'s error by ``∂f/∂y`` (Robertson's at ``rtol``
    1e-6 by 1e-2), whatever the derivatives' integrations do: left out of the check."""
    if not dts.any():
        return out
    _, _, ts, ys, *_ = res
    fs = np.stack([dyn.f(t, y) for t, y in zip(ts, np.asarray(ys, np.float64))])
    return out - fs * dts[:, None]


def _checked_inputs(y0, theta, ts):
    # (non-finite times are a failed solve, which on_failure="nan" turns into NaN: checked
    # with y0 and theta)
    if np.isfinite(ts).all() and not np.all(np.diff(np.asarray(ts, np.float64)) > 0):
        bad = int(np.flatnonzero(~(np.diff(np.asarray(ts, np.float64)) > 0))[0])
        raise ValueError(
            f"OdeSolve: argument 'ts' must be strictly increasing (the first entry is the "
            f"initial time); ts[{bad}] = {ts[bad]!r} is followed by ts[{bad + 1}] = "
            f"{ts[bad + 1]!r}."
        )
    # copies: the solution kept for the backward holds on to y0 (SciPy's first step does
    # not copy it), and the forward's inputs may be XLA's buffers, reused once it returns
    return (np.array(a, np.float64) for a in (y0, theta, ts))
