"""Every catalogue adapter refuses a traced static parameter with the same message, whatever
its own checks of the parameter would have said (a traced ``k`` is not "not a whole
number": it is not static)."""

import dataclasses
import importlib
import pkgutil

import jax
import pytest
from _chain import Chain
from _integrate_cases import Decay, Exponential
from _optimize_problems import Kepler, Rosenbrock

import jaxbridge as jb
import jaxbridge.adapters as catalogue

PATTERN = {"indices": (0, 1), "indptr": (0, 1, 2), "shape": (2, 2)}
REQUIRED = {  # what the adapters that need arguments are made with
    "OdeSolve": {"rhs": Decay()},
    "Quad": {"integrand": Exponential()},
    "SparseSolve": PATTERN,
    "LeastSquares": {"residual": Kepler()},
    "Root": {"residual": Kepler()},
    "Minimize": {"objective": Rosenbrock()},
    "MinimizeBounded": {"objective": Rosenbrock()},
    "MinimizeConstrained": {"objective": Rosenbrock()},
    "Eigsh": PATTERN,
    "ExpmMultiply": PATTERN,
    "OperatorEigsh": {"matvec": Chain(4)},
    "Svds": PATTERN,
    "OneShapeFunction": {"routine": "gamma.cdf"},
    "TwoShapeFunction": {"routine": "beta.cdf"},
}


def _adapter_classes():
    found = {}
    for info in pkgutil.iter_modules(catalogue.__path__):
        if info.name.startswith("_") or not info.ispkg:
            continue
        family = importlib.import_module(f"jaxbridge.adapters.{info.name}")
        for name in family.__all__:
            value = getattr(family, name)
            if isinstance(value, type) and issubclass(value, jb.Adapter):
                found[f"{info.name}.{name}"] = value
    return found


def _parameters():
    for name, cls in sorted(_adapter_classes().items()):
        for field in dataclasses.fields(cls):
            if field.init and field.name not in REQUIRED.get(cls.__name__, {}):
                yield pytest.param(cls, field.name, id=f"{name}-{field.name}")


PARAMETERS = list(_parameters())


def test_every_adapter_with_parameters_is_searched():
    searched = {p.id.split("-")[0] for p in PARAMETERS}
    with_parameters = {
        name
        for name, cls in _adapter_classes().items()
        if set(f.name for f in dataclasses.fields(cls) if f.init)
        - set(REQUIRED.get(cls.__name__, {}))
    }
    assert searched == with_parameters
    families = {name.split(".")[0] for name in searched}
    # (signal's filters have no static parameters)
    assert families == {
        "integrate",
        "interpolate",
        "linalg",
        "ndimage",
        "optimize",
        "sparse",
        "spatial",
        "special",
    }


@pytest.mark.parametrize(("cls", "name"), PARAMETERS)
def test_a_traced_static_parameter_gets_the_static_parameter_message(cls, name):
    def make(value):
        cls(**REQUIRED.get(cls.__name__, {}), **{name: value})
        return value

    with pytest.raises(TypeError, match=rf"{cls.__name__}: parameter '{name}' got a traced value"):
        jax.jit(make)(2)
