"""Many host errors in one process, under every transformation, each raised as the adapter's
own exception inside ``jaxbridge.host_errors`` (JAX's ``JaxRuntimeError`` outside it), and
the calls between them still right: a training run must never die, or go on with wrong
numbers, because SciPy raised. In the TPU subset (``-m tpu``, ``docs/accelerators.md``),
where a host error crosses the device boundary."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbridge as jb

pytestmark = pytest.mark.tpu


class SingularBelowZero(jb.Adapter):
    """``2 x``, refusing on the host (as SciPy refuses a singular matrix) where ``x[0] < 0``."""

    signature = "(n)->(n)"

    def forward(self, x):
        if x[0] < 0:
            raise np.linalg.LinAlgError(f"Matrix is singular (x[0] = {x[0]}).")
        return 2 * x

    def backward(self, res, g):
        x = res[0]
        if x[0] < 0:
            raise np.linalg.LinAlgError("no gradient at a singular matrix")
        return (2 * g,)


ADAPTER = SingularBelowZero()
TRANSFORMS = {
    "jit": jax.jit(ADAPTER),
    "vmap": jax.jit(jax.vmap(ADAPTER)),
    "grad": jax.jit(jax.grad(lambda x: jnp.sum(ADAPTER(x) ** 2))),
    "scan": jax.jit(lambda x: jax.lax.scan(lambda c, r: (c, ADAPTER(r)), None, x)[1]),
}
EXPECTED = {"jit": 2.0, "vmap": 2.0, "grad": 8.0, "scan": 2.0}  # per entry, at x = 1


def _argument(name: str, sign: float) -> jax.Array:
    shape = (2, 3) if name in ("vmap", "scan") else (3,)
    return sign * jnp.ones(shape, jnp.float32)


def _error_then_good(name: str) -> None:
    function = TRANSFORMS[name]
    with pytest.raises(np.linalg.LinAlgError, match="singular"), jb.host_errors():
        jax.block_until_ready(function(_argument(name, -1.0)))
    good = np.asarray(function(_argument(name, 1.0)))
    np.testing.assert_array_equal(good, np.full(good.shape, EXPECTED[name]), err_msg=name)


def test_fifty_host_errors_in_a_row_each_raised_and_the_good_calls_between_right():
    for round_ in range(50):
        _error_then_good(["jit", "vmap", "grad"][round_ % 3])


# Measured on jax 0.12.0.1 with the CPU's buffer_callback transport (not on 0.10.2 or 0.12.1,
# and not with pure_callback on any): after a host error inside a scan and then one in another
# program, the scan's next call, good or not, failed with "Buffer.__array__ is only supported
# on CPU" (the buffer XLA handed the callback had a garbage DLPack device): an error, never a
# wrong value. jax 0.12.1 fixed it (the test passed there in 11 runs of 11); strict, so that a
# 0.12.0 install still reports it and a regression in a later JAX fails.
_SCAN_AFTER_ANOTHER = pytest.mark.xfail(
    (0, 12) <= jax.__version_info__[:3] < (0, 12, 1) and jb.transport() == "buffer_callback",
    reason="jax 0.12.0's buffer callback after errors in a scan and elsewhere (see above)",
    raises=jax.errors.JaxRuntimeError,
    strict=True,
)


@_SCAN_AFTER_ANOTHER
def test_host_errors_in_a_scan_between_errors_in_another_program():
    for _ in range(5):
        _error_then_good("scan")
        _error_then_good("jit")


def test_outside_host_errors_a_host_error_is_jaxs_runtime_error_quoting_it():
    for _ in range(10):
        with pytest.raises(jax.errors.JaxRuntimeError, match="Matrix is singular"):
            jax.block_until_ready(TRANSFORMS["jit"](_argument("jit", -1.0)))
