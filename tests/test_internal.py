"""``jaxbridge.internal``, the core helpers families use beyond the public API: what each
does, and that the families in ``adapters/`` use nothing else of the core's private
modules."""

import ast
from pathlib import Path

import jax.numpy as jnp
import pytest

import jaxbridge as jb
from jaxbridge import internal

ADAPTERS = Path(__file__).resolve().parent.parent / "adapters"


def test_families_import_only_the_public_api_and_internal():
    private = []
    for path in sorted(ADAPTERS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            private += [
                f"{path.relative_to(ADAPTERS)}: {m}"
                for m in modules
                if m.startswith("jaxbridge._") or m.startswith("jaxbridge.testing._")
            ]
    assert not private, f"families import the core's private modules: {private}"


def test_no_family_imports_another_familys_private_module():
    """A family imports the shared layer (``adapters/_shared/``) and other families' public names
    only: what two families share lives in the shared layer."""
    families = {p.name for p in ADAPTERS.iterdir() if p.is_dir() and not p.name.startswith("_")}
    crossing = []
    for family in sorted(families):
        for path in sorted((ADAPTERS / family).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
                    other, *rest = node.module.split(".")
                    names = [alias.name for alias in node.names]
                    private = any(part.startswith("_") for part in rest) or (
                        not rest and any(n.startswith("_") for n in names)
                    )
                    if other in families and other != family and private:
                        crossing.append(f"{path.relative_to(ADAPTERS)}: from ..{node.module}")
    assert not crossing, f"families import other families' private modules: {crossing}"


def test_the_shared_layer_is_one_folder():
    """What the families share lives in ``adapters/_shared/``, not loose beside the ready
    adapters: every private entry at ``adapters/``' top is that folder."""
    loose = sorted(
        p.name
        for p in ADAPTERS.iterdir()
        if p.name.startswith("_") and p.name not in {"__init__.py", "__pycache__", "_shared"}
    )
    assert not loose, f"shared modules outside adapters/_shared/: {loose}"


class _Scale(jb.Adapter):
    signature = "(n),()->(n)"

    def forward(self, x, factor, *, out=None):
        return x * factor


def test_the_testing_kit_imports_only_the_public_api_and_internal():
    kit = Path(jb.__file__).parent / "testing"
    private = [
        f"{path.name}: from {'.' * node.level}{node.module or ''}"
        for path in sorted(kit.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.level >= 2 or (node.module or "").startswith("jaxbridge._"))
    ]
    assert not private, f"the testing kit imports the core's private modules: {private}"


def test_what_internal_offers():
    assert internal.arg_names(_Scale) == ("x", "factor")
    signature = internal.parse_signature("(n,n),(n)->(n)")
    assert signature.inputs == (("n", "n"), ("n",)) and signature.outputs == (("n",),)
    with pytest.raises(ValueError):
        internal.parse_signature("(n")
    assert internal.as_array("Owner", "x", [1.0, 2.0]).shape == (2,)
    with pytest.raises(TypeError, match="Owner.*'x'"):
        internal.as_array("Owner", "x", None)
    calls = []

    @internal.per_object
    def size(cls):
        calls.append(cls)
        return len(cls.__name__)

    assert size(_Scale) == size(_Scale) == len("_Scale") and calls == [_Scale]
    done = []
    internal.share(lambda chunk, stop: done.extend(chunk), [[(0,), (1,)], [(2,)]])
    assert sorted(done) == [(0,), (1,), (2,)]
    assert isinstance(internal.as_array("Owner", "x", jnp.ones(2)), type(jnp.ones(2)))


class _Linear(jb.Adapter):
    signature = "(n),()->(n)"
    linear_in = ("x",)

    def forward(self, x, k, *, residuals=True):
        return x * k

    def jvp(self, res, tangents):
        return None


def test_what_internal_offers_the_testing_kit():
    assert internal.overrides(_Linear(), "jvp") and not internal.overrides(_Linear(), "backward")
    assert internal.told_residuals(_Linear) and not internal.told_residuals(_Scale)
    x, k = jnp.ones(3), jnp.ones((), jnp.int32)
    assert internal.linear_in_all(_Linear(), (x, k))  # (k is an integer: held fixed)
    assert not internal.linear_in_all(_Linear(), (x, jnp.ones(())))
    assert internal.batch_element((4, 2), (1, 3)) == (0, 2)
    signature = internal.parse_signature("(n,n),(n)->(n)")
    assert internal.bind_dims("Owner", ("a", "b"), signature.inputs, ((2, 2), (2,))) == {"n": 2}
    with pytest.raises(ValueError, match="Owner.*'b'"):
        internal.bind_dims("Owner", ("a", "b"), signature.inputs, ((2, 2), (3,)))
    assert set(internal.ready_domains) >= {"real", "positive", "spd", "well_conditioned"}
