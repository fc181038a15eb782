"""The catalogue in README.md and docs/catalogue/index.md is what the families declare.

``docs/catalogue_tables.py`` writes both from each ``adapters/<family>/__init__.py``, and the
derivatives column of docs/catalogue/overview.md from the families' pages; this runs its
``--check``, which names a stale file and the command that regenerates it.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_catalogue_tables_are_generated_from_the_families():
    script = ROOT / "docs" / "catalogue_tables.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _tables():
    spec = importlib.util.spec_from_file_location(
        "catalogue_tables", ROOT / "docs" / "catalogue_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_overview_derivatives_are_written_from_the_family_pages():
    """The overview once said first order for Root and Quad where optimize.md and
    integrate.md say second: its column is now the family page's, so a cell edited by hand
    is written back."""
    tables = _tables()
    overview = (ROOT / "docs" / "catalogue" / "overview.md").read_text()
    for name in ("Root", "Quad", "OdeSolve", "Minimize", "LeastSquares"):
        (row,) = [line for line in overview.splitlines() if line.startswith(f"| [`{name}`]")]
        assert row.endswith("| second order |"), row
        edited = overview.replace(row, row.removesuffix("| second order |") + "| first order |")
        assert tables.overview_derivatives(edited) == overview


def test_the_lead_of_a_cell_ends_outside_parentheses_and_code():
    lead = _tables().lead
    assert lead("second order, implicit function theorem (a: b, c)") == "second order"
    assert lead("every order: one `SylvesterSolve` per rule, exact") == "every order"
    assert lead("second order. First order: by default") == "second order"
    assert lead("every order (away from a, b)") == "every order (away from a, b)"
    assert lead("every order in `x`; first order in the shapes, and mixed") == (
        "every order in `x`; first order in the shapes"
    )
