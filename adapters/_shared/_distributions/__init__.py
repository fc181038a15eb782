"""What ``stats`` and ``special`` share: the standardized distribution functions as adapters
(``OneShapeFunction``, ``TwoShapeFunction``: ``cdf``, ``sf``, ``ppf``, ... of each family, and
``special``'s ``gammainc``, ``betainc`` and their inverses are the same functions), the
families' log-densities, and the ``t``'s large-df pieces. Both families import it, neither
imports the other."""
