"""The Hypothesis property suite's machinery: ``check_adapter`` on a family's ready adapters,
on inputs drawn from their domains, with all its checks (forward mode, transpose, hessian,
linear_transpose included).

Each family lists its cases in its own ``tests/test_properties_<family>.py``::

    CASES = [Case(MyAdapter()), ...]
    test_check_adapter_passes, test_every_check_runs_that_should = property_tests(
        CASES, quick={"MyAdapter"}
    )

``tests/test_adapters_properties.py`` checks that every exported adapter is listed in one.
The Hypothesis profile (``quick`` by default, ``thorough`` on demand) is set in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import jax
import numpy as np
import pytest
from hypothesis import find, given
from hypothesis import strategies as st

import jaxbridge as jb
from jaxbridge.internal import arg_names
from jaxbridge.testing import CHECKS, applicable_checks, check_adapter, inputs

NOT_LINEAR = frozenset({"linear_transpose"})  # no linear_in
HOST_RULES = frozenset({"hessian", "linear_transpose"})  # host rules, no linear_in


@dataclass(frozen=True)
class Case:
    adapter: jb.Adapter
    sizes: Mapping[str, int] = field(default_factory=dict)  # dimensions a parameter fixes
    # the checks that do not apply: "hessian" without rules in JAX, "linear_transpose"
    # without linear_in
    skipped: frozenset[str] = frozenset()
    # arguments with no derivative (a quantile's shapes): drawn from their domain, then
    # rounded up to integers, which the checks hold fixed
    held: tuple[str, ...] = ()
    # checks that apply but that this case leaves to the adapter's own tests (say why
    # where the case is listed): "hessian" where the shapes' second derivatives are NaN
    left_out: frozenset[str] = frozenset()
    # False for the costliest cases (host solvers that compute in float64 whatever the
    # input, and the Riccati solvers' second-order programs): their own tests check float32
    # inputs; the suite runs them in float64 alone
    float32: bool = True
    # check_adapter's tolerances for some checks (a solver's derivatives agree with each
    # other to its tolerance, not to rounding); the other checks keep their defaults
    rtol: Mapping[str, float] | None = None
    # and absolute ones: a solve accurate to its atol alone where its values pass through 0
    # makes the finite differences there off by ~atol / step
    atol: Mapping[str, float] | None = None
    # told apart from another case of the same adapter class in the test ids
    label: str = ""

    @property
    def id(self) -> str:
        adapter = self.adapter
        if hasattr(adapter, "routine"):
            return adapter.routine
        name = type(adapter).__name__.lstrip("_")
        name = f"{name}-{adapter.assume_a}" if hasattr(adapter, "assume_a") else name
        return f"{name}-{self.label}" if self.label else name

    def hold(self, args):
        names = arg_names(type(self.adapter))
        return tuple(
            np.ceil(a).astype(np.int32) if name in self.held else a for name, a in zip(names, args)
        )


# The Hessian check compiles second-order programs for every new shape, the costliest check
# here; its rules are the same code in both precisions, and against finite differences in
# float32 it is the looser test, so float32 leaves it to float64 (and to the float32 runs
# of tests/test_check_adapter_catches.py).
_CHECKS = {
    np.dtype(np.float32): tuple(c for c in CHECKS if c != "hessian"),
    np.dtype(np.float64): tuple(CHECKS),
}


def property_tests(cases: list[Case], quick: Collection[str] = ()):
    """The family's two property tests, to bind at module level (see the module docstring).

    ``quick`` names the cases (by id) that the quick subset (``pytest -m "not slow"``, with
    the smoke Hypothesis profile) checks in float64; each case costs seconds of compiling per
    example, so the rest, and float32, are marked slow (plain ``pytest`` runs them all)."""
    unknown = set(quick) - {case.id for case in cases}
    assert not unknown, f"quick names {sorted(unknown)}, which no case has as its id"

    @pytest.mark.parametrize(
        ("case", "dtype"),
        [
            pytest.param(
                case,
                dtype,
                id=f"{case.id}-{np.dtype(dtype).name}",
                marks=() if case.id in quick and dtype == np.float64 else pytest.mark.slow,
            )
            for dtype in (np.float32, np.float64)
            for case in cases
            if dtype == np.float64 or case.float32
        ],
    )
    @given(data=st.data())
    def test_check_adapter_passes(case, dtype, input_limits, data):
        with jax.enable_x64(dtype == np.float64):
            strategy = inputs(
                case.adapter,
                dtype=dtype,
                batch=st.sampled_from(input_limits.batches),
                sizes=case.sizes,
                max_size=input_limits.max_size,
            )
            args = case.hold(data.draw(strategy, label="args"))
            seed = data.draw(st.integers(0, 2**16 - 1), label="seed")
            checks = tuple(c for c in _CHECKS[np.dtype(dtype)] if c not in case.left_out)
            check_adapter(
                case.adapter, *args, seed=seed, checks=checks, rtol=case.rtol, atol=case.atol
            )

    @pytest.mark.slow  # seconds of compiling per case; the test above runs the checks
    @pytest.mark.parametrize("case", cases, ids=lambda case: case.id)
    def test_every_check_runs_that_should(case):
        """The checks that do not apply to an adapter are skipped quietly: make sure that
        those of the ready adapters are exactly the ones the case expects, so that none goes
        unrun."""
        args = case.hold(find(inputs(case.adapter, sizes=case.sizes), lambda _: True))
        # ("refused" runs where check_adapter is given refused arguments: none here)
        assert set(applicable_checks(case.adapter, *args)) == set(CHECKS) - case.skipped - {
            "refused"
        }

    return test_check_adapter_passes, test_every_check_runs_that_should
