"""``argument_names``: the names of a forward that takes its arguments as ``*args``."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import jaxbridge as jb


class _Sum(jb.Adapter):
    vectorized = True

    def forward(self, *args):
        return sum(args)


class Pair(_Sum):
    signature = "(),()->()"
    argument_names = ("a", "x")


class Triple(_Sum):
    signature = "(),(),()->()"
    argument_names = ("a", "b", "x")


def test_the_declared_names_name_the_arguments():
    assert float(Pair()(1.0, x=2.0)) == 3.0
    assert float(Triple()(1.0, 2.0, x=4.0)) == 7.0
    with pytest.raises(TypeError, match=r"argument 'x' must be an array of numbers"):
        Pair()(1.0, "text")


def test_without_them_such_arguments_are_numbered():
    class Numbered(_Sum):
        signature = "(),()->()"

    with pytest.raises(TypeError, match=r"argument 'x1' must be an array of numbers"):
        Numbered()(jnp.ones(2), None)


def test_a_forward_that_names_its_arguments_declares_none():
    class Both(jb.Adapter):
        signature = "()->()"
        argument_names = ("y",)

        def forward(self, x):
            return x

    with pytest.raises(TypeError, match="Both declares `argument_names`"):
        Both()(1.0)


def test_as_many_names_as_the_signature_has_inputs():
    class Short(_Sum):
        signature = "(),()->()"
        argument_names = ("a",)

    with pytest.raises(TypeError, match="Short.forward takes 1 arguments"):
        Short()(1.0, 2.0)
