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
