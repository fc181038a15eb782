"""SciPy's own calls of ``scipy.sparse.linalg``: ``eigsh``, ``svds``, ``expm_multiply`` and
``spsolve`` with SciPy's arguments, on a ``scipy.sparse`` matrix (its values constant), a
``jax.experimental.sparse.BCOO`` matrix (its ``data`` differentiable) or a dense 2-D array
(every entry stored, differentiable), run by the adapters on the matrix's CSR pattern."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse
from jax.experimental import sparse as jax_sparse

from .._shared._refusals import refuse_unsupported
from ..linalg.sparse_solve import SparseSolve
from .eigsh import Eigsh
from .expm_multiply import ExpmMultiply
from .svds import Svds


def csr_parts(owner: str, a: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, int], Any]:
    """``(indices, indptr, shape, data)``: ``a``'s CSR pattern, concrete, and its values on
    it, differentiable where ``a``'s are (duplicate entries summed, as SciPy sums them)."""
    if scipy.sparse.issparse(a):
        csr = scipy.sparse.csr_array(a, copy=True)
        csr.sum_duplicates()  # (sorts the indices too)
        return _pattern(csr.indices, csr.indptr, csr.shape) + (jnp.asarray(csr.data),)
    if isinstance(a, jax_sparse.BCOO):
        return _from_bcoo(owner, a)
    dense = jnp.asarray(a)
    if dense.ndim != 2:
        raise ValueError(
            f"{owner}: argument 'A' must be a scipy.sparse matrix, a BCOO matrix or a 2-D "
            f"array; got shape {dense.shape}."
        )
    rows, columns = dense.shape
    indptr = np.arange(rows + 1) * columns
    return _pattern(np.tile(np.arange(columns), rows), indptr, dense.shape) + (dense.ravel(),)


def _from_bcoo(owner: str, a: jax_sparse.BCOO) -> tuple:
    if a.n_batch or a.n_dense or a.ndim != 2:
        raise ValueError(
            f"{owner}: argument 'A' must be a 2-D BCOO matrix without batch or dense "
            f"dimensions; got n_batch={a.n_batch}, n_dense={a.n_dense}, shape {a.shape}."
        )
    try:
        where = np.asarray(a.indices)
    except jax.errors.TracerArrayConversionError:
        raise ValueError(
            f"{owner}: argument 'A' is a BCOO matrix whose indices are traced (under jit or "
            "vmap): its pattern must be known when the call is traced. Pass A from outside "
            "the transformation, or its data as an argument and rebuild it inside."
        ) from None
    rows, columns = a.shape
    inside = (where[:, 0] < rows) & (where[:, 1] < columns)  # (BCOO pads past the shape)
    keys = where[:, 0].astype(np.int64) * columns + where[:, 1]
    unique, slot = np.unique(keys[inside], return_inverse=True)  # sorted: CSR's order
    data = jax.ops.segment_sum(a.data[inside], jnp.asarray(slot), num_segments=len(unique))
    indptr = np.searchsorted(unique // columns, np.arange(rows + 1))
    return _pattern(unique % columns, indptr, a.shape) + (data,)


def _pattern(indices: Any, indptr: Any, shape: Any) -> tuple:
    return (
        tuple(int(i) for i in indices),
        tuple(int(i) for i in indptr),
        (int(shape[0]), int(shape[1])),
    )


def eigsh(
    A: Any,  # noqa: N803 (SciPy's names)
    k: int = 6,
    M: Any = None,  # noqa: N803
    sigma: float | None = None,
    which: str = "LM",
    v0: Any = None,
    ncv: int | None = None,
    maxiter: int | None = None,
    tol: float = 0,
    return_eigenvectors: bool = True,
    Minv: Any = None,  # noqa: N803
    OPinv: Any = None,  # noqa: N803
    mode: str = "normal",
) -> Any:
    """``scipy.sparse.linalg.eigsh(A, k, sigma=sigma, which=which)`` as ``Eigsh``: ``(w, v)``,
    ``w`` ascending, or ``w`` alone with ``return_eigenvectors=False``; differentiable in
    ``A``'s values (see ``Eigsh`` for the rules and the refusal at a repeated eigenvalue).
    The generalized problem (``M``, ``Minv``), ARPACK's settings and other modes are
    refused by name."""
    refuse_unsupported(
        "eigsh",
        {
            "M": (M, None, "the generalized problem is not offered"),
            "Minv": (Minv, None, "the generalized problem is not offered"),
            "OPinv": (OPinv, None, "sigma's factorization is SciPy's own"),
            "v0": (
                v0,
                None,
                "ARPACK starts from a fixed vector, so equal inputs give equal results",
            ),
            "ncv": (ncv, None, "ARPACK's basis size is SciPy's default"),
            "maxiter": (maxiter, None, "ARPACK runs to SciPy's default"),
            "tol": (tol, 0, "ARPACK converges to machine precision, as the rules need"),
            "mode": (mode, "normal", "only the normal shift-invert mode is offered"),
        },
    )
    indices, indptr, shape, data = csr_parts("eigsh", A)
    w, v = Eigsh(indices, indptr, shape, k=k, which=which, sigma=sigma)(data)
    return (w, v) if return_eigenvectors else w


def svds(
    A: Any,  # noqa: N803 (SciPy's names)
    k: int = 6,
    ncv: int | None = None,
    tol: float = 0,
    which: str = "LM",
    v0: Any = None,
    maxiter: int | None = None,
    return_singular_vectors: bool = True,
    solver: str = "arpack",
    rng: Any = None,
    options: dict | None = None,
) -> Any:
    """``scipy.sparse.linalg.svds(A, k)`` as ``Svds``: ``(u, s, vt)`` with ``s`` ascending,
    as SciPy orders them (``s`` alone with ``return_singular_vectors=False``);
    differentiable in ``A``'s values. The largest ``k`` only (``which="LM"``), by ARPACK."""
    refuse_unsupported(
        "svds",
        {
            "which": (which, "LM", "the largest singular values only"),
            "solver": (solver, "arpack", "ARPACK is the solver"),
            "v0": (v0, None, "ARPACK starts from a fixed vector"),
            "ncv": (ncv, None, "ARPACK's basis size is SciPy's default"),
            "maxiter": (maxiter, None, "ARPACK runs to SciPy's default"),
            "tol": (tol, 0, "ARPACK converges to machine precision, as the rules need"),
            "rng": (rng, None, "ARPACK starts from a fixed vector"),
            "options": (options, None, "ARPACK's settings are SciPy's defaults"),
        },
    )
    indices, indptr, shape, data = csr_parts("svds", A)
    u, s, vt = Svds(indices, indptr, shape, k=k)(data)
    u, s, vt = u[..., ::-1], s[..., ::-1], vt[..., ::-1, :]  # (Svds: descending)
    return (u, s, vt) if return_singular_vectors else s


def expm_multiply(
    A: Any,  # noqa: N803 (SciPy's names)
    B: Any,  # noqa: N803
    start: Any = None,
    stop: Any = None,
    num: int | None = None,
    endpoint: bool | None = None,
    traceA: Any = None,  # noqa: N803
) -> Any:
    """``scipy.sparse.linalg.expm_multiply(A, B)``, ``expm(A) @ B``, as ``ExpmMultiply``;
    differentiable in ``A``'s values and ``B``. ``B`` is (n,) or (n, p). With ``start``,
    ``stop`` and ``num``, SciPy's grid of times: ``expm(t A) @ B`` for ``t`` in
    ``numpy.linspace(start, stop, num, endpoint)``, stacked in front, each a call of its
    own (differentiable in ``start`` and ``stop`` as well)."""
    refuse_unsupported("expm_multiply", {"traceA": (traceA, None, "it is computed from A")})
    indices, indptr, shape, data = csr_parts("expm_multiply", A)
    b = jnp.asarray(B)
    if b.ndim not in (1, 2) or b.shape[0] != shape[1]:
        raise ValueError(
            f"expm_multiply: argument 'B' must be ({shape[1]},) or ({shape[1]}, p) for A of "
            f"shape {shape}; got shape {b.shape}."
        )
    call = ExpmMultiply(indices, indptr, shape)
    columns = b if b.ndim == 2 else b[:, None]
    if start is None and stop is None and num is None and endpoint is None:
        y = call(data, columns, jnp.ones((), columns.dtype))
        return y if b.ndim == 2 else y[:, 0]
    if start is None or stop is None or num is None:
        raise TypeError(
            "expm_multiply: arguments 'start', 'stop' and 'num' are SciPy's grid of times: "
            f"give all three or none; got start={start!r}, stop={stop!r}, num={num!r}."
        )
    endpoint = True if endpoint is None else endpoint
    fraction = np.arange(num) / (num - 1 if endpoint and num > 1 else num)
    times = start + (stop - start) * jnp.asarray(fraction, columns.dtype)
    y = jax.vmap(lambda t: call(data, columns, t))(times)
    return y if b.ndim == 2 else y[..., 0]


def spsolve(
    A: Any,  # noqa: N803 (SciPy's names)
    b: Any,
    permc_spec: str | None = None,
    use_umfpack: bool = True,
) -> Any:
    """``scipy.sparse.linalg.spsolve(A, b)`` as ``SparseSolve`` (SuperLU): ``x`` with ``A x
    = b``, ``b`` (n,) or (n, k), differentiable in ``A``'s values and ``b``. SuperLU's
    column ordering is SciPy's default."""
    refuse_unsupported(
        "spsolve", {"permc_spec": (permc_spec, None, "SuperLU's ordering is SciPy's default")}
    )
    indices, indptr, shape, data = csr_parts("spsolve", A)
    rhs = jnp.asarray(b)
    if shape[0] != shape[1] or rhs.ndim not in (1, 2) or rhs.shape[0] != shape[0]:
        raise ValueError(
            f"spsolve: A must be square and argument 'b' ({shape[0]},) or ({shape[0]}, k); got "
            f"A of shape {shape} and b of shape {rhs.shape}."
        )
    solve = SparseSolve(indices, indptr, shape)
    if rhs.ndim == 1:
        return solve(data, rhs)
    return jax.vmap(solve, (None, 1), 1)(data, rhs)
