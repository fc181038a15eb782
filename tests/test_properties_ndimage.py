"""The property suite (``tests/_properties.py``) over ``jaxbridge.adapters.ndimage``: rules
in JAX around bridged ``SplineFilter`` calls, every order. The drawn points lie between the
knots of the order (no kink within a difference step) and inside the image."""

import numpy as np
from _properties import Case, property_tests

from jaxbridge.adapters.ndimage import (
    AffineTransform,
    Correlate1d,
    MapCoordinates,
    MedianFilter,
    SplineFilter,
    UniformFilter,
)


def _between_knots(raw: np.ndarray) -> np.ndarray:
    """Points in [0.1, 0.9] along each axis: inside the image, off the integers (order 1's
    knots) and the half-integers (order 0's jumps)."""
    return 0.5 + 0.4 * raw


def _off_the_half_integers(raw: np.ndarray) -> np.ndarray:
    """Points in [0.6, 1.4]: off the half-integers, the knots of even orders."""
    return 1.0 + 0.4 * raw


def _sloped(raw: np.ndarray) -> np.ndarray:
    """An image (flattened) with a slope added: a constant one has derivative 0 in the
    points exactly, which compiled rules round to ±1e-17 in one mode and 0 in the other,
    too small for the checks' relative tolerances to judge."""
    return raw + np.arange(raw.shape[-1]) ** 1.5


class InsideMapCoordinates(MapCoordinates):
    domains = {"input": _sloped, "coordinates": _between_knots}


class EvenMapCoordinates(MapCoordinates):
    domains = {"input": _sloped, "coordinates": _off_the_half_integers}


class InsideAffineTransform(AffineTransform):
    """A (2, 3) image sampled at ``matrix @ o + offset`` for o in {0, 1}²: ``|matrix| <=
    0.15`` and the offset within 0.1 and 0.4 of the image's centre keep the points in
    [0.1, 0.9] x [0.3, 1.7], off the folds at the edges (where the mirrored spline's slope is
    0, which rounding makes ±1e-15, too small for relative tolerances)."""

    domains = {
        "input": _sloped,
        "matrix": lambda raw: 0.15 * raw,
        "offset": lambda raw: np.array([0.5, 1.0]) + np.array([0.1, 0.4]) * raw,
    }


class ApartMedianFilter(MedianFilter):
    """Entries at least 1/2 apart (a slope with small draws on top): no two tie for a
    median within a difference step, where the selected entry would jump."""

    domains = {"input": lambda raw: 0.1 * raw + np.arange(raw.shape[-1]) ** 1.5}


CASES = [
    Case(InsideMapCoordinates(3, "mirror", shape=(2, 3)), sizes={"s": 6, "d": 2}),
    Case(InsideMapCoordinates(1, "nearest", shape=(3,)), sizes={"s": 3, "d": 1}, label="order-1"),
    Case(
        EvenMapCoordinates(4, "grid-constant", 0.5, shape=(3, 2)),
        sizes={"s": 6, "d": 2},
        skipped=frozenset({"linear_transpose"}),  # (affine: cval enters)
    ),
    Case(
        InsideAffineTransform(3, "mirror", shape=(2, 3), output_shape=(2, 2)),
        sizes={"s": 6, "d": 2, "k": 2},
    ),
    Case(SplineFilter(3, "reflect", shape=(3, 2)), sizes={"s": 6}),
    Case(Correlate1d(0, "mirror", shape=(3, 2)), sizes={"s": 6}),
    Case(UniformFilter((2, 3), "wrap", shape=(3, 2)), sizes={"s": 6}),
    # the box moved to each end of its range (SciPy's origin)
    Case(UniformFilter((2, 3), "reflect", 0.0, (-1, 1), shape=(3, 2)), sizes={"s": 6}),
    Case(
        ApartMedianFilter((3, 2), "nearest", shape=(3, 2)),
        sizes={"s": 6},
        skipped=frozenset({"linear_transpose"}),
    ),
    Case(
        ApartMedianFilter((3, 2), "mirror", 0.0, (1, -1), shape=(3, 2)),
        sizes={"s": 6},
        skipped=frozenset({"linear_transpose"}),
    ),
]
test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
    CASES, quick={"SplineFilter"}
)
