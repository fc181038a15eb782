"""Check that the built site has a reference entry for every public name.

``python docs/check_reference.py SITE_DIR`` after ``mkdocs build``: every name in
``jaxbridge.__all__``, ``jaxbridge.testing.__all__``, ``jaxbridge.adapters.__all__`` and each
``jaxbridge.adapters.<family>.__all__``, and every public attribute and method of
``Adapter``, must be the anchor of an entry on some page; and every adapter a family exports
(its error type aside) must be linked from the overview page, ``docs/catalogue/overview.md``.
A new adapter family needs its page in ``docs/catalogue/``, a line in ``mkdocs.yml``'s nav
and its table on the overview page; this names what is missing. The names are read from the
sources (no import), so this runs in any environment.
"""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def exported(init: Path) -> list[str]:
    """The names in ``__all__`` of a package's ``__init__.py``."""
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    return []


def adapter_members() -> list[str]:
    """The public attributes and methods defined in ``Adapter``'s class body."""
    tree = ast.parse((ROOT / "jaxbridge" / "_adapter.py").read_text())
    (adapter,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Adapter"]
    names = []
    for node in adapter.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.FunctionDef):
            names.append(node.name)
    return [n for n in names if not n.startswith("_")]


def main(site: Path) -> int:
    anchors = set()
    for page in site.rglob("*.html"):
        anchors.update(re.findall(r'id="(jaxbridge\.[^"]+)"', page.read_text()))
    wanted: dict[str, tuple[str, ...]] = {}  # name -> the anchors that document it
    for name in exported(ROOT / "jaxbridge" / "__init__.py"):
        wanted[f"jaxbridge.{name}"] = (f"jaxbridge.{name}",)
    for name in exported(ROOT / "jaxbridge" / "testing" / "__init__.py"):
        wanted[f"jaxbridge.testing.{name}"] = (f"jaxbridge.testing.{name}",)
    for name in adapter_members():
        wanted[f"jaxbridge.Adapter.{name}"] = (f"jaxbridge.Adapter.{name}",)
    families = sorted(
        p.parent.name
        for p in (ROOT / "adapters").glob("*/__init__.py")
        if not p.parent.name.startswith("_")  # (the shared layer, adapters/_*, is no family)
    )
    for family in families:
        for name in exported(ROOT / "adapters" / family / "__init__.py"):
            full = f"jaxbridge.adapters.{family}.{name}"
            # an instance named like its submodule (special.lambertw) is documented there
            wanted[full] = (full, f"{full}.{name}")
    for name in exported(ROOT / "adapters" / "__init__.py"):
        # re-exported classes are documented in their family's page
        wanted[f"jaxbridge.adapters.{name}"] = (f"jaxbridge.adapters.{name}",) + tuple(
            f"jaxbridge.adapters.{family}.{name}" for family in families
        )
    missing = [name for name, places in wanted.items() if not anchors.intersection(places)]
    for name in missing:
        print(f"no reference entry on the site for {name}")
    overview = site / "catalogue" / "overview" / "index.html"
    links = set(re.findall(r'href="[^"#]*#(jaxbridge\.[^"]+)"', overview.read_text()))
    for family in families:
        for name in exported(ROOT / "adapters" / family / "__init__.py"):
            full = f"jaxbridge.adapters.{family}.{name}"
            if not name.endswith(("Failure", "Error")) and not links.intersection(wanted[full]):
                missing.append(full)
                print(f"{full} is not on the overview page (docs/catalogue/overview.md)")
    if missing:
        print(
            f"{len(missing)} public names are not documented: add a `::: name` entry to their "
            "page, an adapter its line on docs/catalogue/overview.md (a new adapter family: "
            "docs/catalogue/<family>.md, a nav line in mkdocs.yml and its overview table)"
        )
        return 1
    print(f"reference entries: all {len(wanted)} public names documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
