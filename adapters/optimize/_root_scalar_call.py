"""``root_scalar(f, args, method, bracket, x0, ...)``: SciPy's call with ``f`` written in JAX,
solved by SciPy on the host (``RootScalarSolve``) and differentiable in ``args`` by the
implicit function theorem, to every order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import jaxbridge as jb

from .._shared._failure import MayFail, OnFailure, OptimizeError
from .._shared._jax_function import JaxScalarEquation, Packing, float_dtype
from .._shared._result import OptimizeResult
from ._implicit import SETTLED
from ._scipy_forms import method_named

_OWNER = "root_scalar"
_BRACKETING = ("brentq", "brenth", "bisect", "ridder", "toms748")
_FROM_A_START = ("newton", "secant", "halley")


class RootScalarSolve(MayFail):
    """SciPy's ``root_scalar`` on the host:
    ``root, iterations, function_calls, converged = RootScalarSolve(f, method)(theta, start)``.

    ``f`` is a ``JaxScalarEquation`` (``f(x, theta)``, compiled for the CPU backend, float64;
    newton gets ``f'`` and halley ``f'`` and ``f''`` from JAX). ``start`` is ``(a, b, x0,
    x1)``: the bracket for the bracketing methods, the starting points for the others
    (``x1`` read only where ``has_x1``). The root is in ``theta``'s dtype, the counts and
    ``converged`` (1 or 0) int32. A bracket over which ``f`` does not change sign is a
    ``ValueError``; a solve SciPy reports unconverged an ``OptimizeError`` (or, with
    ``on_failure="nan"``, NaN and ``converged`` 0).

    The root's derivatives, by the implicit function theorem on ``f(root(θ), θ) = 0``, are
    this adapter's rules: ``root' = -(∂f/∂θ θ̇) / f'(root)`` at the host's root, ``f'`` and
    ``∂f/∂θ`` from the host (``EquationSlopes``, which refuses a multiple root). They go
    through this adapter's root again, so they hold to every order. The root does not move
    with ``start`` (a simple root), nor do the counts and ``converged`` with anything.
    """

    f: JaxScalarEquation
    method: str
    has_x1: bool = False
    xtol: float | None = None
    rtol: float | None = None
    maxiter: int | None = None

    signature = "(p),(4)->(),(),(),()"

    def output_specs(self, theta, start):
        count = jax.ShapeDtypeStruct(theta.shape[:-1], np.int32)
        return jax.ShapeDtypeStruct(theta.shape[:-1], theta.dtype), count, count, count

    def check(self, theta, start):
        if self.method not in _BRACKETING:
            return
        a, b = (np.asarray(v, np.float64) for v in start[:2])
        fa, fb = (float(self.f.forward(v, np.asarray(theta, np.float64))) for v in (a, b))
        if np.sign(fa) * np.sign(fb) > 0 or np.isnan(fa * fb):
            raise ValueError(
                f"{_OWNER}: argument 'bracket' must hold a and b where f changes sign (method "
                f"{self.method!r}); got a = {float(a)!r}, b = {float(b)!r} with f(a) = {fa!r} "
                f"and f(b) = {fb!r}."
            )

    def forward(self, theta, start):
        theta = np.asarray(theta, np.float64)
        a, b, x0, x1 = (float(v) for v in start)

        def f(x):
            return float(self.f.forward(np.float64(x), theta))

        def fprime(x):
            return float(self.f.jacobian(np.float64(x), theta)[0])

        def fprime2(x):
            return float(self.f.hessian(np.float64(x), theta)[0])

        given = {"xtol": self.xtol, "rtol": self.rtol, "maxiter": self.maxiter}
        given = {name: value for name, value in given.items() if value is not None}
        if self.method in _BRACKETING:
            where: dict[str, Any] = {"bracket": (a, b)}
        else:
            where = {"x0": x0, "x1": x1 if self.has_x1 else None}
        if self.method in ("newton", "halley"):  # (SciPy's newton would take differences)
            where["fprime"] = fprime
        if self.method == "halley":
            where["fprime2"] = fprime2
        try:
            found = scipy.optimize.root_scalar(f, method=self.method, **where, **given)
            if not (found.converged and np.isfinite(found.root)):
                raise OptimizeError.because(
                    f"{_OWNER}: SciPy's {self.method} did not converge (flag {found.flag!r}, "
                    f"{found.iterations} iterations, last x = {found.root!r})"
                )
            out = (found.root, found.iterations, found.function_calls, 1.0)
        except OptimizeError as error:
            out = (self.nan_on_failure(error, ()), 0.0, 0.0, 0.0)
        root, *counts = out
        return (np.asarray(root, theta.dtype), *(np.asarray(v, np.int32) for v in counts))

    def pushforward(self, res, tangents):
        theta, root, theta_dot = res[0], res[2], tangents[0]
        if theta_dot is None:
            return None, None, None, None
        slope, along = self._slopes(root, theta)
        return -jnp.sum(along * theta_dot, axis=-1) / slope, None, None, None

    def pullback(self, res, g):
        theta, root = res[0], res[2]
        slope, along = self._slopes(root, theta)
        return -(g[0] / slope)[..., None] * along, None

    def _slopes(self, root, theta):
        return EquationSlopes(self.f, at_root=True, on_failure=self.on_failure)(root, theta)


class EquationSlopes(MayFail):
    """``f'`` and ``∂f/∂θ`` at ``(x, theta)``: ``slope, along = EquationSlopes(f)(x, theta)``.

    On the host, from JAX compiled for the CPU backend, in float64: exact where a TPU's own
    float64 ``sin`` or ``exp`` is about 1e-8 off (measured there: the implicit function
    theorem's ``1 / f'`` computed on the device missed SciPy's differences by 1.6e-8). Their
    derivatives (``f``'s Hessian) are host calls too; from the third order on, ``f``'s
    derivatives are JAX where the call runs.

    ``at_root``: ``x`` is a root of ``f`` whose derivatives the implicit function theorem is
    to give, ``-(∂f/∂θ) / f'``. Where ``f'`` is not settled there, an ``OptimizeError``
    (or NaN, ``on_failure="nan"``): where it is 0, or changes by more than ``SETTLED`` (the
    optimize solvers' own: ``_implicit``) of itself over the root's own error ``|f / f'|``
    (``|f f''| / f'²``, which tends to ``(k - 1) / k`` at a root of multiplicity ``k``, and
    to 0 at a simple root). At a
    multiple root that theorem's quotient is 0 / 0: at the double root of ``(x - 2)² - c``
    at ``c = 0`` (where the root ``2 ± √c`` has no derivative) it came out as -4.5e7 from
    newton, ``1 / f'`` at the root's error of 1.1e-8.
    """

    f: JaxScalarEquation
    at_root: bool = False

    signature = "(),(p)->(),(p)"

    def forward(self, x, theta):
        slope, along = self.f.jacobian(x, theta)
        if self.at_root:
            value, bend = self.f.forward(x, theta), self.f.hessian(x, theta)[0]
            moved = abs(float(value) * float(bend)) / float(slope) ** 2 if slope else np.inf
            if not moved <= SETTLED:
                error = OptimizeError.because(
                    f"{_OWNER}: the root's derivative is refused at x = {float(x)!r}, where f' "
                    f"= {float(slope):.3g} changes by {moved:.2g} of itself over the root's "
                    f"own error |f/f'| (more than {SETTLED:g}): a multiple root (there it "
                    "changes by (k - 1)/k at multiplicity k, and the implicit function "
                    "theorem's -(df/dargs)/f' is 0/0), or one too loose for its derivative"
                )
                return self.nan_on_failure(error, (), np.shape(theta))
        return slope, along

    def pushforward(self, res, tangents):
        x, theta = res[:2]
        dx, dtheta = (jnp.zeros_like(a) if t is None else t for a, t in zip((x, theta), tangents))
        return EquationCurvature(self.f)(x, theta, dx, dtheta)

    def pullback(self, res, g):
        # (f's Hessian is symmetric: the pullback of the slopes is their pushforward along g)
        return EquationCurvature(self.f)(*res[:2], *g)


class EquationCurvature(jb.Adapter):
    """``f``'s Hessian at ``(x, theta)`` times ``(dx, dtheta)``, on the host in float64:
    ``EquationSlopes``' derivative, ``d_slope, d_along = EquationCurvature(f)(x, theta, dx,
    dtheta)``. Its own derivatives are JAX where the call runs."""

    f: JaxScalarEquation

    signature = "(),(p),(),(p)->(),(p)"

    def forward(self, x, theta, dx, dtheta):
        return self.f.backward_jvp((x, theta), np.float64(1.0), (dx, dtheta))

    def pushforward(self, res, tangents):
        primals = res[:4]
        tangents = [jnp.zeros_like(a) if t is None else t for a, t in zip(primals, tangents)]

        def one(*both):
            return jax.jvp(self._curvature, both[:4], both[4:])[1]

        signature = f"{_CURVATURE_INPUTS},{_CURVATURE_INPUTS}->(),(p)"
        return jnp.vectorize(one, signature=signature)(*primals, *tangents)

    def pullback(self, res, g):
        def one(x, theta, dx, dtheta, g_slope, g_along):
            return jax.vjp(self._curvature, x, theta, dx, dtheta)[1]((g_slope, g_along))

        signature = f"{_CURVATURE_INPUTS},(),(p)->{_CURVATURE_INPUTS}"
        return jnp.vectorize(one, signature=signature)(*res[:4], *g)

    def _curvature(self, x, theta, dx, dtheta):
        slopes = jax.grad(self.f.called, argnums=(0, 1))
        return jax.jvp(slopes, (x, theta), (dx, dtheta))[1]


_CURVATURE_INPUTS = "(),(p),(),(p)"


def root_scalar(
    f: Callable,
    args: Any = (),
    method: str | None = None,
    bracket: Any = None,
    fprime: Any = None,
    fprime2: Any = None,
    x0: Any = None,
    x1: Any = None,
    xtol: float | None = None,
    rtol: float | None = None,
    maxiter: int | None = None,
    options: dict | None = None,
    *,
    on_failure: OnFailure = "raise",
) -> OptimizeResult:
    """``scipy.optimize.root_scalar`` with ``f(x, *args)`` written in JAX (``x`` a scalar): a
    root of ``f``, differentiable in ``args`` (to every order) under ``jit``, ``vmap`` and
    ``grad``; exactly zero in ``bracket``, ``x0`` and ``x1``, on which a simple root does
    not depend.

    SciPy solves on the host in float64 with ``f`` compiled for the CPU backend. Methods as
    SciPy's: the bracketing ``"brentq"`` (the default with a ``bracket``), ``"brenth"``,
    ``"bisect"``, ``"ridder"``, ``"toms748"``, and from ``x0`` ``"newton"`` (the default
    without a bracket), ``"secant"`` (the default with ``x1``), ``"halley"`` (the default
    with ``fprime=True`` and ``fprime2=True``). newton is given JAX's exact ``f'`` (SciPy's
    own would take differences) and halley ``f'`` and ``f''``; ``fprime`` and ``fprime2``
    are ``None`` or ``True`` and only choose the method, as in SciPy. ``xtol``, ``rtol``,
    ``maxiter``: SciPy's, its defaults where ``None``.

    A solve SciPy reports unconverged raises an ``OptimizeError`` (with
    ``on_failure="nan"``: NaN root, ``converged`` False); a bracket without a sign change
    of ``f`` a ``ValueError``. The derivative ``d root / d args = -(∂f/∂args) / f'(root)``
    (at SciPy's root, ``f'`` and ``∂f/∂args`` from JAX on the host in float64, as the
    second order's Hessian of ``f``) is 0/0 at a multiple root, where ``f' = 0``: there it
    is refused by name (an ``OptimizeError``, or NaN with ``on_failure="nan"``), the root
    itself returned (``EquationSlopes`` says how a multiple root is told).

    Returns:
        ``OptimizeResult``, SciPy's ``RootResults`` fields as arrays: ``root``,
        ``iterations`` and ``function_calls`` (int32), ``converged`` (bool), ``flag``
        (SciPy's integer code, 0 for ``"converged"`` and -2 for ``"convergence error"``: a
        string cannot pass through ``jit``).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jaxbridge.adapters.optimize import root_scalar
        >>> def f(x, c):
        ...     return x**3 - c
        >>> float(root_scalar(f, args=(8.0,), bracket=(0.0, 5.0)).root)  # doctest: +ELLIPSIS
        2.0...
        >>> g = jax.grad(lambda c: root_scalar(f, args=(c,), bracket=(0.0, 5.0)).root)(8.0)
        >>> round(float(g), 6)  # d c^(1/3) / dc = 1/12
        0.083333
    """
    if options:
        raise TypeError(
            f"{_OWNER}: argument 'options' is not taken: pass xtol, rtol and maxiter by name; "
            f"got {options!r}."
        )
    for name, value in (("fprime", fprime), ("fprime2", fprime2)):
        if value is not None and value is not True:
            raise TypeError(
                f"{_OWNER}: argument '{name}' must be None or True: f is a JAX function, whose "
                f"derivatives the bridge takes from JAX (True chooses the method as SciPy's "
                f"does); got {value!r}."
            )
    if method is None:
        if bracket is not None:
            method = "brentq"
        elif x0 is not None:
            method = ("halley" if fprime2 else "newton") if fprime else "secant"
            method = "newton" if method == "secant" and x1 is None else method
        else:
            raise ValueError(
                f"{_OWNER}: pass argument 'bracket' (a, b) or a starting point 'x0': without "
                "either no method can be chosen."
            )
    method = method_named(_OWNER, method, _BRACKETING + _FROM_A_START)
    dtype = float_dtype()
    zero = jnp.zeros((), dtype)
    if method in _BRACKETING:
        if bracket is None or len(bracket) < 2:
            raise ValueError(
                f"{_OWNER}: method {method!r} needs argument 'bracket', a pair (a, b) over "
                f"which f changes sign; got {bracket!r}."
            )
        a, b = (jnp.asarray(v, dtype) for v in tuple(bracket)[:2])
        start = [a, b, zero, zero]
    else:
        if x0 is None:
            raise ValueError(
                f"{_OWNER}: method {method!r} needs argument 'x0', a starting point; got None."
            )
        start = [zero, zero, jnp.asarray(x0, dtype), jnp.asarray(0.0 if x1 is None else x1, dtype)]
    for name, value in zip(("a", "b", "x0", "x1"), start):
        if jnp.shape(value) != ():
            raise ValueError(
                f"{_OWNER}: the starting values ('bracket', 'x0', 'x1') must be scalars; "
                f"{name} has shape {jnp.shape(value)} (vmap for many)."
            )
    args = args if isinstance(args, tuple) else (args,)
    packing = Packing.of(args)
    equation = JaxScalarEquation(f, Packing.of(np.float64(0.0)), packing, role="f")
    theta = packing.flat(args, dtype)
    out = jax.eval_shape(equation.called, zero, theta)
    if out.shape != () or not jnp.issubdtype(out.dtype, jnp.floating):
        raise ValueError(
            f"{_OWNER}: 'f' must return one real number for a scalar x, but it returns "
            f"{out.dtype} of shape {out.shape}."
        )
    solver = RootScalarSolve(
        equation,
        method,
        has_x1=x1 is not None,
        xtol=xtol,
        rtol=rtol,
        maxiter=maxiter,
        on_failure=on_failure,
    )
    starts = jnp.stack(jnp.broadcast_arrays(*start), axis=-1)
    root, iterations, calls, converged = solver(theta, starts)
    converged = converged != 0
    return OptimizeResult(
        root=root,
        iterations=iterations,
        function_calls=calls,
        converged=converged,
        flag=jnp.where(converged, 0, -2).astype(jnp.int32),
    )
