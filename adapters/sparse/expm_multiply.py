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
import scipy.sparse
import scipy.sparse.linalg

import jaxbridge as jb

from .._shared._failure import require_finite
from ._pattern import Pattern

THETA = 5.0
"""The largest ``h ||t a - μ||₁`` of a panel of the Fréchet integral
(``_ExpmMultiplyDataCotangent``): larger panels take fewer sparse products per unit of norm
(Taylor degree 40 here, 8 a unit; 10 at 3, 7.5 at 6) but could let rounding grow by up to
``e^(2 THETA)`` where the series cancels; on the tests' nonnormal matrices (and Jordan-like
ones of norm 40) the gradient's error against dense ``expm`` did not change from 3 to 8."""

KEPT_BYTES = 2**27
"""The most memory the panels' Taylor terms may take, kept from the pass that steps
``[p; q]`` to the pass that integrates; beyond it they are computed again (twice the
sparse products, memory of ``2n`` vectors per panel, not ``2n (m + 1)``)."""


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
      each stored entry ``(r, c)`` on the host: Taylor series of ``p`` and ``q`` on panels
      of ``[0, 1]`` (``THETA``), their product integrated exactly by Gauss-Legendre
      nodes, accurate to rounding, about ``8 ||t a||_1`` sparse products): first order only
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
    blas_threads = 1  # the node values' matmul woke OpenBLAS's threads (see Eigsh)

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
        ``q(s) = expm((1 - s) t a) b``, and (``with_t``) its derivative in ``t``.

        ``x = t a`` shifted by ``μ = trace(x) / n`` (``p q`` then carries ``e^μ``, exactly);
        ``[0, 1]`` cut into ``K`` panels of length ``h`` with ``h ||x - μ||₁ <= THETA`` (the
        larger of the one- and infinity-norms). One pass of Taylor series of degree ``m``
        (the block-diagonal ``diag(xᵀ - μ, x - μ)`` on ``[p; q]``, ``m`` sparse products a
        panel) steps ``p`` up from ``s = 0`` and ``q`` down from ``s = 1`` at once, each
        panel's terms kept (``KEPT_BYTES``); in each panel ``p`` and ``q`` are then
        polynomials of degree ``m`` in ``s``, and ``m + 1`` Gauss-Legendre nodes integrate
        their product exactly:
        what is left is the Taylor remainder, below ``2^-53`` relative."""
        pattern = self.owner._pattern
        t = float(t)
        n, nnz = pattern.n, pattern.nnz
        b = np.asarray(b, np.float64)
        g = np.asarray(g, np.float64)
        if nnz == 0 or b.size == 0:
            return np.zeros(nnz), np.zeros(nnz)
        a = pattern.matrix(data)
        x = t * a
        mu = float(x.diagonal().sum()) / n
        shifted = scipy.sparse.csr_array(x - mu * scipy.sparse.eye_array(n, format="csr"))
        block = scipy.sparse.csr_array(scipy.sparse.block_diag([shifted.T, shifted], format="csr"))
        norm = float(abs(block).sum(axis=0).max()) if block.nnz else 0.0
        panels = max(1, math.ceil(norm / THETA))
        h = 1.0 / panels
        degree = _taylor_degree(h * norm)
        columns_b = b.shape[1]

        def taylor(z: np.ndarray) -> np.ndarray:
            """The Taylor terms ``h^j block^j z / j!``, ``j = 0 .. m``."""
            out = np.empty((degree + 1,) + z.shape)
            out[0] = z
            for j in range(degree):
                out[j + 1] = (block @ out[j]) * (h / (j + 1))
            return out

        # the states z_k = [p; q] at each panel's start, normalized (their log scales kept),
        # with their Taylor terms where these fit in KEPT_BYTES (else computed again below)
        keep = panels * (degree + 1) * 2 * n * columns_b * 8 <= KEPT_BYTES
        states = np.empty((panels, 2 * n, columns_b))
        kept: list[np.ndarray] = []
        logs = np.zeros((panels, 2))
        current = np.concatenate([g, b])
        log_p = log_q = 0.0
        for k in range(panels):
            size_p, size_q = np.abs(current[:n]).max(), np.abs(current[n:]).max()
            size_p = size_p if size_p > 0 else 1.0
            size_q = size_q if size_q > 0 else 1.0
            current[:n] /= size_p
            current[n:] /= size_q
            log_p, log_q = log_p + math.log(size_p), log_q + math.log(size_q)
            logs[k] = log_p, log_q
            states[k] = current
            if k == panels - 1 and not keep:
                break
            terms = taylor(current)
            if keep:
                kept.append(terms)
            current = terms.sum(axis=0)
        # p on panel k from s_k (step k), q from s_{k+1} = 1 - (K - 1 - k) h (step K - 1 - k)
        unit_nodes, unit_weights = np.polynomial.legendre.leggauss(degree + 1)
        u = (unit_nodes + 1) / 2
        weights = unit_weights * (h / 2)
        powers = np.arange(degree + 1)
        up = u[:, None] ** powers  # p(s_k + u h) = Σ_j u^j terms_j
        down = (1 - u)[:, None] ** powers  # q(s_k + u h) = Σ_j (1 - u)^j terms_j
        rows, columns = pattern.rows, pattern.columns
        integral, along_t = np.zeros(nnz), np.zeros(nnz)
        at_ = a.T.tocsr()
        for k in range(panels):
            other = panels - 1 - k
            factor = math.exp(mu + logs[k, 0] + logs[other, 1])
            if factor == 0.0:
                continue
            if keep:
                p_terms, q_terms = kept[k][:, :n], kept[other][:, n:]
            else:
                p_terms = taylor(np.concatenate([states[k, :n], states[other, n:]]))
                p_terms, q_terms = p_terms[:, :n], p_terms[:, n:]
            shape = (len(u), n, columns_b)
            p = (up @ p_terms.reshape(degree + 1, -1)).reshape(shape)  # (nodes, n, columns)
            q = (down @ q_terms.reshape(degree + 1, -1)).reshape(shape)
            integral += factor * _on_entries(weights, p, q, rows, columns)
            if with_t:  # d/dt: p' = s aᵀ p, q' = (1 - s) a q
                s = (k + u) * h
                nodes = len(u)
                flat_p = p.transpose(1, 0, 2).reshape(n, -1)
                flat_q = q.transpose(1, 0, 2).reshape(n, -1)
                p_dot = (at_ @ flat_p).reshape(n, nodes, columns_b).transpose(1, 0, 2)
                q_dot = (a @ flat_q).reshape(n, nodes, columns_b).transpose(1, 0, 2)
                along_t += factor * (
                    _on_entries(weights * s, p_dot, q, rows, columns)
                    + _on_entries(weights * (1 - s), p, q_dot, rows, columns)
                )
        return t * integral, integral + t * along_t


def _on_entries(weights, p, q, rows, columns) -> np.ndarray:
    """``Σ_i weights_i Σ_c p[i, r, c] q[i, c', c]`` at each entry ``(r, c')``: the node
    values gathered onto the entries a block of entries at a time (at most about
    ``2^22`` numbers each), so that many nodes on many entries take no large memory."""
    block = max(1, 2**22 // max(1, p.shape[0] * p.shape[2]))
    out = np.empty(len(rows))
    for start in range(0, len(rows), block):
        r, c = rows[start : start + block], columns[start : start + block]
        out[start : start + block] = np.einsum("i,iec,iec->e", weights, p[:, r], q[:, c])
    return out


def _taylor_degree(size: float) -> int:
    """The least ``m`` with ``size^(m+1) / (m+1)! <= 2^-53 e^(-2 size)``: the remainder of the
    Taylor series of ``expm(h x) z`` (``||h x||₁ <= size``), relative to the smallest the
    result can be, ``e^(-size) ||z||``, with a factor ``e^(-size)`` to spare."""
    bound = 2.0**-53 * math.exp(-2 * size)
    m, term = 0, size  # term = size^(m+1) / (m+1)!
    while term > bound:
        m += 1
        term *= size / (m + 1)
    return m


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
