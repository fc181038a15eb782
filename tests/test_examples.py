"""Every script in ``examples/`` runs, in its fast mode, and reaches its verdict.

Each example asserts its own outcome and exits non-zero if it is not met, so an example
can never silently rot. Each also opens with a line saying what it solves and ends on a
line starting "Success:"; both are checked here. The scripts are found with a glob: a new
one fails ``test_example`` until ``EXAMPLES`` says how to run it and what it prints.

Most examples take 10-40 s of CPU even in fast mode (JAX compiles; SciPy's solvers run
on the host): those are marked ``slow``, so that ``pytest -m "not slow"`` skips them.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(path.name for path in EXAMPLES_DIR.glob("*.py"))

# script -> (its fast-mode arguments, the start of its first line (what it solves),
#            the line it prints only on success)
EXAMPLES = {
    "quickstart.py": (
        [],
        "Quickstart:",
        "Success: all 5 bridged results agree with native JAX (to 1e-10).",
    ),
    "custom_adapter.py": (
        ["--fast"],
        "Custom adapter:",
        "Success: BesselJ passed check_adapter, and every fitted scale is within 1% of the "
        "true one.",
    ),
    "kernel_ridge.py": (
        ["--fast"],
        "Kernel ridge regression:",
        "Success: training lowered the validation loss more than tenfold.",
    ),
    "lqr_control.py": (
        ["--fast"],
        "LQR control:",
        "Success: the gain tuned by gradient descent is within 1% of the Riccati optimum K* "
        "(from scipy.linalg.solve_continuous_are).",
    ),
    "newton_lqr.py": (
        [],  # fast already
        "Newton LQR:",
        "Success: Newton's method reached the Riccati optimum K* "
        "(from scipy.linalg.solve_continuous_are) to a relative 1e-9.",
    ),
    "stiff_kinetics.py": (
        ["--fast"],
        "Stiff kinetics:",
        "Success: all three fitted rate constants are within 3% of the true ones.",
    ),
    "portfolio.py": (
        ["--fast"],
        "Portfolio:",
        "Success: the learned model reproduces every observed portfolio: each weight within 0.01.",
    ),
    "filter_fit.py": (
        ["--fast"],
        "Filter fit:",
        "Success: the fitted filter's frequency response is within 1% (of its peak) of the "
        "true one at every frequency.",
    ),
    "fit_student_t.py": (
        ["--fast"],
        "Student-t fit:",
        "Success: the maximum-likelihood fit through jaxbridge's t.logcdf and t.logsf agrees "
        "with SciPy's t.fit of the censored data to 0.1% in every parameter, with no higher "
        "negative log-likelihood.",
    ),
    "matern_gp.py": (
        ["--fast"],
        "Matérn GP:",
        "Success: the optimum found by gradient through kv agrees with the grid search's "
        "maximum-likelihood point (ν, ℓ) on this sample.",
    ),
    "opacity_fit.py": (
        [],  # fast already
        "Opacity fit:",
        "Success: the fitted temperature and density are within 0.5% of the true ones.",
    ),
    "matching_registration.py": (
        ["--fast"],
        "Matching registration:",
        "Success: the fitted rotation and shift are within 1e-3 of the true ones; Linprog's "
        "transport plan costs what the assignment does, its gradient is the assignment, and "
        "its degenerate plan's derivative is refused.",
    ),
    "image_registration.py": (
        ["--fast"],
        "Image registration:",
        "Success: the rotation and shift are recovered within 1e-6 (degrees, pixels), and the "
        "warp is SciPy's affine_transform to 1e-12.",
    ),
    "lattice_modes.py": (
        ["--fast"],
        "Lattice modes:",
        "Success: the three lowest frequencies of the tuned chain are within 0.1% of their "
        "targets (checked with dense numpy.linalg.eigvalsh).",
    ),
    "metric_learning.py": (
        ["--fast"],
        "Metric learning:",
        "Success: the learned weights put over 90% of their mass on the two coordinates that "
        "matter, and the held-out error (SciPy's cdist) is under a quarter of the best equal "
        "weights'.",
    ),
    "bilevel_penalties.py": (
        [],  # fast already
        "Bilevel fit:",
        "Success: Newton's method through Minimize's Hessian reached the optimum of SciPy's "
        "Nelder-Mead (to 1e-5), and its Hessian agrees with second differences of SciPy's "
        "solves (to 1e-4).",
    ),
    "directional_training.py": (
        ["--fast"],
        "Directional regression:",
        "Success: the model trained through SciPy's ive to within 0.05 nats of the true "
        "distribution.",
    ),
}

# Over ~10 s of CPU in fast mode (measured on a 2-core machine; see docs/examples/index.md): left
# out of `pytest -m "not slow"`. The quick subset still runs one example end to end.
SLOW = {
    "fit_student_t.py",
    "custom_adapter.py",
    "kernel_ridge.py",
    "lqr_control.py",
    "matern_gp.py",
    "portfolio.py",
    "stiff_kinetics.py",
    "filter_fit.py",
    "newton_lqr.py",
    "opacity_fit.py",
    "lattice_modes.py",
    "matching_registration.py",
    "image_registration.py",
    "bilevel_penalties.py",
    "metric_learning.py",
    "directional_training.py",
}


@pytest.fixture(scope="module")
def run_example(tmp_path_factory):
    """Run an example once per test session, in a fresh directory (where it may write
    files, such as kernel_ridge.py's plot); return the finished process and the directory."""
    runs = {}

    def run(name: str) -> tuple[subprocess.CompletedProcess, Path]:
        if name not in runs:
            cwd = tmp_path_factory.mktemp(name.removesuffix(".py"))
            args = EXAMPLES[name][0]
            process = subprocess.run(
                [sys.executable, str(EXAMPLES_DIR / name), *args],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=900,  # stiff_kinetics took 330 s on 2 cores shared five ways
            )
            runs[name] = process, cwd
        return runs[name]

    return run


def test_examples_are_found():
    assert "quickstart.py" in SCRIPTS, f"no examples found in {EXAMPLES_DIR}"
    stale = sorted(set(EXAMPLES) - set(SCRIPTS))
    assert not stale, f"EXAMPLES lists scripts that are not in examples/: {stale}"


def test_the_slow_examples_exist():
    stale = sorted(SLOW - set(SCRIPTS))
    assert not stale, f"SLOW lists scripts that are not in examples/: {stale}"


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in SCRIPTS]
)
def test_example(name, run_example):
    if name not in EXAMPLES:
        pytest.fail(
            f"examples/{name} is not in EXAMPLES in {Path(__file__).name}: add its fast-mode "
            "arguments, the start of its first line and the line it prints on success."
        )
    process, _ = run_example(name)
    output = f"stdout:\n{process.stdout}\nstderr:\n{process.stderr}"
    assert process.returncode == 0, f"examples/{name} exited with {process.returncode}\n{output}"
    _, opening, success = EXAMPLES[name]
    lines = process.stdout.splitlines()
    assert lines and lines[0].startswith(opening), f"does not open with {opening!r}\n{output}"
    assert success in lines, f"{success!r} not printed\n{output}"
    assert lines[-1] == success, f"the success line is not the last line\n{output}"
    assert "FAILED" not in process.stdout, output


@pytest.mark.slow
def test_matern_gp_says_what_its_reference_is(run_example):
    """The fitted ν need not be the true one: the output must say that the comparison is
    with the grid search's optimum on this sample, not with the ν the data were drawn with."""
    process, _ = run_example("matern_gp.py")
    assert process.returncode == 0, process.stderr
    assert (
        "What is compared: the reference is the grid search's best point on THIS sample, not "
        "the true ν = 1.5." in process.stdout.splitlines()
    ), process.stdout


@pytest.mark.slow
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
    section = text[text.index("## Quick example") : text.index("## The catalogue")]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    namespace: dict = {}
    exec(compile(code, "README quick example", "exec"), namespace)
    result = namespace["jax"].jit(
        namespace["jax"].vmap(namespace["jax"].grad(lambda x: namespace["double"](x).sum()))
    )(namespace["xs"])
    assert result.tolist() == [2.0, 2.0, 2.0, 2.0]  # the value the README's comment shows


@pytest.mark.tpu
def test_quickstart_in_this_process(capsys):
    """The main job in the test process itself, on JAX's default backend (a TPU, in the TPU
    subset, where a subprocess could not open the chip that pytest holds)."""
    import jax

    if not jax.config.read("jax_enable_x64"):
        pytest.skip(
            "the quickstart turns 64-bit mode on for its process: run with JAX_ENABLE_X64=1"
        )
    spec = importlib.util.spec_from_file_location("quickstart", EXAMPLES_DIR / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    assert capsys.readouterr().out.splitlines()[-1] == EXAMPLES["quickstart.py"][2]
