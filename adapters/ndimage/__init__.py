"""``scipy.ndimage`` as adapters: spline interpolation and resampling of images,
differentiable in the image and in the points (or the map that places them).

``MapCoordinates(order, mode, cval, prefilter)(input, coordinates)``,
``AffineTransform(...)(input, matrix, offset)`` and ``SplineFilter(order, mode)(input)``,
with SciPy's call forms ``map_coordinates``, ``affine_transform``, ``spline_filter``, and
``shift``, ``zoom``, ``rotate`` built on ``AffineTransform``."""

from .affine_transform import AffineTransform as AffineTransform
from .affine_transform import affine_transform as affine_transform
from .map_coordinates import MapCoordinates as MapCoordinates
from .map_coordinates import map_coordinates as map_coordinates
from .rotate import rotate as rotate
from .shift import shift as shift
from .spline_filter import SplineFilter as SplineFilter
from .spline_filter import spline_filter as spline_filter
from .zoom import zoom as zoom

__all__ = [
    "AffineTransform",
    "MapCoordinates",
    "SplineFilter",
    "affine_transform",
    "map_coordinates",
    "rotate",
    "shift",
    "spline_filter",
    "zoom",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.ndimage"
_catalogue_adapters = (
    "`map_coordinates`, `affine_transform`, `shift`, `zoom`, `rotate`, `spline_filter`"
)
_catalogue_derivatives = "every order (in the points: the spline's)"
