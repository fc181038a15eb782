"""Code that follows SciPy's private internals (a loop, an attribute's meaning) runs only
under the SciPy versions it was checked against; under any other, SciPy's own public call
is made instead."""

from __future__ import annotations

import scipy


def checked_against(versions: tuple[tuple[int, int], ...]) -> bool:
    """Whether the installed SciPy's (major, minor) version is one of ``versions``."""
    return tuple(int(part) for part in scipy.__version__.split(".")[:2]) in versions


def span(versions: tuple[tuple[int, int], ...]) -> str:
    """``versions`` in words, e.g. ``"SciPy 1.11-1.18"``."""
    (a, b), (c, d) = min(versions), max(versions)
    return f"SciPy {a}.{b}-{c}.{d}"


SOLVER_STEPS = tuple((1, minor) for minor in range(11, 19))
"""The SciPy versions (1.11-1.18) whose integrator classes were compared, code without
docstrings: BDF's, Radau's and the Runge-Kutta methods' ``_step_impl`` and the helpers
they call (``compute_R``, the stages, ``lu``/``solve_lu``) are the same in all of them.
``sensitivity="steps"`` and the direct LAPACK calls read them."""

STEPS_FOLLOWED = checked_against(SOLVER_STEPS)
"""Whether the installed SciPy's step code is the code read by ``sensitivity="steps"``
and the direct LAPACK calls; under another, the steps are refused and the LU calls are
SciPy's own."""
