"""A user's JAX function ``fun(x, *args)`` as an Adapter of two flat vectors ``(x, theta)``:
what SciPy's own call forms (``minimize(fun, x0, args)``) hand the solver classes, which take
the objective or residual as an Adapter.

``x`` and ``args`` may be pytrees; on the device their leaves are raveled into ``x`` and
``theta`` (``Packing``), and the solvers differentiate in ``theta``. On the host ``fun`` is
compiled for the CPU backend and runs in float64 (SciPy iterates in float64), and every
derivative the solvers ask for comes from JAX: ``backward`` is its vjp, ``jacobian`` and
``hessian`` (the solvers' optional hooks) its ``jacrev`` and ``hessian``, exact where the
solvers would otherwise take differences. The user writes no ``backward``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb


@dataclasses.dataclass(frozen=True)
class Packing:
    """The shapes and dtypes of a pytree's leaves: its flat vector and back."""

    treedef: Any
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[np.dtype, ...]

    @classmethod
    def of(cls, tree: Any) -> Packing:
        leaves, treedef = jax.tree.flatten(tree)
        shapes = tuple(tuple(np.shape(leaf)) for leaf in leaves)
        return cls(treedef, shapes, tuple(jnp.result_type(leaf) for leaf in leaves))

    @property
    def size(self) -> int:
        return sum(math.prod(shape) for shape in self.shapes)

    def flat(self, tree: Any, dtype: Any) -> jax.Array:
        """The leaves, raveled and concatenated, as ``dtype``."""
        leaves = [jnp.ravel(jnp.asarray(leaf)).astype(dtype) for leaf in jax.tree.leaves(tree)]
        return jnp.concatenate(leaves) if leaves else jnp.zeros((0,), dtype)

    def unflat(self, vector: Any) -> Any:
        """The pytree from its flat vector: floating leaves in the vector's dtype (float64
        on the host), the others cast back to their own."""
        leaves, start = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            stop = start + math.prod(shape)
            leaf = vector[start:stop].reshape(shape)
            floating = jnp.issubdtype(dtype, jnp.floating)
            leaves.append(leaf if floating else leaf.astype(dtype))
            start = stop
        return jax.tree.unflatten(self.treedef, leaves)


def float_dtype() -> Any:
    """The dtype of the flat vectors on the device: JAX's default float (float32 unless
    64-bit mode is on)."""
    return jax.dtypes.canonicalize_dtype(np.float64)


class _JaxFunction(jb.Adapter):
    """``(x, theta) -> fun(x_tree, *args)`` for the solvers; subclasses fix the output."""

    fun: Callable
    x_packing: Packing
    args_packing: Packing
    role: str = "fun"  # how errors name it: the argument of SciPy's call it came from

    def called(self, x: Any, theta: Any) -> Any:
        """``fun`` at the flat ``(x, theta)``, in JAX (on the host or the device)."""
        return self.fun(self.x_packing.unflat(x), *self.args_packing.unflat(theta))

    def forward(self, x, theta):
        return _host(self, "value", x, theta)

    def backward(self, res, g):
        x, theta = res[:2]
        return _host(self, "pullback", x, theta, g)

    def jacobian(self, x, theta):
        """``(∂F/∂x, ∂F/∂θ)``, exact, for the solvers' hook."""
        return _host(self, "jacobian", x, theta)

    def hessian(self, x, theta):
        """``(∂²F/∂x², ∂²F/∂x∂θ)`` (with the output's axis first for a vector ``F``), exact,
        for the solvers' hook."""
        return _host(self, "hessian", x, theta)

    def backward_jvp(self, res, g, tangents):
        """``backward(res, g)``'s derivative along ``tangents``, ``g`` held (``Quad``'s and
        ``OdeSolve``'s hook for exact second derivatives)."""
        return _host(self, "backward_jvp", *res[:2], g, *_zeros_for_none(res[:2], tangents))


class JaxObjective(_JaxFunction):
    """A scalar ``fun``: ``minimize``'s objective."""

    signature = "(n),(p)->()"


class JaxIntegrand(_JaxFunction):
    """A scalar ``fun(x, *args)`` of a scalar ``x``: ``quad``'s integrand, ``"(),(p)->()"``."""

    signature = "(),(p)->()"

    def called(self, x: Any, theta: Any) -> Any:
        return self.fun(x, *self.args_packing.unflat(theta))


class JaxResidual(_JaxFunction):
    """A vector ``fun`` (its output raveled): ``root``'s and ``least_squares``' residual, a
    constraint."""

    signature = "(n),(p)->(m)"

    def output_specs(self, x, theta):
        out = jax.eval_shape(self.called, x, theta)
        return jax.ShapeDtypeStruct((*x.shape[:-1], math.prod(out.shape)), x.dtype)

    def called(self, x: Any, theta: Any) -> Any:
        return raveled(super().called(x, theta))


class JaxSquareResidual(JaxResidual):
    """A vector ``fun`` with as many outputs as ``x`` has entries: ``root``'s residual."""

    signature = "(n),(p)->(n)"

    def output_specs(self, x, theta):
        return jax.ShapeDtypeStruct(x.shape, x.dtype)


class JaxRhs(jb.Adapter):
    """``fun(t, y, *args)`` as ``OdeSolve``'s right-hand side ``"(),(n),(p)->(n)"``
    (``solve_ivp``'s ``fun``), with every hook ``OdeSolve`` asks for exact, from JAX:
    ``jacobian`` (``∂f/∂y``), ``jvp`` and ``backward_jvp`` (its second derivatives)."""

    signature = "(),(n),(p)->(n)"

    fun: Callable
    y_packing: Packing
    args_packing: Packing

    def called(self, t: Any, y: Any, theta: Any) -> Any:
        return raveled(self.fun(t, self.y_packing.unflat(y), *self.args_packing.unflat(theta)))

    def output_specs(self, t, y, theta):
        return jax.ShapeDtypeStruct(y.shape, y.dtype)

    def forward(self, t, y, theta):
        return _host(self, "value", t, y, theta)

    def backward(self, res, g):
        return _host(self, "pullback", *res[:3], g)

    def jvp(self, res, tangents):
        return _host(self, "pushforward", *res[:3], *_zeros_for_none(res[:3], tangents))

    def jacobian(self, t, y, theta):
        """``∂f/∂y``, (n, n), for the implicit methods' Newton iterations."""
        return _host(self, "jacobian", t, y, theta)

    def backward_jvp(self, res, g, tangents):
        """``backward(res, g)``'s derivative along ``tangents``, ``g`` held."""
        return _host(self, "backward_jvp", *res[:3], g, *_zeros_for_none(res[:3], tangents))


def raveled(tree: Any) -> jax.Array:
    """A function's output (an array or a pytree of them) as one flat vector, leaves in order."""
    leaves = [jnp.ravel(leaf) for leaf in jax.tree.leaves(tree)]
    return jnp.concatenate(leaves) if len(leaves) != 1 else leaves[0]


def _zeros_for_none(args: Any, tangents: Any) -> list[np.ndarray]:
    return [np.zeros(np.shape(a)) if t is None else t for a, t in zip(args, tangents)]


def square_output(owner: str, role: str, adapter: JaxSquareResidual, x: Any, theta: Any) -> None:
    """Refuse a ``fun`` whose output does not have ``x``'s size (a square system), naming it."""
    out = jax.eval_shape(adapter.called, x, theta)
    if out.shape != x.shape[-1:] or not jnp.issubdtype(out.dtype, jnp.floating):
        raise ValueError(
            f"{owner}: '{role}' must return as many real numbers as x0 has entries "
            f"({x.shape[-1]}), but it returns {out.dtype} of shape {out.shape}."
        )


def scalar_output(owner: str, role: str, adapter: JaxObjective, x: Any, theta: Any) -> None:
    """Refuse a ``fun`` whose value is not one real number, naming it."""
    out = jax.eval_shape(adapter.called, x, theta)
    if out.shape != () or not jnp.issubdtype(out.dtype, jnp.floating):
        raise ValueError(
            f"{owner}: '{role}' must return one real number (a 0-d floating array), but it "
            f"returns {out.dtype} of shape {out.shape}."
        )


def _host(adapter: _JaxFunction | JaxRhs, what: str, *arrays: np.ndarray) -> Any:
    """One of ``adapter``'s host computations, compiled for the CPU backend, in float64."""
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
        out = _compiled(adapter, what)(*(np.asarray(a, np.float64) for a in arrays))
        return jax.tree.map(np.array, out)  # (writable: the solvers update some in place)


@functools.lru_cache(maxsize=512)
def _compiled(adapter: _JaxFunction | JaxRhs, what: str) -> Callable:
    """The jitted host computation ``what`` of ``adapter`` (JAX keeps one program per shape)."""
    f = adapter.called
    arity = 3 if isinstance(adapter, JaxRhs) else 2  # ((t, y, theta) or (x, theta))

    def pullback(*args_and_g):
        *args, g = args_and_g
        out, pull = jax.vjp(f, *args)
        return pull(jnp.reshape(g, out.shape).astype(out.dtype))

    if what == "value":
        return jax.jit(f)
    if what == "pullback":
        return jax.jit(pullback)
    if what == "pushforward":
        return jax.jit(lambda *a: jax.jvp(f, a[:arity], a[arity:])[1])
    if what == "backward_jvp":
        return jax.jit(
            lambda *a: jax.jvp(lambda *x: pullback(*x, a[arity]), a[:arity], a[arity + 1 :])[1]
        )
    if what == "jacobian":
        # the solvers' (∂F/∂x, ∂F/∂θ); an ODE's ∂f/∂y alone
        return jax.jit(jax.jacfwd(f, argnums=1) if arity == 3 else jax.jacrev(f, argnums=(0, 1)))
    return jax.jit(jax.jacfwd(jax.jacrev(f, argnums=0), argnums=(0, 1)))


class JaxScalarEquation(JaxIntegrand):
    """A scalar ``f(x, *args)`` of a scalar ``x`` whose root is sought: ``root_scalar``'s
    ``f``, ``"(),(p)->()"``; on the host ``jacobian`` gives ``f'`` first and ``hessian``
    ``f''`` first (newton's and halley's ``fprime`` and ``fprime2``)."""
