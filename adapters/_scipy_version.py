"""Code that follows SciPy's private internals (a loop, an attribute's meaning) runs only
under the SciPy versions it was checked against; under any other, SciPy's own public call
is made instead."""

from __future__ import annotations

import scipy


def checked_against(versions: tuple[tuple[int, int], ...]) -> bool:
    """Whether the installed SciPy's (major, minor) version is one of ``versions``."""
    return tuple(int(part) for part in scipy.__version__.split(".")[:2]) in versions
