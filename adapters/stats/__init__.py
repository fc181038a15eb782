"""``scipy.stats`` distributions as adapters: the ones JAX lacks, differentiable in every
parameter.

``t``, ``gamma``, ``beta``, ``chi2``, ``f``, ``invgamma``, named and called as SciPy's
(``t.ppf(q, df, loc=0.0, scale=1.0)``, ``beta.cdf(x, a, b)``, ``f.isf(q, dfn, dfd)``), each
with ``cdf``, ``sf``, ``logcdf``, ``logsf``, ``ppf``, ``isf``. Values are SciPy's (``t.ppf`` and
``t.isf`` near the median refined to relative accuracy, where SciPy's is absolute only);
NaN outside the parameters' domain. ``t(df=inf)`` is the standard normal, as in SciPy, in
values and derivatives.

Derivatives: in ``x``/``q``, ``loc`` and ``scale``, every order (closed forms from the density, its
value the host's float64 one, its derivatives JAX's); in the shape parameters, first order, exactly
(the derivatives of the incomplete gamma and beta functions in their shapes,
``adapters/_shared/_shape_derivatives.py``; the quantiles' by implicit differentiation, ``∂x/∂θ =
-(∂F/∂θ)/f(x)``): for the ``t``, 6e-14 relative at worst against mpmath for ``df`` from 100 to 1e12
(a quadrature, ``adapters/_shared/_distributions/_student_t.py``), 7e-13 below; for the ``f``, 2e-13
below 100 degrees of freedom and 5e-15 from 100 on, where the direct form's two terms cancel and a
quadrature replaces it (``adapters/_shared/_distributions/_fisher_f.py``). The adapters behind the
methods are ``OneShapeFunction`` and ``TwoShapeFunction`` (a standardized function, shapes first).
"""

from .._shared._distributions._function import OneShapeFunction as OneShapeFunction
from .._shared._distributions._function import TwoShapeFunction as TwoShapeFunction
from ._distribution import Distribution as Distribution

t = Distribution("t")
"""``scipy.stats.t``: ``t.cdf(x, df, loc=0.0, scale=1.0)`` and ``sf``, ``logcdf``, ``logsf``,
``ppf``, ``isf``."""
gamma = Distribution("gamma")
"""``scipy.stats.gamma``: ``gamma.cdf(x, a, loc=0.0, scale=1.0)`` and ``sf``, ``logcdf``,
``logsf``, ``ppf``, ``isf``."""
beta = Distribution("beta")
"""``scipy.stats.beta``: ``beta.cdf(x, a, b, loc=0.0, scale=1.0)`` and ``sf``, ``logcdf``,
``logsf``, ``ppf``, ``isf``."""
chi2 = Distribution("chi2")
"""``scipy.stats.chi2``: ``chi2.cdf(x, df, loc=0.0, scale=1.0)`` and ``sf``, ``logcdf``, ``logsf``,
``ppf``, ``isf``."""
f = Distribution("f")
"""``scipy.stats.f``: ``f.cdf(x, dfn, dfd, loc=0.0, scale=1.0)`` and ``sf``, ``logcdf``, ``logsf``,
``ppf``, ``isf``."""
invgamma = Distribution("invgamma")
"""``scipy.stats.invgamma``: ``invgamma.cdf(x, a, loc=0.0, scale=1.0)`` and ``sf``, ``logcdf``,
``logsf``, ``ppf``, ``isf``."""

__all__ = [
    "Distribution",
    "OneShapeFunction",
    "TwoShapeFunction",
    "beta",
    "chi2",
    "f",
    "gamma",
    "invgamma",
    "t",
]

# The family's row in the README's catalogue table and its name in
# docs/catalogue/index.md: `python docs/catalogue_tables.py` writes them from these
_scipy_module = "scipy.stats"
_catalogue_adapters = (
    "`t`, `gamma`, `beta`, `chi2`, `f`, `invgamma`: `cdf`, `sf`, `logcdf`, `logsf`, `ppf`, `isf`"
)
_catalogue_derivatives = "every order in `x`, `q`, `loc`, `scale`; exact first order in the shapes"
