"""``scipy.spatial.distance``'s call forms: ``cdist(XA, XB, metric, **kwargs)`` and
``pdist(X, metric, **kwargs)`` with SciPy's arguments, on ``Cdist`` and ``Pdist``; SciPy's
distances between two vectors (``euclidean(u, v)``, ``cosine(u, v, w)``, ``minkowski(u, v,
p, w)``, ...), each a one-pair ``Cdist``; and ``squareform``, the condensed distances as a
square matrix and back, in JAX.

Examples:
    >>> import numpy as np
    >>> from jaxbridge.adapters.spatial import distance
    >>> XA, XB = np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[3.0, 4.0]])
    >>> np.asarray(distance.cdist(XA, XB, "minkowski", p=1)).tolist()
    [[7.0], [5.0]]
    >>> np.asarray(distance.pdist(XA, "cityblock")).tolist()
    [2.0]
    >>> float(distance.euclidean([0.0, 0.0], [3.0, 4.0]))
    5.0
    >>> np.asarray(distance.squareform(distance.pdist(XA, "cityblock"))).tolist()
    [[0.0, 2.0], [2.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from ._distances import Metric
from .cdist import Cdist
from .pdist import Pdist

_KEYWORDS = ("p", "w", "V", "VI")  # SciPy's keywords for the continuous metrics


def cdist(
    XA: Any,  # noqa: N803 (SciPy's names)
    XB: Any,  # noqa: N803
    metric: Metric = "euclidean",
    *,
    out: Any = None,
    **kwargs: Any,
) -> Any:
    """``scipy.spatial.distance.cdist(XA, XB, metric, **kwargs)`` as
    ``Cdist(metric, p)(XA, XB, w=w, V=V, VI=VI)``: the (m, k) distances between the rows of
    ``XA`` (m, n) and ``XB`` (k, n), differentiable in both and in ``w``, ``V`` and ``VI``
    (see ``Cdist``).

    ``kwargs`` are SciPy's: ``p`` (``"minkowski"`` only, default 2), ``w`` (weights),
    ``V`` (``"seuclidean"``), ``VI`` (``"mahalanobis"``). ``metric`` is one of SciPy's
    continuous metrics, by name; a callable, ``out`` and other keywords are refused."""
    p, parameters = _options("cdist", metric, out, kwargs)
    return Cdist(metric, p)(XA, XB, **parameters)


def pdist(
    X: Any,  # noqa: N803 (SciPy's names)
    metric: Metric = "euclidean",
    *,
    out: Any = None,
    **kwargs: Any,
) -> Any:
    """``scipy.spatial.distance.pdist(X, metric, **kwargs)`` as ``Pdist(metric, p)(X, w=w,
    V=V, VI=VI)``: the m (m - 1) / 2 distances between the rows of ``X`` (m, n), condensed
    as SciPy's, differentiable in ``X`` and in ``w``, ``V`` and ``VI`` (see ``Pdist``).
    ``kwargs`` as ``cdist``'s."""
    p, parameters = _options("pdist", metric, out, kwargs)
    return Pdist(metric, p)(X, **parameters)


def _options(owner: str, metric: Any, out: Any, kwargs: dict[str, Any]) -> tuple[Any, dict]:
    """``p`` and the parameter arrays from SciPy's keywords, or a ``TypeError`` naming the
    one this call form does not take."""
    if not isinstance(metric, str):
        raise TypeError(
            f"{owner}: argument 'metric' must be the name of one of SciPy's continuous "
            f"metrics ('euclidean', 'cityblock', ...); got {metric!r} (a callable metric "
            "has no derivative rule here: write it in JAX)."
        )
    if out is not None:
        raise TypeError(
            f"{owner}: argument 'out' (SciPy's output buffer) is not taken: JAX arrays are "
            "immutable, and the distances are returned."
        )
    for name in kwargs:
        if name not in _KEYWORDS:
            raise TypeError(
                f"{owner}: argument {name!r} is not one of SciPy's keywords for the "
                f"continuous metrics ({', '.join(map(repr, _KEYWORDS))})."
            )
    p = kwargs.pop("p", None)
    if p is not None and metric != "minkowski":
        raise TypeError(
            f"{owner}: argument 'p' is the order of the 'minkowski' metric, not taken by "
            f"{metric!r} (as SciPy's)."
        )
    return (2.0 if p is None else p), kwargs


def _pair(metric: Metric, u: Any, v: Any, p: float = 2.0, **parameters: Any) -> Any:
    """SciPy's distance between the vectors ``u`` and ``v`` (n,): ``Cdist`` of one pair."""
    u, v = jnp.asarray(u), jnp.asarray(v)
    if u.ndim != 1 or v.shape != u.shape:
        raise ValueError(
            f"distance.{metric}: arguments 'u' and 'v' must be vectors of one length (SciPy's "
            f"two-vector form; cdist takes sets of points); got shapes {u.shape} and {v.shape}."
        )
    given = {name: value for name, value in parameters.items() if value is not None}
    return Cdist(metric, p)(u[None], v[None], **given)[0, 0]


def braycurtis(u: Any, v: Any, w: Any = None) -> Any:
    """``scipy.spatial.distance.braycurtis(u, v, w)``."""
    return _pair("braycurtis", u, v, w=w)


def canberra(u: Any, v: Any, w: Any = None) -> Any:
    """``scipy.spatial.distance.canberra(u, v, w)``."""
    return _pair("canberra", u, v, w=w)


def chebyshev(u: Any, v: Any, w: Any = None) -> Any:
    """``scipy.spatial.distance.chebyshev(u, v, w)``."""
    return _pair("chebyshev", u, v, w=w)


def cityblock(u: Any, v: Any, w: Any = None) -> Any:
    """``scipy.spatial.distance.cityblock(u, v, w)``."""
    return _pair("cityblock", u, v, w=w)


def correlation(u: Any, v: Any, w: Any = None, centered: bool = True) -> Any:
    """``scipy.spatial.distance.correlation(u, v, w)``; ``centered=False`` is cosine's."""
    return _pair("correlation" if centered else "cosine", u, v, w=w)


def cosine(u: Any, v: Any, w: Any = None) -> Any:
    """``scipy.spatial.distance.cosine(u, v, w)``."""
    return _pair("cosine", u, v, w=w)


def euclidean(u: Any, v: Any, w: Any = None) -> Any:
    """``scipy.spatial.distance.euclidean(u, v, w)``."""
    return _pair("euclidean", u, v, w=w)


def mahalanobis(u: Any, v: Any, VI: Any) -> Any:  # noqa: N803 (SciPy's name)
    """``scipy.spatial.distance.mahalanobis(u, v, VI)``."""
    return _pair("mahalanobis", u, v, VI=VI)


def minkowski(u: Any, v: Any, p: float = 2, w: Any = None) -> Any:
    """``scipy.spatial.distance.minkowski(u, v, p, w)``."""
    return _pair("minkowski", u, v, p, w=w)


def seuclidean(u: Any, v: Any, V: Any) -> Any:  # noqa: N803 (SciPy's name)
    """``scipy.spatial.distance.seuclidean(u, v, V)``."""
    return _pair("seuclidean", u, v, V=V)


def sqeuclidean(u: Any, v: Any, w: Any = None) -> Any:
    """``scipy.spatial.distance.sqeuclidean(u, v, w)``."""
    return _pair("sqeuclidean", u, v, w=w)


def squareform(X: Any, force: str = "no", checks: bool = True) -> Any:  # noqa: N803
    """``scipy.spatial.distance.squareform``: condensed distances (m (m - 1) / 2,) as the
    symmetric (m, m) matrix with a zero diagonal, or such a matrix as its condensed
    distances (the upper triangle, row by row), by ``X``'s rank or ``force`` ("tomatrix",
    "tovector"). In JAX: differentiable, under every transformation. ``checks`` (SciPy's
    test that a matrix is symmetric with a zero diagonal) is done where ``X`` is concrete."""
    X = jnp.asarray(X)  # noqa: N806
    if force not in ("no", "tomatrix", "tovector"):
        raise ValueError(
            f"squareform: argument 'force' must be 'no', 'tomatrix' or 'tovector'; got {force!r}."
        )
    to_matrix = force == "tomatrix" or (force == "no" and X.ndim == 1)
    if to_matrix:
        if X.ndim != 1:
            raise ValueError(f"squareform: a condensed 'X' is a vector; got shape {X.shape}.")
        m = int(round((1 + np.sqrt(1 + 8 * X.shape[0])) / 2))
        if m * (m - 1) // 2 != X.shape[0]:
            raise ValueError(
                f"squareform: {X.shape[0]} distances are not the pairs of any number of points."
            )
        rows, columns = np.triu_indices(m, 1)
        upper = jnp.zeros((m, m), X.dtype).at[rows, columns].set(X)
        return upper + upper.T
    if X.ndim != 2 or X.shape[0] != X.shape[1]:
        raise ValueError(f"squareform: 'X' must be a square matrix; got shape {X.shape}.")
    if checks and not isinstance(X, Tracer):
        value = np.asarray(X)
        if not (np.array_equal(value, value.T) and not np.diagonal(value).any()):
            raise ValueError(
                "squareform: 'X' must be symmetric with a zero diagonal (pass checks=False to "
                "read its upper triangle anyway)."
            )
    rows, columns = np.triu_indices(X.shape[0], 1)
    return X[rows, columns]
