"""References for the ``scipy.special`` adapters' tests: SciPy's bundled Boost tables, and
mpmath at 30 digits."""

from __future__ import annotations

import importlib.resources

import mpmath
import numpy as np
import pytest

EPS = float(np.finfo(np.float64).eps)

mpmath.mp.dps = 30


def boost(name: str) -> np.ndarray:
    """One of Boost's test tables as SciPy's wheel ships them (``scipy/special/tests/data/
    boost.npz``; the column layouts are in SciPy's ``special/tests/test_data.py``): rows of
    arguments then values, computed by Boost at high precision."""
    path = importlib.resources.files("scipy.special") / "tests" / "data" / "boost.npz"
    if not path.is_file():
        pytest.skip(f"this SciPy installation has no {path} (its test data are not installed)")
    with np.load(str(path)) as tables:
        return tables[f"{name}_ipp-{name}"]


def relative_error(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``|got - expected| / |expected|``, in float64."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    return np.abs(got - expected) / np.abs(expected)


def mp_float(value) -> float:
    """An mpmath number as a float64 (its real part: mpmath returns complex zeros as mpc)."""
    return float(mpmath.re(value))


def mp_derivative(f, point, order) -> float:
    """``mpmath.diff`` at 30 digits, as a float64."""
    return mp_float(mpmath.diff(f, point, order))


def finite_and_normal(values: np.ndarray) -> np.ndarray:
    """Where a table's value is finite and a normal float64 (no underflow to subnormal)."""
    return np.isfinite(values) & (np.abs(values) >= np.finfo(np.float64).tiny)


def assert_rounding_close(got, expected, scale, ulps: float, what: str) -> None:
    """``|got - expected| <= ulps * eps * scale`` entry by entry, where ``scale`` is the size
    of the terms the result is computed from (a recurrence's terms may be much larger than
    their difference: then the error is rounding of the terms, not of the result)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    bound = ulps * EPS * np.abs(np.asarray(scale, np.float64))
    error = np.abs(got - expected)
    bad = ~(error <= bound)
    assert not bad.any(), (
        f"{what}: at {np.flatnonzero(bad)}, got {got[bad]}, expected {expected[bad]}: errors "
        f"{error[bad]} above {ulps} ulps of the terms' scale {bound[bad]}."
    )
