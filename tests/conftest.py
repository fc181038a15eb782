"""Shared test settings.

Hypothesis profiles, for the property tests (``test_properties_*.py`` and the other
tests that draw inputs with ``jaxbridge.testing.inputs``). Every example at a new shape
compiles JAX programs (~0.1-0.5 s), so both profiles turn the deadline off and keep shapes
small; they differ in how much they explore:

- ``quick`` (the default, what CI runs): 10 examples per test, derandomized so that every run
  checks the same inputs, core dimensions of size 1 or 2, batch shapes () and (2,).
- ``thorough``: ``JAXBRIDGE_HYPOTHESIS_PROFILE=thorough pytest``. 100 random examples per
  test, dimensions up to 4, batch shapes up to (2, 3). Run it after changing an adapter or
  the bridge; it takes minutes.
- ``smoke``: the default of the quick subset, ``pytest -m "not slow"`` (docs/getting-started.md):
  2 examples per test, derandomized, the quick profile's sizes, so that every adapter
  still goes through ``check_adapter`` once or twice. An explicit
  ``JAXBRIDGE_HYPOTHESIS_PROFILE`` wins.

The ``slow`` marker (registered in ``pyproject.toml``) marks the tests that ``-m "not slow"``
leaves out; plain ``pytest`` runs them all.

And a bound on what a worker process keeps compiled (``_bounded_mappings``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import jax
import pytest
from hypothesis import settings

# --- Hypothesis profiles -------------------------------------------------------------------


@dataclass(frozen=True)
class InputLimits:
    """How large the drawn inputs may be, per profile (see the module docstring)."""

    max_size: int  # the largest size drawn for a core dimension
    batches: tuple[tuple[int, ...], ...]  # the leading batch shapes drawn from


_PROFILES = {
    "quick": (
        settings(deadline=None, max_examples=10, derandomize=True),
        InputLimits(max_size=2, batches=((), (2,))),
    ),
    "thorough": (
        settings(deadline=None, max_examples=100),
        InputLimits(max_size=4, batches=((), (2,), (3,), (2, 3))),
    ),
    "smoke": (
        settings(deadline=None, max_examples=2, derandomize=True),
        InputLimits(max_size=2, batches=((), (2,))),
    ),
}
_CHOSEN = os.environ.get("JAXBRIDGE_HYPOTHESIS_PROFILE")
_PROFILE = _CHOSEN or "quick"
if _PROFILE not in _PROFILES:
    raise ValueError(
        f"JAXBRIDGE_HYPOTHESIS_PROFILE={_PROFILE!r}; the profiles are {sorted(_PROFILES)}."
    )
for _name, (_settings, _) in _PROFILES.items():
    settings.register_profile(_name, _settings)
settings.load_profile(_PROFILE)


@pytest.fixture(scope="session")
def input_limits() -> InputLimits:
    """The input sizes of the Hypothesis profile in use."""
    return _PROFILES[_PROFILE][1]


def pytest_configure(config: pytest.Config) -> None:
    global _PROFILE
    # the quick subset, `pytest -m "not slow"`, draws fewer examples unless told otherwise
    if _CHOSEN is None and "not slow" in (config.getoption("markexpr", "") or ""):
        _PROFILE = "smoke"
        settings.load_profile(_PROFILE)
    # On a failing example Hypothesis drafts a patch with libcst, whose import warns
    # (DeprecationWarning from mypy_extensions, where installed); under `filterwarnings =
    # error` that warning would replace the test's own failure report.
    config.addinivalue_line(
        "filterwarnings", "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
    )


# --- compiled programs ---------------------------------------------------------------------
# Every program XLA compiles for the CPU keeps its machine code in memory mappings of its own
# while JAX's caches hold it (3 to 20 per program, measured), and a test worker compiles tens
# of thousands of programs. At Linux's limit on a process's mappings (vm.max_map_count,
# 65,530 by default) XLA's next compilation crashed the worker with a segmentation fault
# (the core dump of one held 65,486 mappings). So the caches are cleared after every slow
# test (each compiles hundreds of programs of its own) and after every module (counting the
# mappings instead costs about 3 µs per mapping, tens of milliseconds per test).


@pytest.fixture(autouse=True)
def _bounded_mappings(request: pytest.FixtureRequest):
    yield
    if request.node.get_closest_marker("slow") is not None:
        jax.clear_caches()


@pytest.fixture(autouse=True, scope="module")
def _bounded_mappings_per_module():
    yield
    jax.clear_caches()


@pytest.fixture(
    params=[
        pytest.param(
            "buffer_callback",
            marks=pytest.mark.skipif(
                jax.default_backend() != "cpu", reason="the buffer_callback transport is CPU only"
            ),
        ),
        "pure_callback",
    ]
)
def transport(request: pytest.FixtureRequest):
    """Each transport the backend has, chosen for the test, then the session's again."""
    import jaxbridge as jb

    jb.set_transport(request.param)
    yield request.param
    jb.set_transport(os.environ.get("JAXBRIDGE_TRANSPORT", "auto"))
