"""Refusals that must hold where the interpolant's own forward does not run.

Under ``grad`` and ``jvp`` the derivative rules are traced before the host runs, and under
``jit`` XLA drops a host call whose value no one uses (the forward, when only a derivative
is): a refusal made in the forward alone is then lost, and the rules compute on refused data
(NaN, or zeros). So the data's sizes are refused when the call is traced (shapes are static:
``refuse_sizes``), and every helper adapter that a rule calls refuses the data on the host
as the forward does (``refused``); the rules whose helpers are not given the data read the
forward's value (``reading``)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from .._shared._failure import InterpolationFailure, OnFailure


def refuse_sizes(owner: str, on_failure: OnFailure, problem: str | None) -> None:
    """Raise the host check's error for ``problem`` (its sentence about the shapes, naming
    the argument; None: nothing wrong) now, for ``owner``. With ``on_failure="nan"`` the
    host gives NaN results for such data instead, as it does for any data it refuses."""
    if problem is not None and on_failure == "raise":
        raise InterpolationFailure.because(f"{owner}: {problem}")


def refused(owner: str, on_failure: OnFailure, problem: str | None) -> bool:
    """In a helper adapter's forward on the host: whether ``owner``'s data are refused for
    ``problem`` (None: they are not). With ``on_failure="raise"`` that is ``owner``'s error,
    raised as its forward raises it; with "nan" True, and the helper's results are NaN."""
    refuse_sizes(owner, on_failure, problem)
    return problem is not None


def reading(out: Any, derivative: Any) -> Any:
    """``derivative`` (a rule's tangent, or its tuple of cotangents, None a symbolic zero)
    made to read the forward's value ``out``, so that XLA keeps the forward's host call,
    and its refusal of the data, where only a derivative is asked for: under ``jit``, a
    rule that reads nothing the host checked against the data (the tangent of a linear
    interpolant is the interpolant of the tangent; its transpose takes no values) gave
    numbers for data that ``grad`` refuses (#54)."""
    read = jnp.where(jnp.isfinite(out), out, 0).sum() * 0

    def one(d: Any) -> Any:
        return None if d is None else d + read.astype(d.dtype)

    return tuple(map(one, derivative)) if isinstance(derivative, tuple) else one(derivative)
