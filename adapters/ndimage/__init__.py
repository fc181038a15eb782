"""``scipy.ndimage`` as adapters: spline interpolation and resampling of images,
differentiable in the image and in the points (or the map that places them), and filters
(Gaussian, uniform, median, a 1-D correlation), differentiable in the image and the
Gaussian's ``sigma``.

``MapCoordinates(order, mode, cval, prefilter)(input, coordinates)``,
``AffineTransform(...)(input, matrix, offset)`` and ``SplineFilter(order, mode)(input)``,
with SciPy's call forms ``map_coordinates``, ``affine_transform``, ``spline_filter``, and
``shift``, ``zoom``, ``rotate`` built on ``AffineTransform``; ``Correlate1d``,
``UniformFilter``, ``MedianFilter``, with ``correlate1d``, ``uniform_filter``,
``median_filter``, and ``gaussian_filter1d``, ``gaussian_filter`` built on
``Correlate1d``."""

from .affine_transform import AffineTransform as AffineTransform
from .affine_transform import affine_transform as affine_transform
from .correlate1d import Correlate1d as Correlate1d
from .correlate1d import correlate1d as correlate1d
from .gaussian_filter import gaussian_filter as gaussian_filter
from .gaussian_filter import gaussian_filter1d as gaussian_filter1d
from .map_coordinates import MapCoordinates as MapCoordinates
from .map_coordinates import map_coordinates as map_coordinates
from .median_filter import MedianFilter as MedianFilter
from .median_filter import median_filter as median_filter
from .rotate import rotate as rotate
from .shift import shift as shift
from .spline_filter import SplineFilter as SplineFilter
from .spline_filter import spline_filter as spline_filter
from .uniform_filter import UniformFilter as UniformFilter
from .uniform_filter import uniform_filter as uniform_filter
from .zoom import zoom as zoom

__all__ = [
    "AffineTransform",
    "Correlate1d",
    "MapCoordinates",
    "MedianFilter",
    "SplineFilter",
    "UniformFilter",
    "affine_transform",
    "correlate1d",
    "gaussian_filter",
    "gaussian_filter1d",
    "map_coordinates",
    "median_filter",
    "rotate",
    "shift",
    "spline_filter",
    "uniform_filter",
    "zoom",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.ndimage"
_catalogue_adapters = (
    "`map_coordinates`, `affine_transform`, `shift`, `zoom`, `rotate`, `spline_filter`, "
    "`gaussian_filter`, `uniform_filter`, `median_filter`, `correlate1d`"
)
_catalogue_derivatives = "every order (the median: the selected entry's)"
