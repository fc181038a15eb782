"""Every script in ``examples/`` runs, in its fast mode, and reaches its verdict.

Each example asserts its own outcome and exits non-zero if it is not met, so an example
can never silently rot. The scripts are found with a glob: a new one fails
``test_example`` until ``EXAMPLES`` says how to run it and what it prints on success.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(path.name for path in EXAMPLES_DIR.glob("*.py"))

# script -> (its fast-mode arguments, the line it prints only on success)
EXAMPLES = {
    "quickstart.py": ([], "All bridged results agree with native JAX."),  # fast already
    "custom_adapter.py": (["--fast"], "Every fitted scale is within 1% of the truth."),
    "kernel_ridge.py": (["--fast"], "The validation loss fell more than tenfold."),
    "lqr_control.py": (["--fast"], "The tuned gain is within 1% of the Riccati optimum."),
    "newton_lqr.py": ([], "Newton's method reached the Riccati optimum."),  # fast already
    "stiff_kinetics.py": (["--fast"], "Recovered all three rate constants within 3% of the truth."),
    "portfolio.py": (["--fast"], "The learned model reproduces every observed portfolio to 0.01."),
    "filter_fit.py": (
        ["--fast"],
        "The fitted filter's frequency response is within 1% of the true one.",
    ),
    "matern_gp.py": (
        ["--fast"],
        "The learned smoothness matches the grid search's maximum likelihood.",
    ),
}


@pytest.fixture(scope="module")
def run_example(tmp_path_factory):
    """Run an example once per test session, in a fresh directory (where it may write
    files, such as kernel_ridge.py's plot); return the finished process and the directory."""
    runs = {}

    def run(name: str) -> tuple[subprocess.CompletedProcess, Path]:
        if name not in runs:
            cwd = tmp_path_factory.mktemp(name.removesuffix(".py"))
            args, _ = EXAMPLES[name]
            process = subprocess.run(
                [sys.executable, str(EXAMPLES_DIR / name), *args],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=300,
            )
            runs[name] = process, cwd
        return runs[name]

    return run


def test_examples_are_found():
    assert "quickstart.py" in SCRIPTS, f"no examples found in {EXAMPLES_DIR}"
    stale = sorted(set(EXAMPLES) - set(SCRIPTS))
    assert not stale, f"EXAMPLES lists scripts that are not in examples/: {stale}"


@pytest.mark.parametrize("name", SCRIPTS)
def test_example(name, run_example):
    if name not in EXAMPLES:
        pytest.fail(
            f"examples/{name} is not in EXAMPLES in {Path(__file__).name}: add its fast-mode "
            "arguments and the line it prints on success."
        )
    process, _ = run_example(name)
    output = f"stdout:\n{process.stdout}\nstderr:\n{process.stderr}"
    assert process.returncode == 0, f"examples/{name} exited with {process.returncode}\n{output}"
    expected = EXAMPLES[name][1]
    assert expected in process.stdout.splitlines(), f"{expected!r} not printed\n{output}"


def test_kernel_ridge_saves_its_plot_or_says_why_not(run_example):
    process, cwd = run_example("kernel_ridge.py")
    assert process.returncode == 0, process.stderr
    plot = cwd / "kernel_ridge.png"  # the default path, in the working directory
    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed" in process.stdout
        assert not plot.exists()
    else:
        assert plot.read_bytes().startswith(b"\x89PNG"), f"no PNG at {plot}"
        assert f"saved the plot to {plot.name}" in process.stdout


def test_readme_quick_example_runs_and_gives_its_answer():
    text = (Path(__file__).parent.parent / "README.md").read_text()
    section = text[text.index("## Quick example") : text.index("## Writing an adapter")]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict = {}
    exec(compile(code, "README quick example", "exec"), namespace)
    result = namespace["jax"].jit(
        namespace["jax"].vmap(namespace["jax"].grad(lambda x: namespace["double"](x).sum()))
    )(namespace["xs"])
    assert result.tolist() == [2.0, 2.0, 2.0, 2.0]  # the value the README's comment shows
