"""Every matrix product that a bridged call's rules trace is at float32 precision: a TPU
multiplies float32 at bf16-pass precision by default (about 3 digits), which made
``Cdist("cosine")``'s jvp 1.5% off and ``AffineTransform``'s 4e-5 there, against the CPU.
The CPU ignores the setting, so the test reads it in the lowered program: a tangent or
cotangent map traced into the lowering (not only the rules JAX calls while differentiating)
must ask for ``HIGHEST``."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbridge.adapters.ndimage import AffineTransform
from jaxbridge.adapters.spatial import Cdist

RNG = np.random.default_rng(0)
POINTS = jnp.asarray(RNG.standard_normal((3, 2)), jnp.float32)
OTHERS = jnp.asarray(RNG.standard_normal((4, 2)), jnp.float32)
IMAGE = jnp.asarray(RNG.standard_normal((5, 6)), jnp.float32)
MATRIX = jnp.asarray([[0.9, 0.1], [-0.1, 0.95]], jnp.float32)

CALLS = {
    "cdist-cosine": (lambda x: Cdist("cosine")(x, OTHERS), POINTS),
    "cdist-mahalanobis": (lambda x: Cdist("mahalanobis")(x, OTHERS), POINTS),
    "affine-matrix": (lambda m: AffineTransform(3, output_shape=(5, 6))(IMAGE, m), MATRIX),
}


def _programs(f, x):
    yield "jvp", jax.jit(lambda x, t: jax.jvp(f, (x,), (t,))), (x, x)
    yield "vjp", jax.jit(lambda x, g: jax.vjp(f, x)[1](g)), (x, f(x))
    yield (
        "jvp of grad",
        jax.jit(lambda x, t: jax.jvp(jax.grad(lambda x: f(x).sum()), (x,), (t,))),
        (x, x),
    )


@pytest.mark.parametrize("name", CALLS)
def test_every_product_in_a_rule_asks_for_full_precision(name):
    f, x = CALLS[name]
    for mode, program, args in _programs(f, x):
        text = program.lower(*args).as_text()
        products = re.findall(r"dot_general[^\n]*", text)
        assert products, f"{name} {mode}: no matrix product to check (the test lost its point)"
        coarse = [p for p in products if "precision = [HIGHEST, HIGHEST]" not in p]
        assert not coarse, f"{name} {mode}: products at default precision: {coarse}"
