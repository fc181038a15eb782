"""Parsing NumPy gufunc signatures and matching argument shapes against them."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_DIM = r"\s*(?:\w+)\s*"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:\s*,\s*{_CORE})*"
_SIGNATURE = re.compile(rf"^\s*({_ARGS})\s*->\s*({_ARGS})\s*$")

Core = tuple[str, ...]


@dataclass(frozen=True)
class Signature:
    """A parsed gufunc signature such as ``"(m,n),(n)->(m)"``."""

    text: str
    inputs: tuple[Core, ...]
    outputs: tuple[Core, ...]


def _cores(text: str) -> tuple[Core, ...]:
    return tuple(
        tuple(d.strip() for d in group.split(",") if d.strip())
        for group in re.findall(r"\(([^()]*)\)", text)
    )


@functools.cache
def parse(text: str) -> Signature:
    """Parse ``text``; raise ``ValueError`` naming the problem if it is not a signature."""
    if not isinstance(text, str):
        raise TypeError(f"a signature must be a string like '(n,n),(n)->(n)', got {text!r}")
    match = _SIGNATURE.match(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a gufunc signature: write one parenthesised group of dimension "
            "names per argument, then '->', then one group per output, e.g. '(m,n),(n)->(m)'."
        )
    return Signature(text, _cores(match.group(1)), _cores(match.group(2)))


def bind_dims(
    owner: str, names: tuple[str, ...], cores: tuple[Core, ...], shapes: tuple[tuple[int, ...], ...]
) -> dict[str, int]:
    """Size every dimension name from the trailing axes of ``shapes``.

    Raises ``ValueError`` naming ``owner``, the argument, the expected and the actual shape
    when an argument has too few axes or a name would take two sizes.
    """
    sizes: dict[str, int] = {}
    for name, core, shape in zip(names, cores, shapes):
        expected = "(" + ", ".join(core) + ")"
        if len(shape) < len(core):
            raise ValueError(
                f"{owner}: argument '{name}' should have core shape {expected} "
                f"({len(core)} trailing axes), but has shape {tuple(shape)}."
            )
        trailing = shape[len(shape) - len(core) :]
        for dim, size in zip(core, trailing):
            if dim.isdigit() and int(dim) != size:
                raise ValueError(
                    f"{owner}: argument '{name}' has shape {tuple(shape)}, but its core shape "
                    f"{expected} needs an axis of size {dim}."
                )
            if not dim.isdigit() and sizes.setdefault(dim, size) != size:
                raise ValueError(
                    f"{owner}: argument '{name}' has shape {tuple(shape)}, but its core shape "
                    f"{expected} needs {dim} = {sizes[dim]}, as set by the arguments before it."
                )
    return sizes


def core_shape(owner: str, core: Core, sizes: dict[str, int]) -> tuple[int, ...]:
    """The concrete shape of an output core, from sizes bound by the inputs."""
    unknown = [d for d in core if not d.isdigit() and d not in sizes]
    if unknown:
        raise ValueError(
            f"{owner}: output dimension {unknown[0]!r} appears in no input, so the signature "
            "cannot size it. Override `output_specs` to say what the output looks like."
        )
    return tuple(int(d) if d.isdigit() else sizes[d] for d in core)
