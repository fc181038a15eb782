"""Calling a user's ``Adapter`` from inside SciPy's loops, and the failures the integrate
adapters share.

SciPy's integrators call back into Python many times per solve, on the host, with NumPy
arrays: an ``OdeSolve`` right-hand side or a ``Quad`` integrand is therefore an ``Adapter``
whose host methods are called directly (never through JAX, which could hang there).
``HostFunction`` wraps one such adapter with its values, vector-Jacobian products,
Jacobian-vector products and whole Jacobians, all on float64 arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import jaxbridge as jb

from .._failure import IntegrationFailure
from .._host_cotangents import checked, cotangent


def check_positive(owner: str, name: str, value: object, allow_zero: bool = False) -> None:
    """Refuse a tolerance or a limit that is not a positive (or non-negative) number."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and (value >= 0 if allow_zero else value > 0)  # type: ignore[operator]
    if not ok:
        what = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{owner}: parameter '{name}' must be {what} number; got {value!r}.")


failure = IntegrationFailure.because


def cotangent_type(a: np.ndarray) -> np.dtype:
    """The dtype of an argument's cotangent (an integer argument's is ignored)."""
    return a.dtype if np.issubdtype(a.dtype, np.floating) else np.dtype(np.float64)


def overrides(adapter: jb.Adapter, method: str) -> bool:
    return getattr(type(adapter), method) is not getattr(jb.Adapter, method)


class HostFunction:
    """A user's adapter of one output, called on the host with float64 NumPy arrays.

    ``role`` names it in errors (``"OdeSolve's rhs"``). ``shape`` is the output's core
    shape, which the Jacobians need. Every product first calls ``forward`` (the backward
    and jvp get ``(*inputs, *outputs, *residuals)`` as the bridge would give them).
    """

    def __init__(self, adapter: jb.Adapter, role: str, shape: tuple[int, ...]) -> None:
        self.adapter = adapter
        self.shape = shape
        self.size = int(np.prod(shape))
        self._who = f"{role} {type(adapter).__name__}"  # names it in errors
        self._has: set[str] = set()  # the host methods found defined

    def _res(self, args: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        return (*args, *_outputs(self.adapter.forward(*args)))

    def value(self, *args: np.ndarray) -> np.ndarray:
        """The output, as a float64 array of the declared shape."""
        out = self.adapter.forward(*args)
        if type(out) is np.ndarray and out.dtype == np.float64 and out.shape == self.shape:
            return out  # (the common case, at every solver step: nothing to convert)
        out = np.asarray(_outputs(out)[0], np.float64)
        if out.shape != self.shape:
            raise ValueError(
                f"{self._who}.forward returned shape {out.shape}, expected {self.shape}."
            )
        return out

    def _needs(self, method: str, purpose: str) -> None:
        if method not in self._has:
            if not overrides(self.adapter, method):
                raise TypeError(f"{self._who} defines no host `{method}`, which {purpose} needs.")
            self._has.add(method)  # (asked at every step of an adjoint)

    def vjp(
        self, args: Sequence[np.ndarray], g: np.ndarray, value: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """One float64 cotangent per argument (zeros where ``backward`` returns None).
        ``value``: the output at ``args``, where the caller has it (no ``forward`` call)."""
        self._needs("backward", "a gradient")
        res = self._res(args) if value is None else (*args, value)
        cts = self.adapter.backward(res, np.asarray(g, np.float64))
        return [
            cotangent(self._who, self.adapter, i, c, a.shape)
            for i, (c, a) in enumerate(zip(cts, args, strict=True))
        ]

    def linearize(self, args: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The output and its Jacobian in each argument, ``(size, *argument's shape)``, from
        one forward and ``size`` backward calls with unit cotangents (one backward call if
        the adapter is vectorized)."""
        self._needs("backward", "a Jacobian")
        res = self._res(args)
        value = np.asarray(res[len(args)], np.float64)
        units = np.eye(self.size).reshape((self.size, *self.shape))
        if self.adapter.vectorized:
            stacked = tuple(np.broadcast_to(r, (self.size, *np.shape(r))) for r in res)
            cts = self.adapter.backward(stacked, units)
            return value, [
                np.array(cotangent(self._who, self.adapter, i, c, (self.size, *a.shape), 1))
                for i, (c, a) in enumerate(zip(cts, args, strict=True))
            ]
        rows = [self.adapter.backward(res, unit) for unit in units]
        return value, [
            np.stack([cotangent(self._who, self.adapter, i, row[i], a.shape) for row in rows])
            if rows
            else np.zeros((0, *a.shape))
            for i, a in enumerate(args)
        ]

    def jacobians(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The Jacobians of ``linearize``, without the output."""
        return self.linearize(args)[1]

    def jvp(self, args: Sequence[np.ndarray], tangents: Sequence[np.ndarray | None]) -> np.ndarray:
        """The output's tangent: the adapter's own ``jvp`` if it has one, else from its
        Jacobians (``size`` backward calls)."""
        if overrides(self.adapter, "jvp"):
            out = self.adapter.jvp(self._res(args), tuple(tangents))
            if type(out) is tuple and len(out) == 1:  # (one output: a tuple of it is fine)
                (out,) = out
            return checked(f"{self._who}.jvp", "the tangent", out, self.shape)
        total = np.zeros(self.size)
        for jacobian, t in zip(self.jacobians(args), tangents, strict=True):
            if t is not None:
                total += jacobian.reshape(self.size, -1) @ np.ravel(t)
        return total.reshape(self.shape)


def _outputs(out: object) -> tuple:
    """What ``forward`` returned, as a tuple of its outputs (one output may come bare)."""
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)
