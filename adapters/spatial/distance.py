"""``scipy.spatial.distance``'s call forms: ``cdist(XA, XB, metric, **kwargs)`` and
``pdist(X, metric, **kwargs)`` with SciPy's arguments, on ``Cdist`` and ``Pdist``.

Examples:
    >>> import numpy as np
    >>> from jaxbridge.adapters.spatial import distance
    >>> XA, XB = np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[3.0, 4.0]])
    >>> np.asarray(distance.cdist(XA, XB, "minkowski", p=1)).tolist()
    [[7.0], [5.0]]
    >>> np.asarray(distance.pdist(XA, "cityblock")).tolist()
    [2.0]
"""

from __future__ import annotations

from typing import Any

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
