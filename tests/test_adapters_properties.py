"""Every ready adapter is in the Hypothesis property suite.

Each family lists its cases in its own ``tests/test_properties_<family>.py`` (the machinery is
``tests/_properties.py``); this test finds the adapters that ``jaxbridge.adapters`` and its
subpackages export and says which no family lists.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import jaxbridge as jb
import jaxbridge.adapters


def _exported_adapters():
    """``(where, class)`` for every adapter that ``jaxbridge.adapters`` or one of its
    subpackages (``linalg``, ``special``, ...) exports, as a class or as a ready instance."""
    packages = [jaxbridge.adapters] + [
        importlib.import_module(f"jaxbridge.adapters.{module.name}")
        for module in pkgutil.iter_modules(jaxbridge.adapters.__path__)
        if module.ispkg
    ]
    for package in packages:
        for name in getattr(package, "__all__", ()):
            value = getattr(package, name)
            cls = value if isinstance(value, type) else type(value)
            if issubclass(cls, jb.Adapter):
                yield f"{package.__name__}.{name}", cls


def _listed_cases():
    for path in sorted(Path(__file__).parent.glob("test_properties_*.py")):
        yield from importlib.import_module(path.stem).CASES


def test_every_exported_adapter_is_listed():
    cases = list(_listed_cases())
    missing = [
        where
        for where, cls in _exported_adapters()
        if not any(isinstance(case.adapter, cls) for case in cases)
    ]
    assert not missing, (
        f"{missing} are exported but no tests/test_properties_<family>.py lists them: add an "
        "instance of each to its family's CASES (with the sizes of any dimensions its "
        "parameters fix)."
    )
