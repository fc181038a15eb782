"""What the matrix-function adapters share: their base class, the check that a real matrix has
a real principal value, the domain their tests draw from, and the block form of a Fréchet
derivative."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

import jaxbridge as jb

from .._shared._failure import MayFail, require_finite
from .._shared._rules import compiled
from ._solving import failure


def principal(function: str, compute: Callable[[np.ndarray], Any], a: np.ndarray) -> np.ndarray:
    """``compute(a)`` for one real (n, n) matrix, computed in float64, refused unless real.

    A real matrix has a real principal square root or logarithm exactly when no eigenvalue
    lies on the closed negative real axis (0 included): there SciPy returns a complex
    result, or one with no derivative. Such a matrix is a ``SolveFailure`` naming
    ``function``, as is a complex result SciPy returns for any other reason.
    """
    a = np.asarray(a, np.float64)
    require_finite("matrix 'a'", a)
    if a.size == 0:
        return a.copy()
    eigenvalues = np.linalg.eigvals(a)
    # LAPACK returns an eigenvalue of a real matrix with imaginary part exactly 0 when
    # it is real; a complex pair, however close to the axis, has a real principal value
    on_axis = eigenvalues[(eigenvalues.imag == 0) & (eigenvalues.real <= 0)]
    if on_axis.size:
        raise failure(
            f"{function}: matrix 'a' has the eigenvalue {on_axis.real.min():.6g} on the "
            f"closed negative real axis, so it has no real principal {_WHAT[function]}"
        )
    with warnings.catch_warnings():
        # logm warns when its own error estimate is above 1000 eps; the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            value: Any = np.asarray(compute(a))
        except ValueError as error:
            # a finite input SciPy fails on, its intermediate results overflowing (logm of
            # the Fréchet block [[a, e], [0, a]] at a = diag(1, 1e-300): "array must not
            # contain infs or NaNs" from a norm inside it)
            raise failure(
                f"{function}: SciPy failed on matrix 'a' ({error}); its eigenvalues may span "
                "too wide a range of magnitudes"
            ) from None
    if np.iscomplexobj(value):
        scale = max(float(np.abs(value).max()), 1.0)
        if float(np.abs(value.imag).max()) > 100 * np.finfo(np.float64).eps * scale:
            raise failure(
                f"{function}: SciPy returned a complex result for matrix 'a'; no real "
                f"principal {_WHAT[function]} was found"
            )
        value = value.real
    if not np.isfinite(value).all():
        raise failure(f"{function}: SciPy returned non-finite entries for matrix 'a'")
    return value


_WHAT = {"sqrtm": "square root", "logm": "logarithm"}


def _distance_from_cut(x: np.ndarray) -> np.ndarray:
    """How far the spectrum of each matrix is from the closed negative real axis, where the
    principal square root and logarithm are not smooth."""
    eigenvalues = np.linalg.eigvals(x)
    distance = np.where(eigenvalues.real >= 0, np.abs(eigenvalues), np.abs(eigenvalues.imag))
    return np.broadcast_to(distance.min(axis=-1)[..., None, None], x.shape)


# Eigenvalues in the disc of radius 1/2 about 1 (``I + m`` with ``||m||₂ <= 1/2``, drawn as
# "well_conditioned" draws), far from the negative real axis: a domain for ``sqrtm`` and
# ``logm``. Nonsymmetric, so complex eigenvalue pairs are drawn too.
positive_spectrum = dataclasses.replace(
    jb.Domain.named("well_conditioned"),
    name="positive_spectrum",
    room=_distance_from_cut,
    outside="has an eigenvalue on the closed negative real axis",
)


@compiled
def frechet_block(function: Callable[[jax.Array], jax.Array], a: jax.Array, e: jax.Array):
    """The Fréchet derivative ``L(a, e)`` of a primary matrix function, as the upper-right
    block of ``function([[a, e], [0, a]])`` (Higham, Functions of Matrices, Thm 3.6).

    ``e`` is first scaled by a power of 2 to the size of ``a`` (exact, and undone after):
    the block's rounding errors are relative to the whole block, so a tiny ``e`` would
    otherwise lose digits. The scale is a constant for differentiation: ``L`` is linear in
    ``e``.
    """
    batch = jnp.broadcast_shapes(a.shape[:-2], e.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    e = jnp.broadcast_to(e, batch + e.shape[-2:])
    n = a.shape[-1]
    if n == 0:  # (an empty matrix: an empty derivative, and no sizes to take)
        return jnp.zeros(e.shape, jnp.result_type(a, e))
    size_a = jnp.max(jnp.abs(a), axis=(-2, -1), keepdims=True)
    size_e = jnp.max(jnp.abs(e), axis=(-2, -1), keepdims=True)
    ratio = jnp.round(jnp.log2(size_a) - jnp.log2(size_e))  # (any power of 2 near will do)
    scale = _power_of_two(jnp.where(jnp.isfinite(ratio), ratio, 0.0))
    usable = (size_e > 0) & (size_a > 0) & jnp.isfinite(scale) & (scale > 0)
    scale = jax.lax.stop_gradient(jnp.where(usable, scale, 1.0))
    top = jnp.concatenate([a, e * scale], axis=-1)
    bottom = jnp.concatenate([jnp.zeros_like(a), a], axis=-1)
    block = function(jnp.concatenate([top, bottom], axis=-2))
    return block[..., :n, n:] / scale


def _power_of_two(k: jax.Array) -> jax.Array:
    """``2**k`` for integer-valued ``k``, exactly on every backend: a product of constant
    powers of 2 chosen by ``k``'s bits. (``exp2`` is inexact on a TPU, where the block then
    differed from the CPU's, and ``jnp.ldexp`` of float64 fails to compile there.) Beyond
    the dtype's range it is inf or 0."""
    magnitude = jnp.abs(k)
    scale = jnp.ones_like(k)
    largest = jnp.finfo(k.dtype).maxexp  # (128 for float32, 1024 for float64)
    for bit in range(largest.bit_length() - 1):  # |k| < largest
        factor = jnp.asarray(2.0 ** (2**bit), k.dtype)
        step = jnp.where(k < 0, 1 / factor, factor)
        scale = jnp.where(jnp.floor(magnitude / 2**bit) % 2 == 1, scale * step, scale)
    return jnp.where(magnitude < largest, scale, jnp.where(k < 0, 0.0, jnp.inf))


class PrincipalFunction(MayFail):
    """The base of ``MatrixSqrt`` and ``MatrixLog``: the principal value of a primary matrix
    function of one real matrix, computed by SciPy on the host (``principal``). Fails (see
    ``MayFail``) on a matrix with an eigenvalue on the closed negative real axis, or a
    non-finite one, with an error naming SciPy's function.

    A function sets ``_routine`` (SciPy's) and ``_function`` (its name, for errors) and
    defines its rules.
    """

    signature = "(n,n)->(n,n)"
    domains = {"a": positive_spectrum}

    _routine: ClassVar[Callable[[np.ndarray], Any]]
    _function: ClassVar[str]

    def output_specs(self, a):
        return jax.ShapeDtypeStruct(a.shape, jb.result_dtype(a))

    def forward(self, a):
        try:
            x = principal(self._function, type(self)._routine, a)
        except np.linalg.LinAlgError as error:
            x = self.nan_on_failure(error, a.shape)
        return x.astype(jb.result_dtype(a))
