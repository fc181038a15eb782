"""Ready adapters: ``from jaxbridge.adapters import Doubling, Linear, ...``."""

from .doubling import Doubling as Doubling
from .linear import Linear as Linear
from .relu import ReLU as ReLU
from .sigmoid import Sigmoid as Sigmoid

__all__ = ["Doubling", "Linear", "ReLU", "Sigmoid"]
