"""The refusal, when a call is traced, of data whose sizes alone are too few for the
interpolant (no sites, fewer than the method needs, a grid of no axes).

Shapes are static, so the check the host makes on them can be made before anything is
traced. It must be: under ``grad`` and ``jvp`` the derivative rules are traced before the
host runs (and under ``jit`` XLA may drop the host call when only a derivative is used), and
on empty data they fail deep in JAX, or give NaN, instead of the host check's error."""

from __future__ import annotations

from .._failure import InterpolationFailure, OnFailure


def refuse_sizes(owner: str, on_failure: OnFailure, problem: str | None) -> None:
    """Raise the host check's error for ``problem`` (its sentence about the shapes, naming
    the argument; None: nothing wrong) now, for ``owner``. With ``on_failure="nan"`` the
    host gives NaN results for such data instead, as it does for any data it refuses."""
    if problem is not None and on_failure == "raise":
        raise InterpolationFailure.because(f"{owner}: {problem}")
