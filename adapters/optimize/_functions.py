"""The user's residual, objective or constraint Adapter seen from the host, in float64.

SciPy calls these directly: ``forward`` for values, ``backward`` for exact first derivatives
(one call per output, or one batched call for a vectorized adapter), and the optional host
hooks ``jacobian(x, theta)`` and ``hessian(x, theta)``. Without a ``hessian`` hook, second
derivatives are central differences of the exact first derivatives (see ``second``). Never
JAX: NumPy arrays in and out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

import jaxbridge as jb
from jaxbridge.internal import arg_names

from .._shared._host_cotangents import cotangent
from .._shared._user_function import UserFunction
from ._differences import derivative_columns

_SIGNATURE = re.compile(r"^\((\w+)\),\((\w*)\)->\((\w*)\)$")


def check_user(owner: str, role: str, adapter: object, output: str) -> None:
    """Refuse a ``role`` argument that is not an Adapter ``"(n),(p)->(...)"``.

    ``output`` is ``"x"`` (the output has x's size, as a root's residual), ``"scalar"`` or
    ``"vector"`` (any size).
    """
    if not isinstance(adapter, jb.Adapter):
        raise TypeError(
            f"{owner}: '{role}' must be a jaxbridge.Adapter instance (host forward and "
            f"backward), got {type(adapter).__name__}."
        )
    name = type(adapter).__name__
    found = _SIGNATURE.match(adapter.signature.replace(" ", ""))
    wanted = {"x": "(n),(p)->(n)", "scalar": "(n),(p)->()", "vector": "(n),(p)->(m)"}[output]
    fits = found is not None and found.group(2) != ""
    if fits and found is not None:
        out = found.group(3)
        fits = {"x": out == found.group(1), "scalar": out == "", "vector": out != ""}[output]
    if not fits:
        raise ValueError(
            f"{owner}: '{role}' ({name}) must have signature {wanted!r} (x first, then the "
            f"parameters theta), but it has {adapter.signature!r}."
        )


def user_domains(adapter: jb.Adapter, names: tuple[str, str]) -> dict[str, object]:
    """The user's ``domains`` for its (x, theta), renamed to the solver's ``names``."""
    params = arg_names(type(adapter))
    domains: Mapping[str, object] = adapter.domains
    return {ours: domains[theirs] for ours, theirs in zip(names, params) if theirs in domains}


class HostFunction(UserFunction):
    """``x -> adapter(x, theta)`` at a fixed ``theta``, with its derivatives, in float64:
    what SciPy calls, each answer kept for the points it asks about again (``Recent``)."""

    def __init__(
        self,
        adapter: jb.Adapter,
        theta: np.ndarray,
        box: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        super().__init__(adapter)
        self.theta = theta
        self.box = box  # the differences in ``second`` stay inside it
        self._size: int | None = None  # the output's size, known after the first call
        self.scalar = adapter.signature.replace(" ", "").endswith("->()")
        self._weights: np.ndarray | None = None  # see ``contracted``
        self._recent = Recent()

    def contracted(self, weights: np.ndarray) -> HostFunction:
        """The scalar ``x -> weights · F(x, theta)`` with ``weights`` fixed: its gradient is
        one ``backward`` call with cotangent ``weights`` (not one per output of ``F``), so
        its second derivatives, ``Σ wᵢ ∇²Fᵢ``, cost one call per difference point (with a
        ``jacobian`` hook, ``weights`` times the hook's matrices)."""
        scalar = HostFunction(self.adapter, self.theta, self.box)
        scalar.scalar, scalar._weights, scalar._size = True, weights, self._size
        scalar._recent = self._recent  # (the same adapter and theta: the same calls)
        return scalar

    @property
    def _cotangent(self) -> np.ndarray:
        """The cotangent whose pullback is the gradient of a scalar function."""
        return _ONE if self._weights is None else self._weights[None]

    def _forward(
        self, x: np.ndarray, known: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """``forward``'s output and residuals at ``x``; ``known``: what ``Recent`` has there,
        where the caller has looked it up already."""
        if known is None:
            known = self._recent.at(x)
        if "forward" in known:
            out, extras = known["forward"]
            out = out.copy()
        else:
            out, extras = self.outputs((x, self.theta))
            known["forward"] = (out.copy(), extras)
        self._size = out.shape[-1] if out.ndim else 1
        return out, extras

    def size(self, x: np.ndarray) -> int:
        """The output's size (1 for a scalar), from one ``forward`` call at most."""
        if self._size is None:
            self._forward(x)
        return self._size  # pyright: ignore[reportReturnType]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self._forward(np.asarray(x, np.float64))[0]

    def _pullbacks(
        self, x: np.ndarray, gs: np.ndarray, parameters: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The value at ``x``, and ``backward`` for each cotangent in the stack ``gs``: one
        row per cotangent of the gradients in ``x`` and, with ``parameters``, in ``theta``
        (else None: the user's ``backward`` still computes them, but no (k, p) array is
        checked or stacked; SciPy's iterations need only the gradients in ``x``)."""
        x = np.asarray(x, np.float64)
        known = self._recent.at(x)
        out, extras = self._forward(x, known)
        res = (x, self.theta, out, *extras)
        if len(gs) == 1 and not self.adapter.vectorized:
            # a scalar objective's gradient: SciPy asks for it at every step (spelt out, as
            # ``pullback``'s loop over the arguments costs about as much as the checks)
            own = gs is _ONE  # (not a contracted function's: its weights vary)
            if own and not parameters and "gradient" in known:
                return out, known["gradient"][None].copy(), None
            gx, gt = self.adapter.backward(res, gs[0])[:2]
            gx = cotangent(self.name, self.adapter, 0, gx, x.shape)
            if own:
                known["gradient"] = gx.copy()
            if not parameters:
                return out, gx[None], None
            return out, gx[None], cotangent(self.name, self.adapter, 1, gt, self.theta.shape)[None]
        stacks = self.pullbacks(res, gs, 2 if parameters else 1)
        return out, stacks[0], stacks[1] if parameters else None

    def value_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Of a scalar objective, for SciPy: ``(f, ∂f/∂x)`` from one forward and one
        backward call."""
        out, gx, _ = self._pullbacks(x, _ONE, False)
        return float(out), gx[0]

    def gradient_x(self, x: np.ndarray) -> np.ndarray:
        """Of a scalar objective: ``∂f/∂x`` from one ``backward`` call."""
        return self._first(x, False)[0]

    def jacobian(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of a vector function: ``(∂F/∂x, ∂F/∂θ)``, (m, n) and (m, p), from the user's
        ``jacobian`` hook or from ``backward`` with each unit cotangent."""
        _, jx, jt = self._jacobian(x, True)
        return jx, jt  # pyright: ignore[reportReturnType]

    def value_and_jacobian(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(F, ∂F/∂x, ∂F/∂θ)``: without a hook, ``F`` is the forward call ``backward``
        needs anyway."""
        out, jx, jt = self._jacobian(x, True)
        return self(x) if out is None else out, jx, jt  # pyright: ignore[reportReturnType]

    def jacobian_x(self, x: np.ndarray) -> np.ndarray:
        """``∂F/∂x`` alone (what SciPy asks for at every iteration): see ``jacobian``."""
        return self._jacobian(x, False)[1]

    def _jacobian(
        self, x: np.ndarray, parameters: bool
    ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
        """``(F or None, ∂F/∂x, ∂F/∂θ or None)``: ``F`` where it came for free (from the
        forward call that ``backward`` needs), ``∂F/∂θ`` with ``parameters``."""
        x = np.asarray(x, np.float64)
        known = self._recent.at(x)
        if not parameters and "jacobian" in known:
            return None, known["jacobian"].copy(), None
        hook: Any = getattr(self.adapter, "jacobian", None)
        if callable(hook):
            m, n, p = self.size(x), x.shape[-1], self.theta.shape[-1]
            pair: Any = hook(x, self.theta)
            jx, jt = pair
            out, jx = None, self._hooked("jacobian", jx, (m, n))
            jt = self._hooked("jacobian", jt, (m, p)) if parameters else None
        else:
            out, jx, jt = self._pullbacks(x, np.eye(self.size(x)), parameters)
        known["jacobian"] = jx.copy()
        return out, jx, jt

    @property
    def _pulled(self) -> bool:
        """Whether the first derivatives are one ``backward`` call's: a scalar function's
        (a contracted one with a ``jacobian`` hook goes through the hook instead)."""
        hooked = self._weights is not None and callable(getattr(self.adapter, "jacobian", None))
        return self.scalar and not hooked

    def _first(self, x: np.ndarray, parameters: bool) -> tuple[np.ndarray, ...]:
        """The gradient of a scalar function, the Jacobian of a vector one: in ``x``, and
        with ``parameters`` in ``theta`` too."""
        w = self._weights
        if self._pulled:
            _, gx, gt = self._pullbacks(x, self._cotangent, parameters)
            return (gx[0],) if gt is None else (gx[0], gt[0])
        _, jx, jt = self._jacobian(x, parameters)
        if w is not None:  # contracted, from the ``jacobian`` hook
            jx, jt = w @ jx, None if jt is None else w @ jt
        return (jx,) if jt is None else (jx, jt)

    def _batched_firsts(self, points: np.ndarray, parameters: bool) -> np.ndarray:
        """``_first`` of a vectorized ``_pulled`` function at each row of ``points``, flattened
        into one row each, from one ``forward`` and one ``backward`` call (the points as a
        batch)."""
        w = self._weights
        k, n, p = len(points), points.shape[-1], self.theta.shape[-1]
        theta = np.broadcast_to(self.theta, (k, p))
        g = np.ones(k) if w is None else np.broadcast_to(w, (k, w.shape[-1]))
        gx, gt = self.adapter.backward(self.residuals((points, theta)), g)[:2]
        gx = cotangent(self.name, self.adapter, 0, gx, (k, n), 1)
        if not parameters:
            return gx
        return np.concatenate([gx, cotangent(self.name, self.adapter, 1, gt, (k, p), 1)], 1)

    def _hooked(self, hook: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
        array = np.asarray(value, np.float64)
        if array.shape != shape:
            raise ValueError(
                f"{self.name}.{hook} returned an array of shape {array.shape}, expected {shape}."
            )
        return array

    def second(self, x: np.ndarray, rough: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(∂²/∂x², ∂²/∂x∂θ)``: (n, n) and (n, p) for a scalar function, (m, n, n) and
        (m, n, p) for a vector one. See ``_second``."""
        hxx, hxt = self._second(x, rough, True)
        return hxx, hxt  # pyright: ignore[reportReturnType]

    def second_x(self, x: np.ndarray, rough: bool = False) -> np.ndarray:
        """``∂²/∂x²`` alone: the differences carry no gradients in ``theta`` (with many
        parameters, most of the work). See ``_second``."""
        return self._second(x, rough, False)[0]

    def _second(
        self, x: np.ndarray, rough: bool, parameters: bool
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``(∂²/∂x², ∂²/∂x∂θ)``, the second None without ``parameters``.

        From the user's ``hessian`` hook if there is one; otherwise differences in each
        ``x_j`` of the exact first derivatives (``backward``), extrapolated by Ridders'
        method (``derivative_columns``): accurate to about 1e-12 relative on smooth
        functions of any scale, at 4 to 24 evaluations of the gradient or Jacobian per
        ``x_j`` (a vectorized scalar function: one batched call per round, every column's
        points together); symmetrised in x. Inside a ``box``, no step leaves it. ``rough``:
        one one-sided difference per ``x_j`` of step ``ROUGH_STEP`` instead, about 1e-8
        relative (for Newton steps and the ``SCREEN``).
        """
        x = np.asarray(x, np.float64)
        hook: Any = getattr(self.adapter, "hessian", None)
        if callable(hook):
            w = self._weights
            lead = () if self.scalar and w is None else (self.size(x),)
            n, p = x.shape[-1], self.theta.shape[-1]
            pair: Any = hook(x, self.theta)
            hxx, hxt = pair
            hxx = self._hooked("hessian", hxx, (*lead, n, n))
            hxt = self._hooked("hessian", hxt, (*lead, n, p)) if parameters else None
            if w is not None:
                hxx = np.tensordot(w, hxx, 1)
                hxt = None if hxt is None else np.tensordot(w, hxt, 1)
            return hxx, hxt
        n, p = x.shape[-1], self.theta.shape[-1]
        # the first derivatives' shapes, (n,) and (p,) for a scalar function (what
        # ``_first`` gives), (m, n) and (m, p) for a vector one
        lead = () if self._pulled or self._weights is not None else (self.size(x),)
        size = int(np.prod(lead)) * (n + p if parameters else n)

        def first(point: np.ndarray) -> np.ndarray:
            return np.concatenate([d.ravel() for d in self._first(point, parameters)])

        def firsts(points: np.ndarray) -> np.ndarray:
            return self._batched_firsts(points, parameters)

        # a batch of points in one call, where one backward call gives a point's derivatives
        batched = self.adapter.vectorized and self._pulled
        stacked = derivative_columns(
            x, size, lambda: first(x), first, self.box, rough, firsts if batched else None
        )
        # column j holds ∂/∂x_j of the first derivatives: of ∂f/∂x (.., n) and ∂f/∂θ (.., p)
        cut = int(np.prod(lead)) * n
        hxx = stacked[:cut].reshape(*lead, n, n)
        hxx = (hxx + np.swapaxes(hxx, -1, -2)) / 2
        if not parameters:
            return hxx, None
        hxt = np.swapaxes(stacked[cut:].reshape(*lead, p, n), -1, -2)
        return hxx, hxt


class Recent:
    """What the user's methods gave at the first point asked about and at the last two
    (``forward``'s outputs, the derivatives in ``x``: a Jacobian, a scalar's gradient), by
    the point's bytes: SciPy starts at ``x0`` and ends at its answer, where the checks ask
    again. (The bridge's methods are pure functions of their arguments.) Kept as copies,
    so that a caller may change what it is given. Derivatives in ``theta`` are asked for
    once, at the solution, and not kept."""

    def __init__(self) -> None:
        self._first: tuple[bytes, dict[str, Any]] | None = None
        self._last: dict[bytes, dict[str, Any]] = {}

    def at(self, x: np.ndarray) -> dict[str, Any]:
        """What is kept at ``x`` (``"forward"``, ``"jacobian"``, ``"gradient"``), to read and
        to add to: a new point takes the place of the oldest of the last two."""
        key = x.tobytes()
        if self._first is None:
            self._first = (key, {})
        if self._first[0] == key:
            return self._first[1]
        entry = self._last.get(key)
        if entry is None:
            entry = self._last[key] = {}
            if len(self._last) > 2:  # (dicts keep their order: the oldest goes)
                del self._last[next(iter(self._last))]
        return entry


_ONE = np.ones((1,))  # the cotangent of a scalar objective
_ONE.flags.writeable = False


def objective_derivatives(adapter: jb.Adapter) -> tuple[Any, Any]:
    """``(gradient, hessian)`` of a scalar objective at any ``(x, θ)``, for the second order
    (``BoxSecondOrder``): ``gradient(x, θ)``, ``(∂f/∂x, ∂f/∂θ)`` joined, from one forward
    and one backward call; ``hessian(x, θ)``, the user's hook's ``(∂²f/∂x², ∂²f/∂x∂θ)``, or
    None without one."""
    user = UserFunction(adapter, "the objective")

    def gradient(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        return np.concatenate(user.vjp((x, theta), _ONE[0]))

    def hessian(x: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return HostFunction(adapter, theta).second(x)

    return gradient, hessian if callable(getattr(adapter, "hessian", None)) else None


def sum_of_squares_gradient(adapter: jb.Adapter) -> Any:
    """``(x, θ) -> (Jₓᵀr, J_θᵀr)`` joined, the exact gradient of ``½|r|²``: one forward and
    one backward call (cotangent ``r``), for the second order (``BoxSecondOrder``)."""
    user = UserFunction(adapter, "the residual")

    def gradient(x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        res = user.residuals((x, theta))
        return np.concatenate(user.pullback(res, res[2], 2))

    return gradient
