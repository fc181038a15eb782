"""``scipy.special`` as adapters: the functions JAX lacks, differentiable.

Ready to call with SciPy's names and argument order, elementwise with broadcasting:

- ``jv``, ``yv``, ``iv``, ``ive`` (``v``, ``x``): Bessel functions of real order,
  differentiable in ``x`` to every order; in ``v`` a ``TypeError``.
- ``kv``, ``kve`` (``v``, ``x``): differentiable in ``v`` and ``x`` to every order, exactly
  (``KvDerivative`` holds their derivatives).
- ``gammaincinv`` (``a``, ``p``), ``betaincinv`` (``a``, ``b``, ``y``): differentiable in
  the probability to every order and in the shapes to first order, exactly.
- ``gammainc``, ``gammaincc`` (``a``, ``x``), ``betainc`` (``a``, ``b``, ``x``): differentiable
  in ``x`` to every order and in the shapes to first order, exactly.
- ``lambertw`` (``x``): the principal branch, real, to every order.

Outside the real domain the result is NaN, as SciPy's real functions give; a complex number
is never returned. The classes (``Jv``, ``Kv``, ...) are the adapters the instances are made
of.
"""

from .bessel import Iv as Iv
from .bessel import Ive as Ive
from .bessel import Jv as Jv
from .bessel import Yv as Yv
from .bessel import iv as iv
from .bessel import ive as ive
from .bessel import jv as jv
from .bessel import yv as yv
from .bessel_k import Kv as Kv
from .bessel_k import KvDerivative as KvDerivative
from .bessel_k import Kve as Kve
from .bessel_k import kv as kv
from .bessel_k import kve as kve
from .incomplete import betainc as betainc
from .incomplete import gammainc as gammainc
from .incomplete import gammaincc as gammaincc
from .lambertw import LambertW as LambertW
from .lambertw import lambertw as lambertw
from .quantiles import Betaincinv as Betaincinv
from .quantiles import Gammaincinv as Gammaincinv
from .quantiles import betaincinv as betaincinv
from .quantiles import gammaincinv as gammaincinv

__all__ = [
    "Betaincinv",
    "Gammaincinv",
    "Iv",
    "Ive",
    "Jv",
    "Kv",
    "Kve",
    "KvDerivative",
    "LambertW",
    "Yv",
    "betainc",
    "betaincinv",
    "gammainc",
    "gammaincc",
    "gammaincinv",
    "iv",
    "ive",
    "jv",
    "kv",
    "kve",
    "lambertw",
    "yv",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.special"
_catalogue_adapters = (
    "`jv`, `yv`, `iv`, `ive`, `kv`, `kve` (and `kv`'s order derivative), `lambertw`, `gammainc`, "
    "`gammaincc`, `betainc`, `gammaincinv`, `betaincinv`"
)
_catalogue_derivatives = "every order in `x`; exact first order in the shapes"
