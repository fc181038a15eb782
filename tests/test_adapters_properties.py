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


ROOT = Path(__file__).resolve().parent.parent


def test_every_family_is_packaged_tested_and_documented():
    """A family is its folder under ``adapters/`` and its tests (CONTRIBUTING.md, "Adding an
    adapter family"): packaging finds the folder by its ``__init__.py``, and this names what
    a new one still lacks (its public names, property cases, catalogue page)."""
    from setuptools import find_packages

    packages = sorted(p.parent.name for p in (ROOT / "adapters").glob("*/__init__.py"))
    families = sorted(
        p.parent.name
        for p in (ROOT / "adapters").glob("*/__init__.py")
        if not p.parent.name.startswith("_")  # (the shared layer, adapters/_*, is no family)
    )
    assert set(find_packages(str(ROOT / "adapters"))) >= set(packages)
    navigation = (ROOT / "mkdocs.yml").read_text()
    lacking = []
    for family in families:
        package = importlib.import_module(f"jaxbridge.adapters.{family}")
        if not getattr(package, "__all__", ()):
            lacking.append(f"{family}: no __all__ in adapters/{family}/__init__.py")
        if not (ROOT / "tests" / f"test_properties_{family}.py").exists():
            lacking.append(f"{family}: no tests/test_properties_{family}.py")
        if not (ROOT / "docs" / "catalogue" / f"{family}.md").exists():
            lacking.append(f"{family}: no docs/catalogue/{family}.md")
        elif f"catalogue/{family}.md" not in navigation:
            lacking.append(f"{family}: docs/catalogue/{family}.md is not in mkdocs.yml's nav")
    assert not lacking, lacking
