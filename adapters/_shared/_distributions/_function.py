"""The adapters behind every distribution method: one class per number of shape parameters,
the routine (``"t.ppf"``, ``"gammainc"``, ...) a static parameter.

``OneShapeFunction(routine)(a, x)`` and ``TwoShapeFunction(routine)(a, b, x)`` evaluate a
standardized ``cdf``, ``sf``, ``logcdf``, ``logsf``, ``ppf`` or ``isf`` with SciPy on the host.
With ``f`` the density and ``F_θ = ∂F/∂θ`` the derivatives of the cdf in the shapes (a bridged
call of ``CdfShapeGradient``, exact, on the host), the partials are ``cdf``: ``(F_θ, f)``;
``sf``: ``(-F_θ, -f)``; ``logcdf``: ``(F_θ, f)/F``; ``logsf``: ``(-F_θ, -f)/S``; ``ppf``:
``(-F_θ, 1)/f`` at the quantile; ``isf``: ``(-F_θ, -1)/f``. The forward computes their factors
(``f``, ``f/F``, ``1/f``, ...) on the host in float64, from the family's log-density there: in
float32 the log-density's terms cancel (``(a - 1) log x - x - log Γ(a)``: 20 to 160 ulps off
on a CPU at larger shapes, more with a TPU's own ``exp`` and ``log``). In the rules each factor is
``host · exp(E - E)`` with ``E`` its logarithm in JAX, the second ``E`` held constant: the
host's value, ``E``'s derivatives. The output enters the rules, so every order works in ``x``;
in the shapes, first order, and the mixed second derivatives in a shape and ``x``
(``_CdfShapeGradient`` is differentiable in ``x``; a second derivative in the shapes is NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
import scipy.stats

import jaxbridge as jb

from .._host_values import host_factor
from .._rules import times, total
from ._families import FAMILIES, Family, t_quantile

KINDS = ("cdf", "sf", "logcdf", "logsf", "ppf", "isf")
# scipy.special's names for the gamma and beta cdf and sf, in scipy.special's argument order
SPECIAL = {
    "gammainc": ("gamma", "cdf", scipy.special.gammainc),
    "gammaincc": ("gamma", "sf", scipy.special.gammaincc),
    "betainc": ("beta", "cdf", scipy.special.betainc),
}


@dataclass(frozen=True)
class Routine:
    family: Family
    kind: str
    value: Any  # the host function, shapes first: value(*shapes, x)


def routine(name: str) -> Routine:
    """``"t.ppf"`` (a family and a kind) or one of ``SPECIAL``'s names."""
    if name in SPECIAL:
        family, kind, value = SPECIAL[name]
        return Routine(FAMILIES[family], kind, value)
    family, _, kind = name.partition(".")
    if family not in FAMILIES or kind not in KINDS:
        raise ValueError(
            f"Unknown routine {name!r}: expected 'family.kind' with a family among "
            f"{sorted(FAMILIES)} and a kind among {KINDS}, or one of {sorted(SPECIAL)}."
        )
    method = getattr(scipy.stats, family)
    return Routine(FAMILIES[family], kind, lambda *a: getattr(method, kind)(a[-1], *a[:-1]))


def _shape(raw: np.ndarray) -> np.ndarray:
    """A shape parameter in [1/2, 8]."""
    return 0.5 * 16.0 ** ((raw + 1) / 2)


def _probability(raw: np.ndarray) -> np.ndarray:
    """A probability in [0.05, 0.95]."""
    return 0.5 + 0.45 * raw


def _points(family: Family):
    """Points well inside the support, where the density is not small."""
    low, high = family.support
    if high == 1:
        return lambda raw: 0.5 + 0.4 * raw
    if low == 0:
        return lambda raw: 2.0 ** (1.5 * raw)
    # the t: not centred on 0, which Hypothesis draws first, and where SciPy's t.cdf for
    # df = 1 is 1.6e-9 off at x = 1e-8 (a finite difference of it was then 1.4% off)
    return lambda raw: 2.0 * raw + 0.25


class _Function(jb.Adapter):
    """What both arities share; see the module docstring."""

    routine: str
    vectorized = True

    def __post_init__(self):
        found = routine(self.routine)
        if len(found.family.shapes) != len(self.signature.split(",")) - 1:
            raise ValueError(
                f"{type(self).__name__} takes {len(self.signature.split(',')) - 1} shape "
                f"parameters but {self.routine!r} has {len(found.family.shapes)}: use "
                f"{'TwoShapeFunction' if len(found.family.shapes) == 2 else 'OneShapeFunction'}."
            )

    @property
    def domains(self):
        found = routine(self.routine)
        names = ("a", "b")[: len(found.family.shapes)]
        x = _probability if found.kind in ("ppf", "isf") else _points(found.family)
        return {**{n: _shape for n in names}, "x": x}

    def residual_specs(self, *args):
        spec = jax.ShapeDtypeStruct((), jb.result_dtype(*args))
        return spec, spec  # the factors of the x and shape partials, from the host

    def output_specs(self, *args):
        shape = jnp.broadcast_shapes(*(a.shape for a in args))
        return jax.ShapeDtypeStruct(shape, jb.result_dtype(*args))

    def forward(self, *args, residuals=True):
        found = routine(self.routine)
        dtype = jb.result_dtype(*args)
        shapes = [np.asarray(s, np.float64) for s in args[:-1]]
        x = np.asarray(args[-1], np.float64)
        if found.family.name == "t" and found.kind in ("ppf", "isf"):
            value = t_quantile(found.kind, shapes[0], x)
        else:
            with np.errstate(all="ignore"):
                value = np.asarray(found.value(*shapes, x))
        if not residuals:  # the value alone: a call not differentiated computes no factors
            return value.astype(dtype, copy=False)
        point = value if found.kind in ("ppf", "isf") else x
        log_density = found.family.host_log_density(*shapes, point)
        with np.errstate(all="ignore"):
            factors = [
                np.broadcast_to(sign * np.exp(e), value.shape).astype(dtype)
                for sign, e in _factor_logs(found.kind, log_density, value)
            ]
        return value.astype(dtype, copy=False), *factors

    def _partials(self, res, need_shapes: bool):
        """``(∂/∂shapes, ∂/∂x)`` of the output, as JAX arrays; ``None`` for an integer shape
        (held fixed) or when ``need_shapes`` is false."""
        *shapes, x, out, dx_host, scale_host = res
        found = routine(self.routine)
        family, kind = found.family, found.kind
        dtype = out.dtype
        floats = [s.astype(dtype) for s in shapes]
        point = out if kind in ("ppf", "isf") else x.astype(dtype)
        log_density = family.log_kernel(*floats, point) - family.log_normalizer(*floats)
        (_, dx_log), (_, scale_log) = _factor_logs(kind, log_density, out)
        dx = host_factor(dx_host, dx_log)
        # where SciPy's value is NaN (x or q outside the domain, an invalid shape) so is
        # every derivative: the density's formula gave 0 or ±inf there (gammainc(2, -1))
        undefined = jnp.isnan(out)
        dx = jnp.where(undefined, jnp.nan, dx)
        differentiable = [jnp.issubdtype(s.dtype, jnp.floating) for s in shapes]
        if not (need_shapes and any(differentiable)):
            return [None] * len(shapes), dx
        scale = host_factor(scale_host, scale_log)
        gradient = cdf_shape_gradient(family.name, *floats, point)
        sign = -1.0 if kind in ("sf", "logsf", "isf") else 1.0
        ds = [
            jnp.where(undefined, jnp.nan, sign * g * scale) if d else None
            for g, d in zip(gradient, differentiable)
        ]
        return ds, dx

    def pullback(self, res, g):
        ds, dx = self._partials(res, need_shapes=True)
        return (*(None if d is None else times(g, d) for d in ds), times(g, dx))

    def pushforward(self, res, tangents):
        need = any(t is not None for t in tangents[:-1])
        ds, dx = self._partials(res, need_shapes=need)
        partials = [*ds, dx]
        return total(
            None if t is None or d is None else times(t, d) for t, d in zip(tangents, partials)
        )


class OneShapeFunction(_Function):
    """A standardized distribution function of a one-shape family (``t``, ``gamma``,
    ``chi2``, ``invgamma``) at ``x``, or ``scipy.special.gammainc``/``gammaincc``:
    ``OneShapeFunction("t.cdf")(df, x)``. See the module docstring for the rules."""

    signature = "(),()->()"
    argument_names = ("a", "x")


class TwoShapeFunction(_Function):
    """A standardized distribution function of a two-shape family (``beta``, ``f``) at
    ``x``, or ``scipy.special.betainc``: ``TwoShapeFunction("beta.ppf")(a, b, q)``."""

    signature = "(),(),()->()"
    argument_names = ("a", "b", "x")


def _factor_logs(kind: str, log_density, out):
    """``(sign, log|factor|)`` of the ``x`` partial and of the shape partials' scale (which
    multiplies ``± F_θ``), from the log-density at the point and the output, in NumPy or JAX
    (no transcendental function here: the host's exponentials are the values)."""
    sign = -1.0 if kind in ("sf", "logsf", "isf") else 1.0
    if kind in ("cdf", "sf"):
        return (sign, log_density), (1.0, 0 * out)  # (out is finite or NaN here)
    if kind in ("logcdf", "logsf"):  # f/F and 1/F, F = exp(out)
        return (sign, log_density - out), (1.0, -out)
    return (sign, -log_density), (-sign, -log_density)  # the quantiles: ±1/f at the quantile


class _CdfShapeGradient(jb.Adapter):
    """``∂F/∂θ`` of a family's standardized cdf at ``x``, one output per shape, exact, on the
    host (``_shape_derivatives``). Differentiable in ``x`` to every order
    (``∂²F/∂θ∂x = ∂f/∂θ = f ∂(log f)/∂θ``, the host's ``f``, JAX's ``∂(log f)/∂θ``); a second
    derivative in the shapes is NaN (not implemented). It could not be a ``TypeError``: JAX
    differentiates the whole pullback, so ``grad(grad(cdf, x), θ)`` would raise through the
    shape cotangent it then drops."""

    family: str
    vectorized = True

    def residual_specs(self, *args):
        return jax.ShapeDtypeStruct((), jb.result_dtype(*args))  # the density at x

    def output_specs(self, *args):
        shape = jnp.broadcast_shapes(*(a.shape for a in args))
        spec = jax.ShapeDtypeStruct(shape, jb.result_dtype(*args))
        return spec if len(args) == 2 else (spec, spec)

    def forward(self, *args):
        family = FAMILIES[self.family]
        dtype = jb.result_dtype(*args)
        shapes = [np.asarray(s, np.float64) for s in args[:-1]]
        shapes_x = np.broadcast_arrays(*shapes, np.asarray(args[-1], np.float64))
        with np.errstate(all="ignore"):
            gradient = family.cdf_shape_gradient(*shapes_x)
            density = np.exp(family.host_log_density(*shapes_x))
        return (*(g.astype(dtype) for g in gradient), density.astype(dtype))

    def _dx(self, res):
        """``∂f/∂θ`` for each shape: the derivatives of the outputs in ``x``."""
        family = FAMILIES[self.family]
        count = len(family.shapes)
        shapes, x, density_host = res[:count], res[count], res[-1]

        def density(*shapes):
            log_density = family.log_kernel(*shapes, x) - family.log_normalizer(*shapes)
            return host_factor(density_host, log_density)

        return [
            jax.jvp(
                lambda s, i=i: density(*shapes[:i], s, *shapes[i + 1 :]),
                (shapes[i],),
                (jnp.ones_like(shapes[i]),),
            )[1]
            for i in range(count)
        ]

    def pullback(self, res, g):
        g = g if isinstance(g, tuple) else (g,)
        dx = self._dx(res)
        unknown = _not_implemented(total(jnp.abs(gi) for gi in g))
        return (*(unknown for _ in dx), total(gi * d for gi, d in zip(g, dx)))

    def pushforward(self, res, tangents):
        *ts, t = tangents
        dx = self._dx(res)
        unknown = total(_not_implemented(s) for s in ts if s is not None)
        out = [total((None if t is None else t * d, unknown)) for d in dx]
        return out[0] if len(out) == 1 else tuple(out)


def _not_implemented(weight):
    """NaN where ``weight`` (a tangent or cotangent reaching a shape) is nonzero, else 0: a
    second derivative in the shapes is NaN, never a silent zero, while the explicit zero
    tangents of ``jax.hessian``'s other columns leave the mixed and ``x`` blocks exact."""
    return jnp.where(weight != 0, jnp.nan, 0.0).astype(weight.dtype)


class _OneShapeGradient(_CdfShapeGradient):
    signature = "(),()->()"
    argument_names = ("a", "x")


class _TwoShapeGradient(_CdfShapeGradient):
    signature = "(),(),()->(),()"
    argument_names = ("a", "b", "x")


def _shape_gradient(family: Family) -> _CdfShapeGradient:
    cls = _OneShapeGradient if len(family.shapes) == 1 else _TwoShapeGradient
    return cls(family.name)


def cdf_shape_gradient(family: str, *args: jax.Array) -> tuple[jax.Array, ...]:
    """``∂F/∂θ`` of ``family``'s standardized cdf at ``x`` (the last of ``args``, after the
    shapes), one array per shape, exact, bridged (``_CdfShapeGradient``): what the quantiles'
    implicit derivatives ``∂x/∂θ = -(∂F/∂θ)/f(x)`` share, here (``ppf``, ``isf``) and in
    ``special`` (``gammaincinv``, ``betaincinv``)."""
    gradient = _shape_gradient(FAMILIES[family])(*args)
    return gradient if isinstance(gradient, tuple) else (gradient,)
