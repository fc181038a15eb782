"""``IsotonicRegression``: SciPy's ``isotonic_regression`` (SciPy 1.12 or newer), the fit
differentiable with its blocks held fixed."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy
import scipy.optimize

import jaxbridge as jb

from .._shared._result import OptimizeResult
from .._shared._rules import compiled
from ._scipy_forms import floating

# (SciPy 1.11, which the package supports, has no isotonic_regression: the adapter is
# refused there when it is made, rather than the package failing to import)
_SCIPYS = getattr(scipy.optimize, "isotonic_regression", None)


class IsotonicRegression(jb.Adapter):
    """The nondecreasing (or nonincreasing) sequence nearest ``y`` in weighted least
    squares, with SciPy's pool-adjacent-violators on the host: ``x =
    IsotonicRegression()(y, weights)``, as ``scipy.optimize.isotonic_regression(y,
    weights=weights).x``. Needs SciPy 1.12 or newer.

    ``y`` and ``weights`` are (n,) (``weights`` positive; omitted, ones); ``x`` is (n,),
    constant on SciPy's blocks, each block's value the weighted mean of its ``y``. Leading
    axes are batch axes.

    Parameters:
        increasing: a nondecreasing fit (the default), or a nonincreasing one.

    Derivatives: in ``y`` and ``weights``, to every order, with the blocks held fixed: the
    block mean ``Σ w y / Σ w`` written in JAX (``∂x/∂y_i = w_i / W`` and ``∂x/∂w_i = (y_i -
    x) / W`` on ``i``'s block of weight ``W``). That is the fit's derivative wherever
    neighbouring blocks have different values and no block has a leading part with its
    own mean (where the blocks would merge or split under a small change, the fit has a
    kink, and this is the derivative along SciPy's blocks).
    """

    increasing: bool = True

    signature = "(n),(n)->(n)"
    domains = {"weights": "positive"}

    def __call__(self, y: Any, weights: Any = None) -> Any:
        (y,) = floating(y)  # (SciPy fits integers in floating point)
        weights = jnp.ones(y.shape[-1:], y.dtype) if weights is None else weights
        return super().__call__(y, weights)

    def __post_init__(self) -> None:
        if _SCIPYS is None:
            raise ValueError(
                "IsotonicRegression needs scipy.optimize.isotonic_regression, new in SciPy "
                f"1.12; this is SciPy {scipy.__version__}."
            )
        if not isinstance(self.increasing, bool):
            raise ValueError(
                f"IsotonicRegression: parameter 'increasing' must be True or False; got "
                f"{self.increasing!r}."
            )

    def residual_specs(self, y, weights):
        return jax.ShapeDtypeStruct(y.shape[-1:], np.int32)  # each entry's block

    def check(self, y, weights):
        if not np.isfinite(y).all():
            raise ValueError("argument 'y' has non-finite entries (NaN or inf).")
        if not (np.isfinite(weights).all() and (weights > 0).all()):
            raise ValueError("argument 'weights' must hold positive finite numbers.")

    def forward(self, y, weights):
        assert _SCIPYS is not None  # (checked when the adapter was made)
        result = _SCIPYS(y, weights=weights, increasing=self.increasing)
        blocks = np.repeat(np.arange(len(result.blocks) - 1), np.diff(result.blocks))
        return result.x.astype(jb.result_dtype(y, weights)), blocks.astype(np.int32)

    @staticmethod
    def _means(y: jax.Array, weights: jax.Array, blocks: jax.Array) -> jax.Array:
        """Each entry's block mean ``Σ w y / Σ w`` (blocks numbered from 0 along the last
        axis; batch axes in front, broadcast together)."""
        shape = jnp.broadcast_shapes(y.shape, weights.shape, blocks.shape)
        y, weights, blocks = (jnp.broadcast_to(v, shape) for v in (y, weights, blocks))
        members = blocks[..., :, None] == jnp.arange(shape[-1])  # (entry, block)
        weighted = jnp.einsum("...i,...ib->...b", weights * y, members)
        totals = jnp.einsum("...i,...ib->...b", weights, members)
        means = weighted / jnp.where(totals > 0, totals, 1)
        return jnp.take_along_axis(means, blocks, -1)

    @compiled
    def pullback(self, res, g):
        y, weights, _, blocks = res
        return jax.vjp(lambda y, w: self._means(y, w, blocks), y, weights)[1](g)

    @compiled
    def pushforward(self, res, tangents):
        y, weights, _, blocks = res
        # (a primal the batch broadcasts takes its tangent's shape; a zero tangent, its own)
        primals = [
            v if t is None else jnp.broadcast_to(v, t.shape) for v, t in zip((y, weights), tangents)
        ]
        tangents = [jnp.zeros_like(v) if t is None else t for v, t in zip(primals, tangents)]
        return jax.jvp(lambda y, w: self._means(y, w, blocks), tuple(primals), tuple(tangents))[1]


def isotonic_regression(y: Any, *, weights: Any = None, increasing: bool = True) -> OptimizeResult:
    """``scipy.optimize.isotonic_regression(y, weights=weights, increasing=increasing)``:
    SciPy's result as an ``OptimizeResult`` pytree holding the fit ``x``, from
    ``IsotonicRegression(increasing)(y, weights)``. SciPy's ``weights`` and ``blocks`` (one
    entry per block, as many as the data make) have no fixed shape and are not kept."""
    return OptimizeResult(x=IsotonicRegression(increasing=increasing)(y, weights))
