"""Packaging: the list of packages is found, not written by hand, so an adapter family's
folder under ``adapters/`` (installed as ``jaxbridge.adapters.<family>``) is packaged by
its ``__init__.py`` alone. Everything else is in ``pyproject.toml``."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["jaxbridge", "jaxbridge.*"]),
        "jaxbridge.adapters",
        *(f"jaxbridge.adapters.{name}" for name in find_packages("adapters")),
    ]
)
