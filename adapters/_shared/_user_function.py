"""A user's ``Adapter`` called directly on the host, with float64 NumPy arrays, from inside
SciPy's loops (an objective in ``scipy.optimize``, an ODE right-hand side or an integrand
in ``scipy.integrate``).

SciPy calls back into Python many times per solve, on the host: there the adapter's host
methods are called directly (never through JAX, which could hang there), and what they
return is checked here (``_host_cotangents``), since the bridge's checks are not in the way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import jaxbridge as jb
from jaxbridge.internal import overrides

from ._host_cotangents import checked, cotangent


class UserFunction:
    """A user's adapter of one output, called on the host with float64 NumPy arrays: its
    value, vector-Jacobian products, Jacobians by unit cotangents and Jacobian-vector
    products.

    ``role`` names it in errors before its class (``"OdeSolve's rhs"``); ``shape``, where
    the caller declares it, is the output's core shape, which ``value`` checks. ``backward``
    and ``jvp`` get ``(*inputs, output, *residuals)``, as from the bridge.
    """

    def __init__(
        self, adapter: jb.Adapter, role: str = "", shape: tuple[int, ...] | None = None
    ) -> None:
        self.adapter = adapter
        self.shape = shape
        self.name = f"{role} {type(adapter).__name__}".lstrip()  # names it in errors
        self._has: set[str] = set()  # the host methods found defined

    def outputs(self, args: Sequence[np.ndarray]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """``forward``'s output, in float64, and its residuals, at ``args``."""
        result = self.adapter.forward(*args)
        if not isinstance(result, tuple):  # (as the bridge reads it: a tuple holds several)
            return np.asarray(result, np.float64), ()
        return np.asarray(result[0], np.float64), tuple(map(np.asarray, result[1:]))

    def residuals(self, args: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """``backward``'s ``res`` at ``args``, from one ``forward`` call."""
        out, extras = self.outputs(args)
        return (*args, out, *extras)

    def value(self, *args: np.ndarray) -> np.ndarray:
        """The output, as a float64 array of the declared shape."""
        out = self.adapter.forward(*args)
        if type(out) is np.ndarray and out.dtype == np.float64 and out.shape == self.shape:
            return out  # (the common case, at every solver step: nothing to convert)
        out = np.asarray(out[0] if isinstance(out, tuple) else out, np.float64)
        if out.shape != self.shape:
            raise ValueError(
                f"{self.name}.forward returned shape {out.shape}, expected {self.shape}."
            )
        return out

    def needs(self, method: str, purpose: str) -> None:
        """Refuse an adapter that does not define ``method``, which ``purpose`` needs."""
        if method not in self._has:
            if not overrides(self.adapter, method):
                raise TypeError(f"{self.name} defines no host `{method}`, which {purpose} needs.")
            self._has.add(method)  # (asked at every step of an adjoint)

    def pullback(self, res: Sequence[np.ndarray], g: np.ndarray, count: int) -> list[np.ndarray]:
        """``backward`` with the cotangent ``g`` at ``res``: the checked cotangents of the
        first ``count`` arguments (the others go unchecked and unused)."""
        cts = self.adapter.backward(res, g)
        return [cotangent(self.name, self.adapter, i, cts[i], res[i].shape) for i in range(count)]

    def pullbacks(self, res: Sequence[np.ndarray], gs: np.ndarray, count: int) -> list[np.ndarray]:
        """``pullback`` for each cotangent in the stack ``gs``: each of the first ``count``
        arguments' cotangents stacked, ``(len(gs), *its shape)``.

        One ``backward`` call per cotangent, or one for a vectorized adapter: ``res`` a
        batch of one, broadcast against the cotangents (a gufunc's size-1 axis), so that the
        user's backward computes what depends on ``res`` alone once, not once per cotangent.
        """
        k = len(gs)
        if self.adapter.vectorized:
            cts = self.adapter.backward(tuple(r[None] for r in res), gs)
            return [
                cotangent(self.name, self.adapter, i, cts[i], (k, *res[i].shape), 1)
                for i in range(count)
            ]
        shapes = [a.shape for a in res[:count]]
        stacks = [np.empty((k, *shape)) for shape in shapes]
        for j, g in enumerate(gs):
            cts = self.adapter.backward(res, np.asarray(g))
            for i, shape in enumerate(shapes):
                stacks[i][j] = cotangent(self.name, self.adapter, i, cts[i], shape)
        return stacks

    def vjp(
        self, args: Sequence[np.ndarray], g: np.ndarray, value: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """One float64 cotangent per argument (zeros where ``backward`` returns None).
        ``value``: the output at ``args``, where the caller has it (no ``forward`` call)."""
        self.needs("backward", "a gradient")
        res = self.residuals(args) if value is None else (*args, value)
        return self.pullback(res, np.asarray(g, np.float64), len(args))

    def linearize(self, args: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The output and its Jacobian in each argument, ``(output's size, *argument's
        shape)``, from one forward call and ``pullbacks`` of the unit cotangents."""
        self.needs("backward", "a Jacobian")
        res = self.residuals(args)
        out = res[len(args)]
        units = np.eye(out.size).reshape((out.size, *out.shape))
        return out, self.pullbacks(res, units, len(args))

    def jvp(self, args: Sequence[np.ndarray], tangents: Sequence[np.ndarray | None]) -> np.ndarray:
        """The output's tangent: the adapter's own ``jvp`` if it has one, else from its
        Jacobians (``linearize``)."""
        if overrides(self.adapter, "jvp"):
            res = self.residuals(args)
            out = self.adapter.jvp(res, tuple(tangents))
            if type(out) is tuple and len(out) == 1:  # (one output: a tuple of it is fine)
                (out,) = out
            return checked(f"{self.name}.jvp", "the tangent", out, res[len(args)].shape)
        value, jacobians = self.linearize(args)
        total = np.zeros(value.size)
        for jacobian, t in zip(jacobians, tangents, strict=True):
            if t is not None:
                total += jacobian.reshape(value.size, -1) @ np.ravel(t)
        return total.reshape(value.shape)
