"""The vocabulary of ``Adapter.domains``: what each kind of input looks like and how to make one.

Every kind is built from a *raw* array with entries in [-1, 1], so that Hypothesis (which
shrinks raw entries towards 0) and a seeded NumPy generator make inputs the same way. Raw
zeros give the simplest valid input of each kind: zeros, ones, multiples of the identity.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from .._signature import Core

KINDS = (
    "real",
    "positive",
    "away_from_zero",
    "integer",
    "well_conditioned",
    "spd",
    "stable",
)
"""Every kind ``Adapter.domains`` may name (documented there)."""

MATRIX_KINDS = frozenset({"well_conditioned", "spd", "stable"})

Kind = str | Callable[[np.ndarray], np.ndarray]
"""A name from ``KINDS``, or a callable that builds a valid input from a raw array."""


def describe(kind: Kind) -> str:
    return repr(kind) if isinstance(kind, str) else f"{getattr(kind, '__name__', kind)!r}"


def kinds_of(
    owner: str, domains: Mapping[str, Kind], names: tuple[str, ...], cores: tuple[Core, ...]
) -> tuple[Kind, ...]:
    """The kind of each argument, ``"real"`` where ``domains`` says nothing.

    Raises ``ValueError`` naming the problem if ``domains`` names an argument that does not
    exist or a kind outside the vocabulary, or gives a matrix kind to a non-square core.
    """
    for name, kind in domains.items():
        if name not in names:
            raise ValueError(
                f"{owner}.domains names argument {name!r}, but forward's arguments are {names}."
            )
        if not (callable(kind) or kind in KINDS):
            raise ValueError(
                f"{owner}.domains gives argument {name!r} the kind {kind!r}; the kinds are "
                f"{', '.join(KINDS)}, or a callable that builds an input from raw values."
            )
    kinds = tuple(domains.get(name, "real") for name in names)
    for name, kind, core in zip(names, kinds, cores):
        if kind in MATRIX_KINDS and (len(core) != 2 or core[0] != core[1]):
            raise ValueError(
                f"{owner}.domains says argument {name!r} is {kind!r}, which needs a square "
                f"core such as (n,n), but its core in the signature is ({','.join(core)})."
            )
    return kinds


def build(kind: Kind, raw: np.ndarray) -> np.ndarray:
    """A float64 (or, for ``"integer"``, int64) input of ``kind`` made from ``raw``.

    ``raw`` has the input's shape and entries in [-1, 1]; matrix kinds work on the last two
    axes, so leading batch axes are fine.
    """
    if callable(kind):
        return np.asarray(kind(raw))
    if kind == "real":
        return 2.0 * raw  # in [-2, 2]: where float32 rounding is relative to O(1) values
    if kind == "positive":
        return 4.0**raw  # in [1/4, 4]
    if kind == "away_from_zero":
        return np.where(raw >= 0, 1.0, -1.0) * (0.25 + 1.75 * np.abs(raw))  # |x| >= 1/4
    if kind == "integer":
        return np.minimum(np.floor(4.0 * (raw + 1.0)), 7).astype(np.int64)  # 0 to 7
    n = raw.shape[-1]
    eye = np.eye(n)
    # ||m|| <= 1/2 (spectral norm), whatever raw is
    m = 0.5 * raw / np.maximum(1.0, np.linalg.norm(raw, ord=2, axis=(-2, -1)))[..., None, None]
    mt = np.swapaxes(m, -1, -2)
    if kind == "well_conditioned":
        return eye + m  # singular values in [1/2, 3/2]
    spd = eye / 2 + 2 * (m @ mt)
    spd = (spd + np.swapaxes(spd, -1, -2)) / 2  # exactly symmetric, in any precision
    if kind == "spd":
        return spd  # eigenvalues in [1/2, 1]
    if kind == "stable":
        return (m - mt) - spd  # numerical range, hence eigenvalues, left of Re = -1/2
    raise ValueError(f"unknown domain kind {kind!r}")


def make(kind: Kind, raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``build(kind, raw)`` in ``dtype``, with entries so small that the product of two of
    them would be subnormal flushed to 0. XLA runs host callbacks with subnormal numbers
    flushed to zero while NumPy alone keeps them, so near underflow the same code gives
    different answers by the two routes; that is not what the checks are about."""
    value = np.asarray(build(kind, raw)).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        tiny = np.sqrt(np.finfo(dtype).smallest_normal)
        value = np.where(np.abs(value) < tiny, 0, value).astype(dtype)
    return value


def sample(kind: Kind, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator):
    """An input of ``kind`` with this shape and dtype, drawn from ``rng``."""
    return make(kind, rng.uniform(-1.0, 1.0, shape), dtype)


def room(kind: Kind, x: np.ndarray) -> np.ndarray:
    """How far each entry of ``x`` may move (a perturbation of that 2-norm) and stay valid.

    Shaped like ``x``; ``inf`` where the kind sets no limit.
    """
    if kind == "positive":
        return np.maximum(x, 0.0)
    if kind == "away_from_zero":
        return np.abs(x)
    if kind not in MATRIX_KINDS:
        return np.full(x.shape, np.inf)
    if kind == "spd":
        margin = np.linalg.eigvalsh(x)[..., 0]  # the smallest eigenvalue
    elif kind == "well_conditioned":
        margin = np.linalg.svd(x, compute_uv=False)[..., -1]  # the smallest singular value
    else:  # stable: the distance of the spectrum from the imaginary axis
        margin = -np.max(np.linalg.eigvals(x).real, axis=-1)
    return np.broadcast_to(np.maximum(margin, 0.0)[..., None, None], x.shape)
