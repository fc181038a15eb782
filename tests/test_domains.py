"""``jaxbridge.Domain``: a domain's room keeps ``check_adapter``'s finite differences inside it,
and an input outside it is refused with the domain's own words."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import jaxbridge as jb
from jaxbridge.adapters.linalg import MatrixSqrt
from jaxbridge.testing import check_adapter


def _above_one(raw: np.ndarray) -> np.ndarray:
    return 1.5 + raw / 4  # in [1.25, 1.75]


ABOVE_ONE = jb.Domain(
    "above_one", build=_above_one, room=lambda x: x - 1.0, outside="is not above 1"
)


class LogAboveOne(jb.Adapter):
    """log(x - 1): not defined at or below 1, where finite differences must not step."""

    signature = "()->()"
    domains = {"x": ABOVE_ONE}

    def forward(self, x):
        return np.log(x - 1.0)

    def backward(self, res, g):
        x, _ = res
        return (g / (x - 1.0),)


class LogAboveOneUnbounded(LogAboveOne):
    domains = {"x": _above_one}  # a plain function: builds values, sets no limit


_NEAR_ONE = np.array([1.0 + 1e-6, 1.5])  # one value a step of 1e-6 would leave the domain


def test_room_keeps_finite_differences_inside_the_domain():
    with jax.enable_x64(True):
        check_adapter(LogAboveOne(), _NEAR_ONE, checks=("grad",))


def test_without_room_finite_differences_step_outside():
    """The same adapter with a plain function as its domain: steps are not limited, cross 1,
    and the check fails (so the test above passes because of ``room``)."""
    with jax.enable_x64(True), pytest.raises(AssertionError):
        check_adapter(LogAboveOneUnbounded(), _NEAR_ONE, checks=("grad",))


def test_an_input_outside_is_refused_in_the_domains_words():
    with jax.enable_x64(True), pytest.raises(ValueError) as error:
        check_adapter(LogAboveOne(), np.array([0.5, 1.5]), checks=("grad",))
    message = str(error.value)
    assert "LogAboveOne" in message and "'x'" in message
    assert "is not above 1" in message and "'above_one'" in message


def test_a_ready_domain_refines_another():
    """``positive_spectrum`` draws as "well_conditioned" does, and refuses a matrix with an
    eigenvalue on the negative real axis, where the principal square root is not smooth."""
    with jax.enable_x64(True), pytest.raises(ValueError, match="closed negative real axis"):
        check_adapter(MatrixSqrt(), np.diag([-1.0, 2.0]), checks=("grad",))
    stable = jb.Domain.named("stable")
    hurwitz = dataclasses.replace(stable, name="hurwitz", room=None)
    raw = np.random.default_rng(0).uniform(-1, 1, (3, 4, 4))
    np.testing.assert_array_equal(hurwitz.build(raw), stable.build(raw))


def test_domain_of_what_adapters_declare():
    assert jb.Domain.of("spd") is jb.Domain.named("spd")
    assert jb.Domain.of(ABOVE_ONE) is ABOVE_ONE
    assert jb.Domain.of(_above_one).name == "_above_one"
    with pytest.raises(TypeError, match="a name, a function or a Domain"):
        jb.Domain.of(3)
