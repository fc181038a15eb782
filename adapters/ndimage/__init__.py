"""``scipy.ndimage`` as adapters: spline interpolation of images, differentiable in the
image and in the points.

``MapCoordinates(order, mode, cval, prefilter)(input, coordinates)`` and
``SplineFilter(order, mode)(input)``, with SciPy's call forms ``map_coordinates`` and
``spline_filter``."""

from .map_coordinates import MapCoordinates as MapCoordinates
from .map_coordinates import map_coordinates as map_coordinates
from .spline_filter import SplineFilter as SplineFilter
from .spline_filter import spline_filter as spline_filter

__all__ = ["MapCoordinates", "SplineFilter", "map_coordinates", "spline_filter"]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.ndimage"
_catalogue_adapters = "`MapCoordinates`, `SplineFilter`"
_catalogue_derivatives = "every order (in the points: the spline's)"
