"""What the optimize adapters share: failures, checking and refining SciPy's answer, and the
implicit-function-theorem rules.

Every solver reduces its optimality conditions to a square system ``F(z, q) = 0`` in the
unknowns ``z`` (``x``, and for constraints their multipliers) and the parameters ``q``
(``theta``, and for bounds the bounds). SciPy finds ``z``; ``settle`` checks it, refines it
by Newton steps on ``F`` and checks it again; the rules then need only ``J_z = ∂F/∂z`` and
``J_q = ∂F/∂q`` at the solution, which the forward saves as residuals:

    reverse:  λ = J_zᵀ⁻¹ ḡ,  q̄ = -J_qᵀ λ        forward:  ż = -J_z⁻¹ J_q q̇

and the start ``x0`` gets an exact zero. The rules are bridged calls whose own rules are
the second order (``_second_order``), which also reads the solution ``z`` and its active
set, saved after ``J_z`` and ``J_q``. A call whose result is not differentiated needs no
``J_q`` and, unless its checks are close, no accurate ``J_z`` (``SCREEN``). Host code,
NumPy and SciPy, except ``ImplicitSolver``'s rules (JAX calling ``_second_order``'s
helpers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import jax
import numpy as np
import scipy.linalg

import jaxbridge as jb

from .._shared._failure import MayFail, OptimizeError
from .._shared._parameters import check_choice
from ._differences import ROUGH_STEP
from ._functions import user_domains
from ._second_order import SecondOrder, rules_in_jax

EPS = float(np.finfo(np.float64).eps)

LOOSE = 1e-4
"""SciPy's own answer must satisfy the optimality conditions to ``LOOSE * scale`` (max norm),
whatever SciPy reports; otherwise the solve failed, and its last iterate is never returned.
Loose enough for the interior-point answers of trust-constr, which stop a few 1e-6 inside
active constraints; refinement then has to reach ``TIGHT``."""

NEAR = 1e-4
"""A bound or inequality within ``NEAR`` (relative to ``1 + |x_i|`` for bounds) of its limit
at SciPy's answer is a candidate for the active set; its multiplier decides."""

TIGHT = 1e-10
"""After Newton refinement the optimality conditions must hold to ``TIGHT * scale``."""

SINGULAR = 1e-12
"""A system matrix ``J_z`` whose reciprocal condition number (1-norm) is below this has no
isolated solution to differentiate: a singular Jacobian, a non-strict minimum, dependent
active constraints."""

SETTLED = 1e-2
"""How much the optimality conditions' Jacobian ``J_z`` may change, relative to itself
(``‖J_z⁻¹ ΔJ_z‖``), over the solution's own error (the Newton step ``δ = J_z⁻¹ F`` from
it) before the solution's derivative ``-J_z⁻¹ J_q`` is refused: about the relative error
that error leaves in the derivative. At an isolated solution it is of the size of ``δ``
(below 1e-6 on the test problems, mostly the rough differences' own error); at a
degenerate one it is of order one, ``1 - (1 - 1/k)^(k - 1)`` at a root of ``F`` of
multiplicity ``k`` (1/2, then 5/9 for the triple root of the gradient at a minimum whose
Hessian vanishes), where ``|F|`` is small though the solution is far off (``4 (x - 2)³``
is 1e-11 at ``x = 2 + 1.4e-4``) and the solution has no derivative. ``SINGULAR`` cannot
tell: the reciprocal condition number of a 1 x 1 ``J_z`` is 1 however small it is.
``root_scalar`` (``EquationSlopes``) asks the same of ``f'``, from ``f''``."""

MULTIPLIER = float(np.sqrt(EPS))
"""A bound or inequality at its limit whose multiplier is below ``MULTIPLIER`` times the size
of the terms it sums (``gradient_terms``) is degenerate (weakly active): zero to rounding, the
solution map has a kink there, and no gradient. Each multiplier on its own scale, not against
the largest gradient entry: a bound held by 0.1 beside one held by 1e9, or an objective or a
constraint in other units, is no kink. (At SciPy's answer, not at ``x0``: the verdict must not
depend on where the solver started.)"""


class Objective(Protocol):
    """A scalar objective at fixed parameters ``theta``, as ``HostFunction`` is."""

    theta: np.ndarray

    def gradient_x(self, x: np.ndarray, /) -> np.ndarray: ...

    def second(self, x: np.ndarray, /, rough: bool = False) -> tuple[np.ndarray, np.ndarray]: ...


def gradient_terms(f: Objective, x: np.ndarray) -> np.ndarray:
    """The size of the terms each entry of the objective's gradient sums at ``x``, ``|∇f| +
    |∇²f| |x| + |∂²f/∂x∂θ| |θ|`` (rough second derivatives: a size, not a value): what
    moves it under relative changes of ``x`` and ``θ``, so its rounding is far below
    ``MULTIPLIER`` times this, whatever the other entries' scales."""
    hxx, hxt = f.second(x, rough=True)
    return np.abs(f.gradient_x(x)) + np.abs(hxx) @ np.abs(x) + np.abs(hxt) @ np.abs(f.theta)


ROUNDS = 3
"""How many times the active set (of bounds or inequalities) may be corrected after
refinement: one judged active whose multiplier turns the wrong way is released, one judged
inactive that ends up violated is added, and the refinement repeats."""

SCREEN = 1e-6
"""A call whose result is not differentiated checks ``J_z`` from one difference per
unknown (``System.rough_jacobian``, about 1e-8 relative) against thresholds a million
times stricter than ``SINGULAR`` (reciprocal condition number, smallest eigenvalue
relative to the largest), and computes the accurate ``J_z`` only where the rough one falls
short: its verdict is then the accurate one's unless the rough ``J_z`` is off by about
1e-6 of its norm. The accurate derivatives cost 4 to 24 evaluations per unknown, the rough
1."""

REFINEMENTS = 4
"""The most Newton steps taken on SciPy's answer (each must reduce ``|F|``)."""


failure = OptimizeError.because


def outcome(routine: str, method: str, result: Any) -> str:
    """SciPy's verdict in words: the routine, the method, its status and its message."""
    status = getattr(result, "status", None)
    message = str(getattr(result, "message", "")).strip()
    verdict = "reported success" if result.success else "reported failure"
    return f"scipy.optimize.{routine}(method={method!r}) {verdict} (status {status}: {message!r})"


class System(Protocol):
    def residual(self, z: np.ndarray, /) -> np.ndarray: ...

    def rough_jacobian(self, z: np.ndarray, /) -> np.ndarray:
        """``J_z`` at ``z``, good enough for Newton steps (second derivatives by one
        difference: see ``HostFunction.second``); no ``J_q``, which only the solution's
        linearization needs."""
        ...

    def linearize(self, z: np.ndarray, /) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(F, J_z, J_q)`` at ``z``, accurate."""
        ...


def _norm(v: np.ndarray) -> float:
    return float(np.abs(v).max()) if v.size else 0.0


def settle(
    system: System,
    z: np.ndarray,
    scale: float,
    verdict: str,
    success: bool,
    start: bool = True,
    derivatives: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Check SciPy's answer ``z``, refine it by Newton steps and check it again.

    Returns ``(z, F, J_z, J_q)`` at the refined solution. Raises ``OptimizeError`` with
    SciPy's ``verdict`` if ``z`` misses the optimality conditions by more than ``LOOSE *
    scale`` (even if SciPy reported success), if refinement does not reach ``TIGHT *
    scale``, if ``J_z`` is singular there, or, where the solution is differentiated
    (``derivatives``), if ``J_z`` changes by more than ``SETTLED`` of itself over the
    solution's own error (a degenerate solution: ``_require_settled``). ``start=False``
    skips the first check (for a point already refined under another active set). Without
    ``derivatives`` (a call whose result is not differentiated), ``J_q`` is None and
    ``J_z`` the rough one wherever it passes ``SCREEN`` (see ``require_strict_minimum``);
    ``z`` is the same either way.

    The first steps reuse one rough ``J_z`` (the chord method: from SciPy's answer they
    converge as fast as Newton's, to rounding), so the accurate derivatives, the costly
    part, are computed once, where the refinement ends; Newton steps with accurate ones
    follow only where the rough ones did not reach ``TIGHT * scale``.
    """
    f = system.residual(z)
    size = _norm(f)
    if start and not size <= LOOSE * scale:  # NaN fails too
        what = "but its answer" if success else "and its last iterate"
        raise failure(
            f"{verdict}, {what} misses the optimality conditions by {size:.2e} (max norm; "
            f"allowed {LOOSE * scale:.1e})"
        )
    answer, rough, factors = z, None, None
    if size != 0:
        rough = system.rough_jacobian(z)
        z, f, factors = _chord(system, z, f, rough)
    if not derivatives and _norm(f) <= TIGHT * scale:
        # the chord's matrix (and its factors) serve where the steps moved z by less than
        # the difference's own error (relative, about its step)
        if rough is None or _norm((z - answer) / np.maximum(1.0, np.abs(z))) > ROUGH_STEP:
            rough, factors = system.rough_jacobian(z), None
        if reciprocal_condition(rough, factors) >= SCREEN:
            return z, f, rough, None
    f, jz, jq = system.linearize(z)
    if not _norm(f) <= TIGHT * scale:  # Newton proper, where the rough steps fell short
        for _ in range(REFINEMENTS):
            if _norm(f) == 0:
                break
            try:
                step = np.linalg.solve(jz, f)
            except np.linalg.LinAlgError:
                break
            candidate = z - step
            if not _norm(system.residual(candidate)) < _norm(f):
                break
            z = candidate
            f, jz, jq = system.linearize(z)
    if not _norm(f) <= TIGHT * scale:
        raise failure(
            f"{verdict}; Newton refinement of its answer stalled at optimality residual "
            f"{_norm(f):.2e} (allowed {TIGHT * scale:.1e}): the solution is singular or "
            "the derivatives are inexact"
        )
    _require_isolated(system, jz, verdict)
    if derivatives:
        _require_settled(system, z, f, jz, verdict)
    return z, f, jz, jq


def _require_isolated(system: System, jz: np.ndarray, verdict: str) -> None:
    n = getattr(system, "n", len(jz))  # (a KKT system's unknowns; its multipliers follow)
    rcond = reciprocal_condition(_constraints_in_the_objectives_units(jz, n))
    if not rcond >= SINGULAR:
        raise failure(
            f"{verdict}, but the solution is not isolated: the Jacobian of the optimality "
            f"conditions is singular there (reciprocal condition number {rcond:.1e}), so it "
            "has no derivative"
        )


def _require_settled(
    system: System, z: np.ndarray, f: np.ndarray, jz: np.ndarray, verdict: str
) -> None:
    """``J_z`` settled over the solution's own error (``SETTLED``), else ``OptimizeError``.

    ``J_z`` at ``z - δ`` from one difference per unknown (``rough_jacobian``); only where
    that moves it by more than ``SETTLED`` does the accurate one (``linearize``) decide, so
    that the rough one's own error (about 1e-8 relative, times ``J_z``'s condition number)
    never refuses an ill-conditioned but isolated solution. Where ``F`` or ``δ`` is exactly
    zero there is nothing to measure."""
    if not f.any():
        return
    lu, pivots, _ = _getrf(jz)  # (not singular: _require_isolated)
    step = _getrs(lu, pivots, f)[0]
    if not step.any():
        return
    moved = z - step
    n = getattr(system, "n", len(jz))
    change = _relative_change(jz, (lu, pivots), system.rough_jacobian(moved), n)
    if not change <= SETTLED:
        change = _relative_change(jz, (lu, pivots), system.linearize(moved)[1], n)
    if not change <= SETTLED:  # NaN too
        raise failure(
            f"{verdict}, but the solution is not isolated: the Jacobian of the optimality "
            f"conditions changes by {change:.2g} of itself over the solution's own error "
            f"(the Newton step from it, {_norm(step):.1e}; allowed {SETTLED:g}), so the "
            "solution is degenerate or multiple (a multiple root, a minimum whose Hessian "
            "vanishes: there the change is 1/2 at multiplicity 2, 5/9 at 3) and has no "
            "derivative"
        )


def _relative_change(
    jz: np.ndarray, factors: tuple[np.ndarray, np.ndarray], other: np.ndarray, n: int
) -> float:
    """``‖J_z⁻¹ (other - J_z)‖`` (``factors``: ``J_z``'s LU factors), the norm the max norm
    induces (the largest row sum), with the unknowns past the first ``n`` (a KKT system's
    multipliers) in the units of ``_constraints_in_the_objectives_units``: how much, at
    most, ``other`` in place of ``J_z`` changes the derivatives ``ż = -J_z⁻¹ J_q q̇``,
    relative to them in the max norm, whichever the direction ``q̇``. The equations' units
    cancel."""
    columns = _units(jz, n)[1]
    change = _getrs(*factors, other - jz)[0] * columns / columns[:, None]
    return float(np.abs(change).sum(axis=1).max())


def settle_active_set(
    system: System,
    z: np.ndarray,
    scale: float,
    verdict: str,
    success: bool,
    correct: Callable[[np.ndarray], np.ndarray | None],
    derivatives: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``settle`` on the system's active set, then ``correct(z)``: the start of another round
    on a corrected active set, or None when the set stands; at most ``ROUNDS`` rounds, else
    ``OptimizeError``. Returns ``(z, J_z, J_q)``."""
    for done in range(ROUNDS):
        z, _, jz, jq = settle(system, z, scale, verdict, success, done == 0, derivatives)
        corrected = correct(z)
        if corrected is None:
            return z, jz, jq
        z = corrected
    raise failure(f"{verdict}, but the active set could not be identified")


def _chord(
    system: System, z: np.ndarray, f: np.ndarray, matrix: np.ndarray
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """Up to ``REFINEMENTS`` steps ``z - matrix⁻¹ F(z)`` from ``z`` (where ``F`` is ``f``),
    while each reduces ``|F|``; ``matrix`` is factorised once. Returns the last ``(z,
    F(z))`` and the LU factors of ``matrix`` (None where none were computed)."""
    factors, size = None, _norm(f)
    for _ in range(REFINEMENTS):
        if size == 0:
            break
        if factors is None:
            if not np.isfinite(matrix).all():
                break
            lu, pivots, info = _getrf(matrix)
            if info != 0:  # exactly singular (info > 0): no step
                break
            factors = (lu, pivots)
        step = _getrs(*factors, f)[0]
        candidate = z - step
        moved = system.residual(candidate)
        moved_size = _norm(moved)
        if not moved_size < size:
            break
        z, f, size = candidate, moved, moved_size
    return z, f, factors


_getrf, _getrs, _gecon, _lange = scipy.linalg.get_lapack_funcs(
    ("getrf", "getrs", "gecon", "lange"), (np.zeros(1),)
)


def reciprocal_condition(
    a: np.ndarray, factors: tuple[np.ndarray, np.ndarray] | None = None
) -> float:
    """Of a float64 matrix, in the 1-norm; 0 for a singular or non-finite one. ``factors``:
    its LU factors (``getrf``'s) where they are at hand."""
    if a.size == 0:
        return 1.0
    if factors is not None:
        lu = factors[0]
    else:
        if not np.isfinite(a).all():
            return 0.0
        lu, _, info = _getrf(a)
        if info > 0:
            return 0.0
    return float(_gecon(lu, _lange("1", a), norm="1")[0])


def _constraints_in_the_objectives_units(jz: np.ndarray, n: int) -> np.ndarray:
    """``J_z`` with its rows and columns past the first ``n`` (a KKT system's constraints and
    multipliers) scaled by powers of 2 (exactly) to largest entries of the size of the
    first ``n``'s (the Hessian's): the same solutions, and a condition number free of the
    constraints' units. A constraint in units of 1e-6 (its multiplier in 1e6) made the
    matrix 1e-12-conditioned, refused as not isolated. The first ``n`` keep theirs: a
    Hessian flat to 1e-14 in a direction is what the solver's tolerance cannot resolve."""
    if n >= len(jz):
        return jz
    rows, columns = _units(jz, n)
    return rows[:, None] * jz * columns


def _units(jz: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The factors of ``_constraints_in_the_objectives_units``: powers of 2, one per row
    (equation) and one per column (unknown) of ``J_z``, 1 for the first ``n``."""
    rows, columns = np.ones(len(jz)), np.ones(len(jz))
    if n >= len(jz):
        return rows, columns
    top = float(np.max(np.abs(jz[:n, :n]), initial=0.0)) or 1.0
    target = np.frexp(top)[1]

    def factors(part: np.ndarray, axis: int) -> np.ndarray:
        largest = np.max(np.abs(part), axis=axis)
        exponent = np.frexp(np.where(largest > 0, largest, top))[1]
        return np.ldexp(1.0, target - exponent)

    rows[n:] = factors(jz[n:, :], 1)  # the constraints' rows
    columns[n:] = factors(rows[:, None] * jz[:, n:], 0)  # the multipliers', rows scaled
    return rows, columns


def require_strict_minimum(
    system: System,
    z: np.ndarray,
    jz: np.ndarray,
    jq: np.ndarray | None,
    what: str,
    verdict: str,
    part: Callable[[np.ndarray], np.ndarray] | None = None,
) -> None:
    """A strict local minimum at the settled ``z``: ``part(J_z)`` (symmetric; ``J_z`` itself
    by default) positive definite, else ``OptimizeError``. ``J_z`` is ``settle``'s: where it
    is the rough one (no ``J_q``), a smallest eigenvalue above ``SCREEN`` relative decides;
    below, the accurate ``J_z`` decides as in a differentiated call, its conditioning
    checked first as ``settle`` would have."""
    if part is None:
        part = _whole
    if jq is None:
        if _eigenvalues(part(jz))[0] >= SCREEN:
            return
        jz = system.linearize(z)[1]
        _require_isolated(system, jz, verdict)
    require_positive_definite(part(jz), what)


def _whole(matrix: np.ndarray) -> np.ndarray:
    return matrix


def _eigenvalues(h: np.ndarray) -> tuple[float, float, float]:
    """``(smallest / max(1, largest magnitude), smallest, largest magnitude)`` of symmetric
    ``h``; ``inf`` first for an empty one."""
    if h.size == 0:
        return np.inf, np.inf, 0.0
    eigenvalues = np.linalg.eigvalsh((h + h.T) / 2)
    smallest, largest = float(eigenvalues[0]), float(np.max(np.abs(eigenvalues)))
    return smallest / max(largest, 1.0), smallest, largest


def require_positive_definite(h: np.ndarray, what: str) -> None:
    """A strict local minimum: ``h`` (symmetric) positive definite, else ``OptimizeError``."""
    relative, smallest, largest = _eigenvalues(h)
    if not relative > SINGULAR:
        raise failure(
            f"the answer is not a strict local minimum: {what} is not positive definite there "
            f"(smallest eigenvalue {smallest:.2e}, largest magnitude {largest:.2e})"
        )


def finite_inputs(**arrays: np.ndarray) -> None:
    """Refuse NaN anywhere and infinities except in bounds (names starting ``lower``/``upper``)."""
    for name, value in arrays.items():
        bad = np.isnan(value) if name in ("lower", "upper") else ~np.isfinite(value)
        if bad.any():
            allowed = "NaN" if name in ("lower", "upper") else "NaN or inf"
            raise failure(f"argument '{name}' has entries that are {allowed}")


class ImplicitSolver(MayFail):
    """The shared plumbing of the solvers: their common parameters and checks, specs, NaN on
    failure, and the implicit rules.

    Subclasses declare the user's adapters first (the residual or objective, then any
    constraints), redeclare ``method`` with their default, set ``_methods`` and, unless it is
    ``"(n),(p)->(n)"``, ``signature`` ``"(n),(p)[,...]->(n)"`` with ``x0`` first, then the
    parameters (and ``forward`` to name them). They define ``_check`` (their own parameter
    checks), ``_solve(*float64 args, derivatives) -> (x, J_z, J_q)`` and, unless ``z`` is
    ``x`` and ``q`` is ``theta``, ``_sizes``; ``q`` concatenates the parameter arguments in
    order.
    """

    # keyword-only: after each solver's own adapters, which come first
    _: dataclasses.KW_ONLY
    method: str
    tol: float | None = None
    options: tuple = ()

    signature = "(n),(p)->(n)"
    # SciPy's iterations are small linear algebra; L-BFGS-B's wake OpenBLAS's threads,
    # which then busy-wait (see Adapter.blas_threads)
    blas_threads = 1

    _methods: ClassVar[tuple[str, ...]]
    """The values ``method`` may take."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_choice(owner, "method", self.method, self._methods)
        options = self.options
        if not (
            isinstance(options, tuple)
            and all(isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str) for o in options)
        ):
            raise TypeError(
                f"{owner}: parameter 'options' must be a tuple of (name, value) pairs, e.g. "
                f"(('maxiter', 100),), got {options!r}."
            )
        tol = self.tol
        if tol is not None and not (isinstance(tol, int | float) and tol > 0):
            raise ValueError(f"{owner}: parameter 'tol' must be a positive number or None.")
        self._check()

    def _check(self) -> None:
        """The solver's own checks of its parameters (its adapters' signatures), after the
        shared ones."""
        raise NotImplementedError

    def _solve(
        self, *args: np.ndarray, derivatives: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """``(x, J_z, J_q, state)`` from the float64 arguments; without ``derivatives``
        (nothing will differentiate the result), ``J_q`` may be None and ``J_z`` rough.
        ``state``, ``(2k,)``: the whole solution ``z`` and the active set (one flag per
        unknown, as ``_second_order`` reads it), which the second order needs."""
        raise NotImplementedError

    def _sizes(self, x0: Any, theta: Any) -> tuple[int, int]:
        """The sizes of ``z`` and ``q``, from the (specs of the) first two arguments."""
        return x0.shape[-1], theta.shape[-1]

    def _users(self) -> tuple[jb.Adapter, ...]:
        """The user's adapters (the parameters that are adapters, the residual or objective
        first), called as ``(x, theta)``."""
        values = (getattr(self, field.name) for field in dataclasses.fields(self))
        return tuple(v for v in values if isinstance(v, jb.Adapter))

    @property
    def domains(self):
        # valid inputs for jaxbridge.testing: those of the residual or objective
        return user_domains(self._users()[0], ("x0", "theta"))

    def output_specs(self, x0, theta, *bounds):
        for user in self._users():
            user.output_specs(x0, theta)  # shapes that do not fit its signature: its error
        return jax.ShapeDtypeStruct(x0.shape, jb.result_dtype(x0, theta, *bounds))

    def residual_specs(self, x0, theta, *bounds):
        k, q = self._sizes(x0, theta)
        dtype = jb.result_dtype(x0, theta, *bounds)
        return (
            jax.ShapeDtypeStruct((k, k), dtype),
            jax.ShapeDtypeStruct((k, q), dtype),
            jax.ShapeDtypeStruct((2 * k,), dtype),
        )

    def _nothing_to_solve(self, x0, theta, *bounds):
        """An empty ``x``: there is nothing to solve for, and it moves with nothing."""
        k, q = self._sizes(x0, theta)
        return np.zeros(0), np.eye(k), np.zeros((k, q)), np.zeros(2 * k)

    def forward(self, x0, theta, *, residuals=True):
        return self._forward(x0, theta, residuals=residuals)

    def _forward(self, *args, residuals=True):
        """``x`` and, for a differentiated call (``residuals``), ``(J_z, J_q, state)``."""
        dtype = jb.result_dtype(*args)
        n = args[0].shape[-1]
        k, q = self._sizes(args[0], args[1])
        try:
            args64 = [np.asarray(a, np.float64) for a in args]
            if n == 0:
                x, jz, jq, state = self._nothing_to_solve(*args64)
            else:
                x, jz, jq, state = self._solve(*args64, derivatives=residuals)
        except OptimizeError as error:
            x, jz, jq, state = self.nan_on_failure(error, (n,), (k, k), (k, q), (2 * k,))
        if not residuals:
            return x.astype(dtype)
        return x.astype(dtype), jz.astype(dtype), jq.astype(dtype), state.astype(dtype)  # pyright: ignore[reportOptionalMemberAccess]

    def pullback(self, res, g):
        # the rules are bridged calls (``_second_order``): differentiable again
        return rules_in_jax(self)[0](res, g)

    def pushforward(self, res, tangents):
        return rules_in_jax(self)[1](res, tangents)

    def _second_order(self, q: np.ndarray, z: np.ndarray, flags: np.ndarray, n: int) -> SecondOrder:
        """The optimality system's second derivatives at the solution ``z``, whose first
        ``n`` entries are ``x`` (``flags``: its active set, as ``_solve`` returned it), for
        the joined parameters ``q``."""
        raise NotImplementedError
