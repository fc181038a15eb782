"""Write the catalogue's tables from the families' own declarations.

``python docs/catalogue_tables.py`` rewrites what lies between ``<!-- catalogue:begin -->`` and
``<!-- catalogue:end -->`` in ``README.md`` (the catalogue table, a row per family) and in
``docs/catalogue/index.md`` (the list of modules); ``--check`` rewrites nothing and exits
non-zero, naming each stale file and the command, when either differs from what the families
declare (``tests/test_catalogue_tables.py`` runs it). Each family declares, in
``adapters/<family>/__init__.py``:

- ``_scipy_module``: the SciPy module it mirrors (``"scipy.sparse.linalg"``), shown beside
  the family's name where it is not ``scipy.<family>``;
- ``_catalogue_adapters``: the README row's adapters, as Markdown (a curated list, grouped
  and annotated, so it is written rather than taken from ``__all__``);
- ``_catalogue_derivatives``: the README row's derivatives, as Markdown.

``docs/catalogue/overview.md``'s "derivatives" column, one cell per adapter, is written from
the family pages' tables, which describe each adapter (``overview_derivatives``): the lead of
its row's "derivatives" cell, up to the first ``: `` or ``. `` (else ``, ``) outside
parentheses and code, so that the overview cannot say first order where the family's page
says second.

The families come in the order of their pages in ``mkdocs.yml``'s nav. The declarations are
read from the sources (no import), so this runs in any environment.
"""

import ast
import difflib
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- catalogue:begin -->", "<!-- catalogue:end -->"
DECLARED = ("_scipy_module", "_catalogue_adapters", "_catalogue_derivatives")
WIDTH = 92  # the index's lines, as wide as the project's prose


def declarations(family: str) -> dict[str, str]:
    """The catalogue's declarations in ``adapters/<family>/__init__.py``."""
    init = ROOT / "adapters" / family / "__init__.py"
    found = {}
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in DECLARED:
                    found[target.id] = ast.literal_eval(node.value)
    missing = [name for name in DECLARED if name not in found]
    if missing:
        raise SystemExit(
            f"adapters/{family}/__init__.py declares no {', '.join(missing)}: the catalogue's "
            f"tables are written from them (see docs/catalogue_tables.py's docstring)"
        )
    return found


def families() -> list[str]:
    """The families, in the order of their pages in ``mkdocs.yml``'s nav."""
    folders = {
        p.parent.name
        for p in (ROOT / "adapters").glob("*/__init__.py")
        if not p.parent.name.startswith("_")  # (the shared layer, adapters/_*, is no family)
    }
    navigation = re.findall(r"catalogue/(\w+)\.md", (ROOT / "mkdocs.yml").read_text())
    ordered = [page for page in navigation if page in folders]
    unlisted = sorted(folders - set(ordered))
    if unlisted:
        raise SystemExit(
            f"no page in mkdocs.yml's nav for {', '.join(unlisted)}: the catalogue's tables "
            "list the families in the nav's order (add docs/catalogue/<family>.md to it)"
        )
    return ordered


def scipy_note(family: str, module: str) -> str:
    """`` (`scipy.sparse.linalg`)`` where the module is not ``scipy.<family>``, else nothing."""
    return "" if module == f"scipy.{family}" else f" (`{module}`)"


def readme_table() -> str:
    """The README's catalogue table: a row per family."""
    lines = ["| module | adapters | derivatives |", "| --- | --- | --- |"]
    for family in families():
        d = declarations(family)
        module = f"[`{family}`](docs/catalogue/{family}.md){scipy_note(family, d['_scipy_module'])}"
        lines.append(f"| {module} | {d['_catalogue_adapters']} | {d['_catalogue_derivatives']} |")
    return "\n" + "\n".join(lines) + "\n"


def index_modules(column: int) -> str:
    """The index's list of modules, wrapped as if it began at ``column`` of its line."""
    names = [
        f"`{'jaxbridge.adapters' if i == 0 else ''}.{family}`"
        f"{scipy_note(family, declarations(family)['_scipy_module'])}"
        for i, family in enumerate(families())
    ]
    text = ", ".join(names) + "."
    lines = textwrap.wrap(text, WIDTH, initial_indent=" " * column, break_on_hyphens=False)
    return "\n".join(lines)[column:]


def cells(row: str) -> list[str]:
    """The cells of a Markdown table row (a ``|`` inside code is no separator)."""
    found, current, code = [], "", False
    for char in row.strip().removeprefix("|").removesuffix("|"):
        if char == "`":
            code = not code
        if char == "|" and not code:
            found.append(current.strip())
            current = ""
        else:
            current += char
    return [*found, current.strip()]


def lead(cell: str) -> str:
    """A family page's "derivatives" cell up to its first ``: `` or ``. `` (else its first
    ``, ``) outside parentheses, brackets and code: the summary the overview shows."""
    ends: dict[str, int] = {}
    depth, code = 0, False
    for i, char in enumerate(cell):
        if char == "`":
            code = not code
        elif not code and char in "([":
            depth += 1
        elif not code and char in ")]":
            depth -= 1
        elif not code and depth == 0 and cell[i : i + 2] in (": ", ". ", ", "):
            ends.setdefault(cell[i], i)
    end = min((ends[c] for c in ":." if c in ends), default=ends.get(",", len(cell)))
    return cell[:end]


def family_derivatives(page: Path) -> dict[str, str] | None:
    """The lead of each row's "derivatives" cell on a family's page, by the row's name (its
    first code span's name: ``Root`` for ``Root(residual)(x0, theta)``); None for a page
    whose tables have no such column."""
    found: dict[str, str] = {}
    column = None
    for line in page.read_text().splitlines():
        if not line.startswith("|"):
            column = None
            continue
        row = cells(line)
        if column is None:
            column = row.index("derivatives") if "derivatives" in row else -1
        elif column >= 0 and not set(line) <= set("|- "):
            name = re.match(r"`([A-Za-z_][\w.]*)", row[0])
            if name is None:
                raise SystemExit(f"{page.relative_to(ROOT)}: a row names no adapter: {line}")
            found.setdefault(name.group(1), lead(row[column]))
    return found if column is not None or found else None


def overview_derivatives(text: str) -> str:
    """``docs/catalogue/overview.md`` with each row's "derivatives" cell (the last) written
    from its family page: the row of the last adapter it links to (the class, where a ready
    instance comes first: ``linprog (Linprog)``), else of another it links to."""
    lines = text.split("\n")
    page = None
    for i, line in enumerate(lines):
        heading = re.match(r"## \[.*\]\((\w+)\.md\)", line)
        if heading:
            page = family_derivatives(ROOT / "docs" / "catalogue" / f"{heading.group(1)}.md")
            continue
        if page is None or not line.startswith("| [") and not line.startswith("| `"):
            continue
        row = cells(line)
        linked = re.findall(r"\]\(\w+\.md#jaxbridge\.adapters\.[\w.]*?(\w+)\)", row[0])
        known = [name for name in reversed(linked) if name in page]
        if not known:
            raise SystemExit(
                f"docs/catalogue/overview.md: no row of its family's page describes {row[0]}"
            )
        row[-1] = page[known[0]]
        lines[i] = "| " + " | ".join(row) + " |"
    return "\n".join(lines)


def regenerate(path: Path, render: Callable[[int], str]) -> tuple[str, str]:
    """The file's text, and its text with the region between the markers rendered again."""
    text = path.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise SystemExit(f"{path.relative_to(ROOT)} needs one {BEGIN} and one {END}")
    begin = text.index(BEGIN)
    column = begin - (text.rfind("\n", 0, begin) + 1)  # where the region starts on its line
    return text, text[: begin + len(BEGIN)] + render(column) + text[text.index(END) :]


def main(check: bool) -> int:
    targets = {
        ROOT / "README.md": lambda column: readme_table(),
        ROOT / "docs" / "catalogue" / "index.md": index_modules,
    }
    stale = []
    rewritten = {path: regenerate(path, render) for path, render in targets.items()}
    overview = ROOT / "docs" / "catalogue" / "overview.md"
    text = overview.read_text()
    rewritten[overview] = text, overview_derivatives(text)
    for path, (old, new) in rewritten.items():
        if old == new:
            continue
        name = str(path.relative_to(ROOT))
        stale.append(name)
        if check:
            diff = difflib.unified_diff(
                old.splitlines(), new.splitlines(), name, f"{name} (generated)", lineterm=""
            )
            print(f"{name} is stale: its catalogue differs from the families' declarations")
            print("\n".join(diff))
        else:
            path.write_text(new)
            print(f"rewrote the catalogue in {name}")
    if check and stale:
        print(
            f"{', '.join(stale)}: the catalogue is written from adapters/<family>/__init__.py "
            "(_scipy_module, _catalogue_adapters, _catalogue_derivatives), the overview's "
            "derivatives from the families' pages (docs/catalogue/<family>.md); regenerate it "
            "with `python docs/catalogue_tables.py`"
        )
        return 1
    if not stale:
        print("the catalogue in README.md, docs/catalogue/index.md and overview.md is up to date")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["--check"]):
        sys.exit("usage: python docs/catalogue_tables.py [--check]")
    sys.exit(main(check=sys.argv[1:] == ["--check"]))
