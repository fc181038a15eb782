"""``ExpmMultiply``: ``expm(t a) @ b`` for a sparse ``a`` of fixed pattern, as
``scipy.sparse.linalg.expm_multiply``; its rules in ``b`` and ``t`` and its tangent in
``data`` are the same adapter again (on the 2n x 2n Fréchet block for ``data``)."""

from __future__ import annotations

import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg

import jaxbridge as jb

from .._failure import require_finite
from ._pattern import Pattern

NODES = 12
"""Gauss-Legendre nodes per panel of the Fréchet integral (``_ExpmMultiplyDataCotangent``):
on a panel of length ``h`` with ``h ||t a||_1 <= 1`` its error is below ``2^24 / 24!``,
about 3e-17, relative."""


class ExpmMultiply(jb.Adapter):
    """``expm(t a) @ b`` for a sparse ``a`` of fixed pattern, as
    ``scipy.sparse.linalg.expm_multiply`` (Al-Mohy and Higham): no dense matrix, no
    matrix exponential, only products with ``a``.

    For a SciPy CSR matrix ``m``: ``y = ExpmMultiply(m.indices, m.indptr, m.shape)(m.data, b,
    t)``. ``data`` (nnz,) holds the values on the pattern (any matrix: not necessarily
    symmetric; duplicate entries are summed), ``b`` is (n,) or (n, p), ``t`` a scalar; leading
    axes of ``data``, ``t`` and of a 2-D ``b`` are batch axes (``vmap`` a 1-D ``b`` for a
    batch of vectors). SciPy computes in float64; the result takes the inputs' dtype.

    Derivatives:

    - in ``b``: ``expm(t a) db``, and in ``t``: ``a expm(t a) b = a y`` (this adapter and
      a sparse product in JAX), every order in both modes; ``linear_in = ("b",)``.
    - in ``data``, forward mode: the Fréchet derivative, the top half of
      ``expm(t [[a, e], [0, a]]) [0; b]`` (Higham, Functions of Matrices, 3.2), this adapter
      on the 2n x 2n block pattern, so every order in forward mode.
    - in ``data``, reverse mode: ``t ∫₀¹ (expm(s t aᵀ) g)[r] (expm((1 - s) t a) b)[c] ds`` at
      each stored entry ``(r, c)``, by Gauss-Legendre quadrature on the host (``NODES``
      nodes on each of ``ceil(||t a||_1)`` panels, accurate to rounding): first order only
      in ``data`` (its own derivatives in ``b``, ``t`` and the cotangent are there, so
      mixed second derivatives with ``data`` work; a second reverse-mode derivative in
      ``data`` alone is an error naming the rule; ``jacfwd(jacfwd)`` works).

    Non-finite ``data``, ``b`` or ``t`` is a ``ValueError`` naming the argument.
    """

    indices: tuple[int, ...]
    indptr: tuple[int, ...]
    shape: tuple[int, int]

    signature = "(m),(n,p),()->(n,p)"
    linear_in = ("b",)

    def __post_init__(self) -> None:
        pattern = Pattern.checked(type(self).__name__, self.indices, self.indptr, self.shape)
        object.__setattr__(self, "indices", pattern.indices)
        object.__setattr__(self, "indptr", pattern.indptr)
        object.__setattr__(self, "shape", pattern.shape)

    @functools.cached_property
    def _pattern(self) -> Pattern:
        return Pattern(self.indices, self.indptr, self.shape)

    def __call__(self, data, b, t):
        if jnp.ndim(b) == 1:  # one vector: a one-column matrix
            return super().__call__(data, jnp.asarray(b)[:, None], t)[..., 0]
        return super().__call__(data, b, t)

    def output_specs(self, data, b, t):
        n, nnz = self.shape[0], len(self.indices)
        if data.shape != (nnz,) or b.shape[0] != n:
            raise ValueError(
                f"{type(self).__name__}: 'data' must have the pattern's {nnz} entries and 'b' "
                f"its {n} rows; got core shapes {data.shape} and {b.shape}."
            )
        return jax.ShapeDtypeStruct(b.shape, jb.result_dtype(data, b, t))

    def check(self, data, b, t):
        # (here, not in forward: a rule's result is refused with it where jit drops forward)
        for name, value in (("data", data), ("b", b), ("t", t)):
            require_finite(f"argument '{name}'", value, ValueError)

    def forward(self, data, b, t):
        a = self._pattern.matrix(data)
        y = _expm_multiply(float(t) * a, np.asarray(b, np.float64))
        return y.astype(jb.result_dtype(data, b, t))

    def pushforward(self, res, tangents):
        data, b, t, y = res
        ddata, db, dt = tangents
        terms = []
        if db is not None:
            terms.append(self(data, db, t))
        if dt is not None:
            terms.append(dt[..., None, None] * self._pattern.product(data, y))
        if ddata is not None and self._pattern.nnz:  # no stored entries: nothing to vary
            terms.append(self._frechet(data, ddata, b, t))
        return sum(terms[1:], terms[0]) if terms else None

    def _frechet(self, data, e, b, t):
        """``L(t a, t e) b``: the top half of ``expm(t [[a, e], [0, a]]) [0; b]``."""
        block, source = self._pattern.frechet_block
        batch = jnp.broadcast_shapes(data.shape[:-1], e.shape[:-1])
        data = jnp.broadcast_to(data, batch + data.shape[-1:])
        e = jnp.broadcast_to(e, batch + e.shape[-1:])
        # e scaled by a power of 2 to a's size (exact, undone after): the block's rounding is
        # relative to the whole block, so a tiny e would lose digits; L is linear in e
        size_a = jnp.max(jnp.abs(data), axis=-1, keepdims=True)
        size_e = jnp.max(jnp.abs(e), axis=-1, keepdims=True)
        scale = jnp.exp2(jnp.round(jnp.log2(jnp.where(size_e > 0, size_a / size_e, 1.0))))
        scale = jax.lax.stop_gradient(jnp.where(jnp.isfinite(scale) & (scale > 0), scale, 1.0))
        values = jnp.concatenate([data, e * scale], axis=-1)[..., source]
        n = self.shape[0]
        stacked = jnp.concatenate([jnp.zeros_like(b), b], axis=-2)
        top = ExpmMultiply(block.indices, block.indptr, block.shape)(values, stacked, t)[..., :n, :]
        return top / scale[..., None]

    def pullback(self, res, g):
        data, b, t, y = res
        transposed, order = self._pattern.transposed
        adjoint = ExpmMultiply(transposed.indices, transposed.indptr, transposed.shape)
        gb = adjoint(data[..., order], g, t)
        gt = jnp.sum(g * self._pattern.product(data, y), axis=(-2, -1))
        gdata = _ExpmMultiplyDataCotangent(self)(data, b, t, g)
        return gdata, gb, gt


class _ExpmMultiplyDataCotangent(jb.Adapter):
    """The cotangent of ``ExpmMultiply`` in ``data``, by quadrature of the Fréchet integral
    ``L(x, y) = ∫₀¹ expm(s x) y expm((1 - s) x) ds`` (host code: first order)."""

    owner: ExpmMultiply

    signature = "(m),(n,p),(),(n,p)->(m)"

    def forward(self, data, b, t, g):
        return self._quadrature(data, b, t, g)[0].astype(jb.result_dtype(data, b, t, g))

    def backward(self, res, g):
        raise NotImplementedError(_NO_SECOND_REVERSE)

    def jvp(self, res, tangents):
        """In ``b`` and ``g`` (it is linear in each) and in ``t``; not in ``data``."""
        data, b, t, g, _ = res
        ddata, db, dt, dg = tangents
        if ddata is not None:
            raise NotImplementedError(_NO_SECOND_REVERSE)
        _, along_t = self._quadrature(data, b, t, g, with_t=dt is not None)
        total = np.zeros(self.owner._pattern.nnz)
        if dt is not None:
            total += float(dt) * along_t
        if db is not None:
            total += self._quadrature(data, db, t, g)[0]
        if dg is not None:
            total += self._quadrature(data, b, t, dg)[0]
        return total.astype(jb.result_dtype(data, b, t, g))

    def _quadrature(self, data, b, t, g, with_t: bool = False):
        """The cotangent ``t ∫₀¹ p(s)[r] q(s)[c] ds`` with ``p(s) = expm(s t aᵀ) g``,
        ``q(s) = expm((1 - s) t a) b``, and (``with_t``) its derivative in ``t``."""
        pattern = self.owner._pattern
        t = float(t)
        a = pattern.matrix(data)
        x = t * a
        panels = max(1, math.ceil(float(abs(x).sum(axis=0).max())))
        unit_nodes, unit_weights = np.polynomial.legendre.leggauss(NODES)
        starts = np.arange(panels) / panels
        nodes = (starts[:, None] + (unit_nodes + 1) / (2 * panels)).ravel()
        weights = np.tile(unit_weights / (2 * panels), panels)
        # q(s) = expm((1 - s) x) b at every node, stepping down from s = 1
        q = np.empty((len(nodes),) + b.shape)
        current, at = np.asarray(b, np.float64), 1.0
        for i in range(len(nodes) - 1, -1, -1):
            current = _expm_multiply((at - nodes[i]) * x, current)
            q[i], at = current, nodes[i]
        # p(s) = expm(s xᵀ) g, stepping up from s = 0, summed against q as it goes
        integral, along_t = np.zeros(pattern.nnz), np.zeros(pattern.nnz)
        current, at = np.asarray(g, np.float64), 0.0
        xt, at_ = x.T.tocsr(), a.T.tocsr()
        rows, columns = pattern.rows, pattern.columns
        for i, s in enumerate(nodes):
            current = _expm_multiply((s - at) * xt, current)
            at = s
            integral += weights[i] * np.einsum("ep,ep->e", current[rows], q[i][columns])
            if with_t:  # d/dt: p' = s aᵀ p, q' = (1 - s) a q
                p_dot, q_dot = s * (at_ @ current), (1 - s) * (a @ q[i])
                along_t += weights[i] * (
                    np.einsum("ep,ep->e", p_dot[rows], q[i][columns])
                    + np.einsum("ep,ep->e", current[rows], q_dot[columns])
                )
        return t * integral, integral + t * along_t


_NO_SECOND_REVERSE = (
    "ExpmMultiply: the derivative of its reverse-mode rule in 'data' (the data cotangent, a "
    "quadrature) is not implemented, so second derivatives in 'data' need forward mode "
    "alone: jax.jacfwd(jax.jacfwd(f)), or jax.jvp of jax.jvp."
)


def _expm_multiply(a, b: np.ndarray) -> np.ndarray:
    if b.size == 0:  # SciPy divides by the number of columns (its norm estimate)
        return np.zeros(b.shape)
    with warnings.catch_warnings():
        # SciPy warns that it computes the trace of a sparse matrix; nothing to act on
        warnings.simplefilter("ignore", scipy.sparse.SparseEfficiencyWarning)
        return np.asarray(scipy.sparse.linalg.expm_multiply(a, b), np.float64)
