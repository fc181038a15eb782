"""Ready adapters: ``from jaxbridge.adapters import Doubling, LinearSolve, ...``."""

from .doubling import Doubling as Doubling

__all__ = ["Doubling"]
