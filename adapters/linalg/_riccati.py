"""What the Riccati adapters share: their base class (the parameter, the signature, the
forward and the rules' shape), the symmetric reading of ``q`` and ``r``, SciPy's solve with
its failures made clear, and the domains their tests draw from."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import ClassVar

import jax
import numpy as np
import scipy.linalg

import jaxbridge as jb

from .._shared._failure import MayFail, require_finite
from .._shared._portable_linalg import solve
from .._shared._rules import compiled, total
from ._solving import failure


class RiccatiSolve(MayFail):
    """The base of ``ContinuousRiccatiSolve`` and ``DiscreteRiccatiSolve``: the stabilising
    solution ``x`` of an algebraic Riccati equation in ``(a, b, q, r)``. Fails (see
    ``MayFail``) where there is no stabilising solution, SciPy fails (its message kept), or
    an input is not finite.

    An equation sets ``_routine`` (SciPy's solver) and ``_function`` (its name, for
    errors), ``_without_inputs`` (the adapter for the
    equation with no inputs, named when ``b`` has no columns) and defines ``_newton`` and
    ``_stable`` (host, for ``solve_are``), ``_loop`` and ``_lyapunov_solve`` (JAX, for the
    rules). Both rules are then one Lyapunov solve on the closed loop ``c = a - b k``, with
    ``w`` the matrix that ``_loop`` returns beside ``k`` and ``c`` (``x``, or ``x c``):

        tangent:    solve for ẋ with  wᵀȧ + ȧᵀw - wᵀḃk - kᵀḃᵀw + kᵀṙk + q̇
        cotangent:  s solves with  sym(ḡ),  then  ā = 2ws,  b̄ = -2wskᵀ,  q̄ = s,  r̄ = ksk
    """

    signature = "(n,n),(n,m),(n,n),(m,m)->(n,n)"
    # SciPy's solver and the Newton refinement after it are a loop of small LAPACK calls
    # (QZ, Lyapunov solves) that woke OpenBLAS's threads (see Adapter.blas_threads): the
    # gradient of solve_continuous_are (20 x 20) took 2.2x as long without the hold on a
    # loaded 2-core machine, 3.4x beside a busy process (benchmarks/blas_threads.py, #47)
    blas_threads = 1

    _routine: ClassVar[Callable[..., np.ndarray]]
    _function: ClassVar[str]
    _without_inputs: ClassVar[str]

    @staticmethod
    def _newton(a, b, q, r, x) -> tuple[np.ndarray, np.ndarray]:
        """The closed loop at ``x`` and one Newton step from ``x`` (see ``solve_are``)."""
        raise NotImplementedError

    @staticmethod
    def _stable(c: np.ndarray) -> bool:
        """Whether the closed loop ``c`` is stable (host)."""
        raise NotImplementedError

    @staticmethod
    def _loop(a, b, r, x) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(k, c, w)`` at the solution ``x``, in JAX."""
        raise NotImplementedError

    def _lyapunov_solve(self, c: jax.Array, rhs: jax.Array) -> jax.Array:
        """The solution of the closed loop's Lyapunov equation with right-hand side ``rhs``,
        as a bridged call (so that the rules have rules too)."""
        raise NotImplementedError

    def output_specs(self, a, b, q, r):
        if b.shape[-1] == 0:  # SciPy fails on it with an IndexError
            raise ValueError(
                f"{type(self).__name__}: 'b' has no columns (m = 0). With no inputs the "
                f"equation is a Lyapunov equation: use {self._without_inputs}."
            )
        return jax.ShapeDtypeStruct(a.shape, jb.result_dtype(a, b, q, r))

    def forward(self, a, b, q, r):
        dtype = jb.result_dtype(a, b, q, r)
        routine, function = type(self)._routine, self._function
        try:
            x = solve_are(function, routine, self._newton, self._stable, a, b, q, r)
        except np.linalg.LinAlgError as error:
            x = self.nan_on_failure(error, a.shape)
        return x.astype(dtype)

    @compiled
    def pushforward(self, res, tangents):
        a, b, _, r, x = res
        da, db, dq, dr = tangents
        k, c, w = self._loop(a, b, r, x)
        terms = []
        if da is not None:
            wda = w.mT @ da
            terms.append(wda + wda.mT)
        if db is not None:
            wdb = w.mT @ db @ k
            terms.append(-(wdb + wdb.mT))
        if dr is not None:
            terms.append(k.mT @ sym(dr) @ k)
        if dq is not None:
            terms.append(sym(dq))
        rhs = total(terms)
        if rhs is None:
            return None
        return self._lyapunov_solve(c.mT, rhs)

    @compiled
    def pullback(self, res, g):
        a, b, _, r, x = res
        k, c, w = self._loop(a, b, r, x)
        s = self._lyapunov_solve(c, sym(g))
        ws = w @ s
        return 2 * ws, -2 * ws @ k.mT, s, k @ s @ k.mT


def sym(m):
    """``(m + mᵀ) / 2`` for NumPy or JAX arrays, batched."""
    return (m + m.swapaxes(-1, -2)) / 2


def solve_are(
    function: str,
    solve: Callable[..., np.ndarray],
    newton: Callable[..., tuple[np.ndarray, np.ndarray]],
    stable: Callable[[np.ndarray], bool],
    a: np.ndarray,
    b: np.ndarray,
    q: np.ndarray,
    r: np.ndarray,
) -> np.ndarray:
    """The stabilising solution of a Riccati equation, in float64, or a clear error.

    ``q`` and ``r`` are read as their symmetric parts. SciPy's own failures become errors
    that start with ``function`` and keep SciPy's message; a solution whose closed loop is
    not ``stable`` (SciPy can return one when no stabilising solution exists) is refused
    too: each a ``SolveFailure``.

    ``newton(a, b, q, r, x)`` returns the closed loop at ``x`` and one Newton step from it
    (Kleinman's or Hewer's: one Lyapunov solve). SciPy's Schur method loses digits to the
    pencil's scaling (relative errors of 1e-12 on small well-posed systems, and garbage
    when an entry of ``b`` is 1e-38), so its answer is only the start: from any stabilising
    start the steps converge monotonically and quadratically to the stabilising solution,
    and they run until a step changes ``x`` by less than 64 eps relative or stops shrinking
    below 1e-8 relative (rounding): one or two steps after a good start. Where SciPy's
    start is not stabilising and ``a`` is stable, they start again from zero.
    """
    a, b, q, r = (np.asarray(m, np.float64) for m in (a, b, q, r))
    for name, m in (("a", a), ("b", b), ("q", q), ("r", r)):
        require_finite(f"matrix '{name}'", m)
    if a.size == 0:
        return a.copy()
    try:
        with warnings.catch_warnings():
            # SciPy's balancing warns on a cast for tiny entries (1e-100), and its own
            # solves of ill-conditioned ones (a ~ 1e-99) warn of that; the solution is
            # refined and checked below either way
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            x = sym(solve(a, b, sym(q), sym(r)))
    except np.linalg.LinAlgError as error:
        raise failure(f"{function}: SciPy found no solution ({error})") from None
    q, r = sym(q), sym(r)
    refined = _refine(function, newton, stable, a, b, q, r, x)
    if refined is None:
        # SciPy's start can be ruined by rounding (an entry of 1e17 where a 1e-51 sits off
        # the diagonal of ``a``), and a step from it lands past the stabilising solution;
        # when ``a`` itself is stable, zero is a stabilising start too
        zero = np.zeros_like(a)
        if stable(newton(a, b, q, r, zero)[0]):
            refined = _refine(function, newton, stable, a, b, q, r, zero)
    if refined is None:
        raise failure(
            f"{function}: the equation has no stabilising solution (the closed loop of "
            "SciPy's solution is not stable; is (a, b) stabilisable and (a, q) detectable?)"
        )
    return refined


def _refine(
    function: str,
    newton: Callable[..., tuple[np.ndarray, np.ndarray]],
    stable: Callable[[np.ndarray], bool],
    a: np.ndarray,
    b: np.ndarray,
    q: np.ndarray,
    r: np.ndarray,
    x: np.ndarray,
) -> np.ndarray | None:
    """Newton's steps from ``x`` to the stabilising solution, or None where a closed loop
    on the way is not stable (or not finite)."""
    previous = np.inf
    for _ in range(_NEWTON_STEPS):
        if not np.isfinite(x).all():
            return None
        with warnings.catch_warnings():
            # a closed loop that is stable but far from normal (an entry of 1e16) makes
            # SciPy's Lyapunov solve warn of its condition number, though its residual
            # is at rounding: the steps are judged here, by how they shrink
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            closed, refined = newton(a, b, q, r, x)
        if not stable(closed):
            return None
        step = np.abs(refined - x).max()
        if step > previous / 2 and step <= _ROUNDING * np.abs(x).max():
            return x  # down to rounding: steps no longer shrink (this one is not taken)
        # (a large step that does not shrink is no convergence: from a poor start the first
        # steps can shrink slowly, 34.9 then 34.4, before they converge)
        x = sym(refined)
        if step <= 64 * np.finfo(np.float64).eps * np.abs(x).max():
            return x  # converged
        previous = step
    raise failure(
        f"{function}: Newton's refinement of SciPy's solution did not converge in "
        f"{_NEWTON_STEPS} steps (the equation is too ill-conditioned)"
    )


_NEWTON_STEPS = 30
_ROUNDING = 1e-8  # a step this small, relative to x, that stops shrinking is rounding


# Eigenvalues with real parts at most -1/2, drawn as "stable" draws, so that any ``b`` makes
# ``(a, b)`` stabilisable: a domain for the continuous equation. Unlike "stable" it refuses
# no input: the unstable (but stabilisable) systems are those the equation is most often
# solved for.
hurwitz = dataclasses.replace(jb.Domain.named("stable"), name="hurwitz", room=None)


def contraction(raw: np.ndarray) -> np.ndarray:
    """A matrix of spectral norm at most 4/5, so of spectral radius below 1 (Schur stable):
    a domain for the discrete equations."""
    norm = np.linalg.norm(raw, ord=2, axis=(-2, -1))[..., None, None]
    return 0.8 * raw / np.maximum(1.0, norm)


def gain_solve(m: jax.Array, rhs: jax.Array) -> jax.Array:
    """``m⁻¹ rhs`` for the symmetric positive definite ``m`` of a gain, batched, in JAX."""
    return solve(sym(m), rhs)
