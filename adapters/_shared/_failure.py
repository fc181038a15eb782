"""What every adapter family does when its routine finds no trustworthy result, or an input
with a NaN or inf where no result can be meaningful (``require_finite``).

An adapter that can fail subclasses ``MayFail``, which owns the keyword-only static
parameter ``on_failure``: ``"raise"`` raises a ``Failure`` (the bridge puts the adapter's
name and method first in the message); ``"nan"`` gives NaN results for that batch element
instead (``MayFail.nan_on_failure``, called where the failure is caught).

Each family raises its own subclass of ``Failure``, which is also the exception type its
users caught before there was a common base (``SolveFailure`` is a ``LinAlgError``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal, overload

import numpy as np
from numpy.typing import DTypeLike

import jaxbridge as jb

OnFailure = Literal["raise", "nan"]


class Failure(Exception):
    """A routine with no trustworthy result: no solution, no convergence, data it refuses.

    ``on_failure="nan"`` turns it into NaN results; the message says so.
    """

    @classmethod
    def because(cls, problem: str) -> Failure:
        """The error for ``problem`` (a sentence without its full stop), with the way out."""
        return cls(f"{problem}. Pass on_failure='nan' to get NaN results instead of this error.")


class SolveFailure(Failure, np.linalg.LinAlgError):
    """A linear, matrix or Riccati equation with no (trustworthy) solution."""


class IntegrationFailure(Failure, RuntimeError):
    """An integral or ODE solve that did not reach its error target or is not finite."""


class OptimizeError(Failure, RuntimeError):
    """A solve with no trustworthy answer: SciPy did not converge, its answer fails the
    optimality check, or the solution is singular or degenerate there."""


class InterpolationFailure(Failure, ValueError):
    """Data an interpolant cannot be built from (too few points, sites out of order)."""


Shape = tuple[int, ...]


class MayFail(jb.Adapter):
    """The base of every adapter whose routine can find no trustworthy result: it declares
    the failure policy once, and its subclasses say only what their failures are.

    Parameters:
        on_failure: keyword-only. ``"raise"`` (the default): a failure (the subclass's
            docstring says which inputs fail; a non-finite input where no result can be
            meaningful is one) raises the family's ``Failure``, whose message ends with the
            way out. ``"nan"``: that batch element's results are NaN instead, forward and
            backward, for code under ``lax.cond``, ``vmap`` or a line search that must go
            on. ``OnFailure`` is a ``Literal``, so the choice is checked when the adapter is
            made.
    """

    _: dataclasses.KW_ONLY
    on_failure: OnFailure = "raise"

    @overload
    def nan_on_failure(
        self, error: Exception, shape: Shape, /, *, dtype: DTypeLike = ...
    ) -> np.ndarray: ...
    @overload
    def nan_on_failure(
        self,
        error: Exception,
        first: Shape,
        second: Shape,
        /,
        *shapes: Shape,
        dtype: DTypeLike = ...,
    ) -> tuple[np.ndarray, ...]: ...
    def nan_on_failure(
        self, error: Exception, *shapes: Shape, dtype: DTypeLike = np.float64
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        """The results of one failed batch element (``nan_results`` with this adapter's
        ``on_failure``): NaN arrays of ``shapes``, or ``error`` raised. Called in the
        ``except`` clause that caught ``error``."""
        return nan_results(self.on_failure, error, *shapes, dtype=dtype)


@overload
def nan_results(
    on_failure: OnFailure, error: Exception, shape: Shape, /, *, dtype: DTypeLike = ...
) -> np.ndarray: ...
@overload
def nan_results(
    on_failure: OnFailure,
    error: Exception,
    first: Shape,
    second: Shape,
    /,
    *shapes: Shape,
    dtype: DTypeLike = ...,
) -> tuple[np.ndarray, ...]: ...
def nan_results(
    on_failure: OnFailure, error: Exception, *shapes: Shape, dtype: DTypeLike = np.float64
) -> np.ndarray | tuple[np.ndarray, ...]:
    """The results of one failed batch element: NaN arrays of ``shapes`` (one array for one
    shape) if ``on_failure == "nan"``; otherwise ``error`` is raised. Called in the
    ``except`` clause that caught ``error``."""
    if on_failure != "nan":
        raise error
    arrays = tuple(np.full(shape, np.nan, dtype) for shape in shapes)
    return arrays[0] if len(arrays) == 1 else arrays


def require_finite(
    what: str, values: np.ndarray, error: Callable[[str], Exception] = SolveFailure.because
) -> None:
    """The policy for a non-finite input where no meaningful result exists (a NaN or inf in a
    coefficient matrix poisons the whole factorization): an error that names the argument
    (``what``; the bridge names the adapter). ``error`` makes it from the sentence: a
    ``Failure`` (``SolveFailure.because``, the default) for the adapters with
    ``on_failure`` (``MayFail``), which catch it and give NaN on request; ``ValueError`` for those
    without."""
    if not np.isfinite(values).all():
        raise error(f"{what} has non-finite entries (NaN or inf)")
