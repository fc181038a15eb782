"""What the 1-D interpolants' test files share: SciPy's own object for an adapter's
construction (the reference), and the adapters as parameters, most marked slow."""

import pytest
import scipy.interpolate as si


def scipy_object(adapter, x, y):
    """SciPy's own object for ``adapter``'s construction."""
    name = type(adapter).__name__
    if name == "InterpSpline":
        return si.make_interp_spline(x, y, adapter.k, bc_type=adapter.bc_type)
    if name == "CubicSpline":
        return si.CubicSpline(x, y, bc_type=adapter.bc_type)
    if name == "PchipInterpolator":
        return si.PchipInterpolator(x, y)
    return si.Akima1DInterpolator(x, y, method=adapter.method, extrapolate=adapter.extrapolate)


def quick_and_slow(adapters, quick, name):
    """``adapters`` as parameters (named by ``name``), those not in ``quick`` (by position)
    marked slow: each compiles its own higher-order programs for seconds."""
    return [
        pytest.param(a, id=name(a), marks=() if i in quick else pytest.mark.slow)
        for i, a in enumerate(adapters)
    ]
