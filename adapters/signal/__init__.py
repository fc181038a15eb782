"""``scipy.signal`` as adapters: linear filters with zero initial conditions, whose rules
are the same filters again.

Ready to call, with SciPy's names and argument order: ``lfilter(b, a, x)``,
``sosfilt(sos, x)``; the classes behind them are ``LinearFilter`` and ``SosFilter``.
"""

from .linear_filter import LinearFilter as LinearFilter
from .linear_filter import lfilter as lfilter
from .sos_filter import SosFilter as SosFilter
from .sos_filter import sosfilt as sosfilt

__all__ = ["LinearFilter", "SosFilter", "lfilter", "sosfilt"]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.signal"
_catalogue_adapters = "`lfilter`, `sosfilt`"
_catalogue_derivatives = "every order"
