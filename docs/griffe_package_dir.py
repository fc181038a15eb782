"""A griffe extension for the documentation site: the subpackages that setuptools' `package-dir`
(pyproject.toml) installs from another folder, as `adapters/` installs as `jaxbridge.adapters`.

griffe reads files, not imports. A wheel has `jaxbridge/adapters/` in place; an editable
install maps it only at import time (setuptools' finder), so griffe found `jaxbridge` in the
source tree without `jaxbridge.adapters`, and every catalogue entry "could not be found". When
the package was read from this source tree and lacks such a subpackage, this loads its folder
under its installed name (relative imports then resolve as in the installed package). From an
installed wheel it does nothing: the wheel must hold the subpackage itself.
"""

import tomllib
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parent.parent


def _package_dir() -> dict[str, str]:
    """`[tool.setuptools] package-dir` of pyproject.toml: installed name -> source folder."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file).get("tool", {}).get("setuptools", {}).get("package-dir", {})


class PackageDir(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: object):
        if pkg.filepath != ROOT / pkg.name / "__init__.py":
            return  # installed (a wheel): its subpackages are where griffe looks
        # parents before children (`a.b` before `a.b.c`)
        for name, folder in sorted(_package_dir().items(), key=lambda item: item[0].count(".")):
            parent_name, _, child = name.rpartition(".")
            if not name.startswith(pkg.name + ".") or not (ROOT / folder / "__init__.py").exists():
                continue
            parent = pkg if parent_name == pkg.name else pkg[parent_name[len(pkg.name) + 1 :]]
            if child in parent.members:
                continue
            # griffe has no public call that loads a folder under another dotted name
            module = loader._load_module(child, ROOT / folder / "__init__.py", parent=parent)
            parent.set_member(child, module)
            loader.expand_exports(module)
            loader.expand_wildcards(module, external=False)
