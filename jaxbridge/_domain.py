"""``Domain``: where an argument's valid values lie, what ``Adapter.domains`` declares for the
testing kit, and the ready domains that ``domains`` names by string.

Every domain builds a value from a *raw* array with entries in [-1, 1], so that Hypothesis
(which shrinks raw entries towards 0) and a seeded NumPy generator make inputs the same way.
Raw zeros give the simplest valid value of each ready domain: zeros, ones, multiples of the
identity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Domain:
    """Where an argument's valid values lie: how ``jaxbridge.testing`` draws them, how far a
    finite difference may step from one, and how it refuses an input outside.

    ``build`` makes a valid value (float64, or an integer array for an ``integer`` domain)
    from a raw array of the argument's shape with entries in [-1, 1]; a square domain works
    on the last two axes, so leading batch axes are fine. ``room``, if given, says how far
    each entry of a float64 value may move (a perturbation of that 2-norm) and stay inside,
    shaped like the value (``inf`` where unlimited); a value with no room anywhere is refused
    as one that ``outside`` describes ("is singular"). Without ``room`` every step is
    allowed and only non-finite values are refused. ``square`` domains need a square core
    such as ``(n,n)``; ``symmetric`` ones are refused unless exactly symmetric, and finite
    differences move an entry and its mirror image together.

    Build a new domain from a function, or from a ready one::

        CONTRACTION = jaxbridge.Domain("contraction", build=lambda raw: 0.8 * raw / ...)
        HURWITZ = dataclasses.replace(Domain.named("stable"), name="hurwitz", room=None)

    A plain function in ``Adapter.domains`` is ``Domain(function.__name__, build=function)``.
    """

    name: str
    build: Callable[[np.ndarray], np.ndarray]
    room: Callable[[np.ndarray], np.ndarray] | None = None
    outside: str = "is outside it"
    square: bool = False
    symmetric: bool = False
    integer: bool = False

    def __repr__(self) -> str:
        return f"Domain({self.name!r})"

    @staticmethod
    def named(name: str) -> Domain:
        """The ready domain ``name`` (see ``Adapter.domains`` for the list)."""
        return READY[name]

    @staticmethod
    def of(declared: str | Callable[[np.ndarray], np.ndarray] | Domain) -> Domain:
        """What ``Adapter.domains`` declares, as a ``Domain``: a ready one's name, a function
        that builds values (no room limit), or a ``Domain``. ``KeyError`` for an unknown
        name, ``TypeError`` for anything else."""
        if isinstance(declared, Domain):
            return declared
        if isinstance(declared, str):
            return READY[declared]
        if callable(declared):
            return Domain(getattr(declared, "__name__", repr(declared)), build=declared)
        raise TypeError(f"a domain is a name, a function or a Domain, got {declared!r}")


def _small(raw: np.ndarray) -> np.ndarray:
    """``raw`` scaled to spectral norm at most 1/2 on its last two axes."""
    norm = np.linalg.norm(raw, ord=2, axis=(-2, -1))[..., None, None]
    return 0.5 * raw / np.maximum(1.0, norm)


def _spd(raw: np.ndarray) -> np.ndarray:
    m = _small(raw)
    spd = np.eye(raw.shape[-1]) / 2 + 2 * (m @ np.swapaxes(m, -1, -2))
    return (spd + np.swapaxes(spd, -1, -2)) / 2  # exactly symmetric, in any precision


def _stable(raw: np.ndarray) -> np.ndarray:
    m = _small(raw)
    return (m - np.swapaxes(m, -1, -2)) - _spd(raw)  # numerical range left of Re = -1/2


def _per_matrix(margin: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.maximum(margin, 0.0)[..., None, None], x.shape)


READY: dict[str, Domain] = {
    d.name: d
    for d in [
        # in [-2, 2]: where float32 rounding is relative to O(1) values
        Domain("real", build=lambda raw: 2.0 * raw),
        Domain(
            "positive",
            build=lambda raw: 4.0**raw,  # in [1/4, 4]
            room=lambda x: np.maximum(x, 0.0),
            outside="has entries that are not positive",
        ),
        Domain(
            "away_from_zero",
            build=lambda raw: np.where(raw >= 0, 1.0, -1.0) * (0.25 + 1.75 * np.abs(raw)),
            room=np.abs,
            outside="has entries equal to 0",
        ),
        Domain(
            "integer",
            build=lambda raw: np.minimum(np.floor(4.0 * (raw + 1.0)), 7).astype(np.int64),
            integer=True,
        ),
        Domain(
            "well_conditioned",
            build=lambda raw: np.eye(raw.shape[-1]) + _small(raw),  # singular values in [1/2, 3/2]
            room=lambda x: _per_matrix(np.linalg.svd(x, compute_uv=False)[..., -1], x),
            outside="is singular",
            square=True,
        ),
        Domain(
            "spd",
            build=_spd,  # eigenvalues in [1/2, 1]
            room=lambda x: _per_matrix(np.linalg.eigvalsh(x)[..., 0], x),
            outside="is not positive definite",
            square=True,
            symmetric=True,
        ),
        Domain(
            "stable",
            build=_stable,  # eigenvalues left of Re = -1/2
            room=lambda x: _per_matrix(-np.max(np.linalg.eigvals(x).real, axis=-1), x),
            outside="has eigenvalues with a real part that is not negative",
            square=True,
        ),
    ]
}
"""The ready domains, by the names ``Adapter.domains`` may use."""
