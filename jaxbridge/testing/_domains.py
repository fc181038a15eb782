"""The testing kit's side of ``Adapter.domains``: each argument's ``Domain`` (see
``jaxbridge/_domain.py``), and values made from raw draws in a dtype."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from jaxbridge import Domain
from jaxbridge.internal import Core, ready_domains


def domains_of(
    owner: str, domains: Mapping[str, object], names: tuple[str, ...], cores: tuple[Core, ...]
) -> tuple[Domain, ...]:
    """The domain of each argument, ``"real"`` where ``domains`` says nothing.

    Raises ``ValueError`` naming the problem if ``domains`` names an argument that does not
    exist or a domain that is not one, or gives a square domain to a non-square core.
    """
    for name, declared in domains.items():
        if name not in names:
            raise ValueError(
                f"{owner}.domains names argument {name!r}, but forward's arguments are {names}."
            )
        if not (isinstance(declared, Domain) or callable(declared) or declared in ready_domains):
            raise ValueError(
                f"{owner}.domains gives argument {name!r} the domain {declared!r}; a domain is "
                f"one of {', '.join(ready_domains)}, a jaxbridge.Domain, or a function that "
                "builds an input from raw values."
            )
    found = tuple(Domain.of(domains.get(name, "real")) for name in names)  # type: ignore[arg-type]
    for name, domain, core in zip(names, found, cores):
        if domain.square and (len(core) != 2 or core[0] != core[1]):
            raise ValueError(
                f"{owner}.domains says argument {name!r} is {domain.name!r}, which needs a "
                f"square core such as (n,n), but its core in the signature is "
                f"({','.join(core)})."
            )
    return found


def make(domain: Domain, raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``domain.build(raw)`` in ``dtype``, with entries so small that the product of two of
    them would be subnormal flushed to 0. XLA runs host callbacks with subnormal numbers
    flushed to zero while NumPy alone keeps them, so near underflow the same code gives
    different answers by the two routes; that is not what the checks are about."""
    value = np.asarray(domain.build(raw)).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        tiny = np.sqrt(np.finfo(dtype).smallest_normal)
        value = np.where(np.abs(value) < tiny, 0, value).astype(dtype)
    return value


def sample(domain: Domain, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator):
    """A value of ``domain`` with this shape and dtype, drawn from ``rng``."""
    return make(domain, rng.uniform(-1.0, 1.0, shape), dtype)


def room(domain: Domain, x: np.ndarray) -> np.ndarray:
    """How far each entry of ``x`` may move and stay in ``domain``; ``inf`` where unlimited."""
    return np.full(x.shape, np.inf) if domain.room is None else np.asarray(domain.room(x))
