"""``MatrixLog`` (``logm``): the principal logarithm of a real matrix; its rules are the same
adapter on a 2n × 2n block matrix."""

import jax.numpy as jnp
import scipy.linalg

from ._matrix_functions import PrincipalFunction, frechet_block


class MatrixLog(PrincipalFunction):
    """The principal logarithm ``x`` of a real matrix ``a`` (``expm(x) = a``), as
    ``scipy.linalg.logm``: ``x = logm(a)``.

    ``a`` is (n, n), real, with no eigenvalue on the closed negative real axis (0
    included): exactly the matrices with a real principal logarithm. Leading axes are
    batch axes. SciPy computes in float64 (inverse scaling and squaring on the Schur form);
    the result takes ``a``'s dtype and is never complex.

    Derivatives: the Fréchet derivative ``L(a, e)`` is the upper-right block of
    ``logm([[a, e], [0, a]])``; the tangent is ``L(a, ȧ)`` and the cotangent ``L(aᵀ, ḡ)``.
    Both are this adapter at twice the size, so derivatives of every order work in both
    modes (each order doubles the size of the matrix the host sees).

    Parameters:
        on_failure: see ``MayFail``. Fails on a matrix with an eigenvalue on the closed
            negative real axis, or a non-finite one, with an error naming ``logm``.
    """

    _routine = scipy.linalg.logm
    _function = "logm"
    # logm wakes OpenBLAS's threads at every size from 2 x 2, which then busy-wait (see
    # Adapter.blas_threads); one thread was faster up to n = 400 here (0.45-0.8x the time)
    blas_threads = 1

    def pushforward(self, res, tangents):
        a, _ = res
        (da,) = tangents
        return frechet_block(self, a, da)

    def pullback(self, res, g):
        a, _ = res
        return (frechet_block(self, jnp.swapaxes(a, -1, -2), g),)


logm = MatrixLog()
"""``scipy.linalg.logm`` as a ready adapter: ``logm(a)``."""
