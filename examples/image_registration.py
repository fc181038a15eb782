"""Image registration: a rotation and a shift recovered by gradient descent through SciPy's
``affine_transform``, differentiated in the angle and the shift.

We see an image and a copy of it rotated by an unknown angle about its centre and shifted
(resampled by ``scipy.ndimage.affine_transform``, cubic splines, "nearest" edges). The loss
warps the first image by a candidate angle and shift with jaxbridge's ``affine_transform``
(SciPy's values, to the bit) and takes the mean squared difference from the second; its
gradient goes through the spline's derivative in the sampling points into the matrix and
the offset, and on into the angle and shift. Gradient descent with momentum, ``jax.jit``-ed
with the host calls inside, brings the parameters close; two Newton steps with
``jax.hessian`` (the second derivatives through the same spline) finish.

The script exits non-zero unless the angle is recovered within 1e-6 degrees and the shift
within 1e-6 pixels, and the warp at the recovered parameters matches SciPy's
``affine_transform`` of the image to 1e-12.

    python examples/image_registration.py          # 48 x 48 pixels: ~4 s of CPU
    python examples/image_registration.py --fast   # 32 x 32: ~3 s
"""

import argparse
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.ndimage as ndi  # noqa: E402

from jaxbridge.adapters.linalg import solve  # noqa: E402
from jaxbridge.adapters.ndimage import affine_transform  # noqa: E402

ANGLE_DEGREES, SHIFT = 12.0, np.array([2.3, -1.7])


def blobs(n: int) -> np.ndarray:
    """A smooth test image: six Gaussian blobs of random widths and heights."""
    rng = np.random.default_rng(0)
    i, j = np.indices((n, n))
    image = np.zeros((n, n))
    for _ in range(6):
        ci, cj = rng.uniform(0.25 * n, 0.75 * n, 2)
        width, height = rng.uniform(0.06 * n, 0.12 * n), rng.uniform(0.5, 1.5)
        image += height * np.exp(-((i - ci) ** 2 + (j - cj) ** 2) / (2 * width**2))
    return image


def placement(params, center):
    """The matrix and offset that sample the image rotated by ``params[0]`` (radians) about
    ``center`` and shifted by ``params[1:]``: output index o reads input ``R o + offset``."""
    c, s = jnp.cos(params[0]), jnp.sin(params[0])
    rotation = jnp.array([[c, -s], [s, c]])
    return rotation, center - rotation @ center + params[1:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="a 32 x 32 image")
    n = 32 if parser.parse_args().fast else 48
    print(__doc__.splitlines()[0])

    image = blobs(n)
    center = (np.array(image.shape) - 1) / 2
    truth = np.array([np.deg2rad(ANGLE_DEGREES), *SHIFT])
    matrix, offset = (np.asarray(a) for a in placement(truth, center))
    target = ndi.affine_transform(image, matrix, offset, order=3, mode="nearest")

    def loss(params):
        matrix, offset = placement(params, center)
        warped = affine_transform(image, matrix, offset, order=3, mode="nearest")
        return jnp.mean((warped - target) ** 2)

    value_and_grad = jax.jit(jax.value_and_grad(loss))
    # the angle moves points by about its radius (n / 2) times as much as a shift does
    scale = jnp.array([1 / (n / 2) ** 2, 1.0, 1.0])
    params, velocity = jnp.zeros(3), jnp.zeros(3)
    for step in range(300):
        value, gradient = value_and_grad(params)
        velocity = 0.8 * velocity - 2.0 * scale * gradient
        params = params + velocity
        if step % 100 == 0:
            print(f"  step {step:3d}: loss {float(value):.3e}")
    descended = np.asarray(params)
    print(f"gradient descent: angle {np.rad2deg(descended[0]):.6f} deg, shift {descended[1:]}")

    newton = jax.jit(lambda p: p - solve(jax.hessian(loss)(p), jax.grad(loss)(p)))
    for _ in range(2):
        params = newton(params)
    found = np.asarray(params)
    angle_error = abs(np.rad2deg(found[0]) - ANGLE_DEGREES)
    shift_error = float(np.max(np.abs(found[1:] - SHIFT)))
    print(f"two Newton steps: angle {np.rad2deg(found[0]):.9f} deg (true {ANGLE_DEGREES}), ")
    print(f"  shift {found[1:]} (true {SHIFT}), loss {float(loss(params)):.2e}")

    matrix, offset = (np.asarray(a) for a in placement(params, center))
    warped = affine_transform(image, matrix, offset, order=3, mode="nearest")
    scipy_warped = ndi.affine_transform(image, matrix, offset, order=3, mode="nearest")
    warp_error = float(np.max(np.abs(np.asarray(warped) - scipy_warped)))

    if not (angle_error < 1e-6 and shift_error < 1e-6 and warp_error < 1e-12):
        print(
            f"FAILED: angle off by {angle_error:.2e} deg, shift by {shift_error:.2e} px, the "
            f"warp differs from SciPy's by {warp_error:.2e}."
        )
        return 1
    print(
        "Success: the rotation and shift are recovered within 1e-6 (degrees, pixels), and the "
        "warp is SciPy's affine_transform to 1e-12."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
