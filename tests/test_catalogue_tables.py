"""The catalogue in README.md and docs/catalogue/index.md is what the families declare.

``docs/catalogue_tables.py`` writes both from each ``adapters/<family>/__init__.py``; this
runs its ``--check``, which names a stale file and the command that regenerates it.
"""

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
