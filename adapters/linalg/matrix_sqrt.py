"""``MatrixSqrt`` (``sqrtm``): the principal square root of a real matrix; its rules are one
Sylvester solve each."""

import jax.numpy as jnp
import scipy.linalg

from ._matrix_functions import PrincipalFunction
from .sylvester_solve import SylvesterSolve


class MatrixSqrt(PrincipalFunction):
    """The principal square root ``x`` of a real matrix ``a`` (``x @ x = a``), as
    ``scipy.linalg.sqrtm``: ``x = sqrtm(a)``.

    ``a`` is (n, n), real, with no eigenvalue on the closed negative real axis (0
    included): exactly the matrices with a real principal square root, whose eigenvalues
    all have positive real parts. Leading axes are batch axes. SciPy computes in float64
    (a Schur method, accurate to a modest multiple of machine epsilon times the condition
    of the root); the result takes ``a``'s dtype and is never complex.

    Derivatives: the tangent solves ``x ẋ + ẋ x = ȧ`` and the cotangent ``xᵀ s + s xᵀ = ḡ``,
    one ``SylvesterSolve`` each, so derivatives of every order work in both modes.

    Parameters:
        on_failure: see ``MayFail``. Fails on a matrix with an eigenvalue on the closed
            negative real axis, or a non-finite one, with an error naming ``sqrtm``.
    """

    _routine = scipy.linalg.sqrtm
    _function = "sqrtm"

    def pushforward(self, res, tangents):
        _, x = res
        (da,) = tangents
        return SylvesterSolve(on_failure=self.on_failure)(x, x, da)

    def pullback(self, res, g):
        _, x = res
        xt = jnp.swapaxes(x, -1, -2)
        return (SylvesterSolve(on_failure=self.on_failure)(xt, xt, g),)


sqrtm = MatrixSqrt()
"""``scipy.linalg.sqrtm`` as a ready adapter: ``sqrtm(a)``."""
