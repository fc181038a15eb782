"""Problems for the property suite's cases of ``Milp``, ``LsqLinear`` and
``IsotonicRegression``, drawn with a margin from where their solutions change structure
(a tie between integer solutions, an active set's edge, two blocks merging), so that finite
differences keep the structure the derivatives hold fixed.

Arguments the suite holds fixed (``Case.held``) are drawn from these domains and rounded up
to integers."""

import numpy as np

from jaxbridge.adapters.optimize import IsotonicRegression, LsqLinear, Milp


def _constant(values):
    return lambda raw: np.broadcast_to(np.asarray(values, float), raw.shape)


class MarginMilp(Milp):
    """``min c·x`` over an integer ``x0`` and a continuous ``x1`` with ``x0 + x1 ≤ 2``,
    ``0 ≤ x ≤ (3, 2)``, ``c`` within 0.2 of ``(-1, -1.5)``: the solution ``(0, 2)``
    whatever ``c`` is drawn (``x1`` is worth more than ``x0``)."""

    domains = {
        "c": lambda raw: np.array([-1.0, -1.5]) + 0.2 * raw,
        "integrality": _constant([1, 0]),
        "A": _constant([[1, 1]]),
        "b_l": _constant([-5]),
        "b_u": _constant([2]),
        "lower": _constant([0, 0]),
        "upper": _constant([3, 2]),
    }


def _lsq_matrix(raw: np.ndarray) -> np.ndarray:
    """Within 0.1 of ``[[1, 0], [0, 1], [0, 0]]``."""
    return np.eye(*raw.shape[-2:]) + 0.1 * raw


class MarginLsqLinear(LsqLinear):
    """``argmin ‖A x - b‖`` over ``-1 ≤ x ≤ 1`` (bounds within 0.1) with ``b`` about
    ``(0.2, 2, 0)``: ``x0`` free near 0.2, ``x1`` held at its upper bound by a multiplier
    near 1."""

    domains = {
        "A": _lsq_matrix,
        "b": lambda raw: np.array([0.2, 2.0, 0.0]) + np.array([0.1, 0.25, 0.5]) * raw,
        "lb": lambda raw: -1.0 + 0.1 * raw,
        "ub": lambda raw: 1.0 + 0.1 * raw,
    }


def _zigzag(raw: np.ndarray) -> np.ndarray:
    """Pairs ``(2 i + 1, 2 i)`` within 0.2: the fit's blocks are the pairs, each pair's
    mean 1 above the last, far from merging with its neighbours or splitting."""
    i = np.arange(raw.shape[-1])
    return i + 1 - 2 * (i % 2) + 0.2 * raw


class MarginIsotonicRegression(IsotonicRegression):
    """Blocks of two (``_zigzag``), weights in [1/4, 4]: the blocks stay."""

    domains = {"y": _zigzag, "weights": "positive"}
