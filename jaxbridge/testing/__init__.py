"""Property checks for adapters: ``check_adapter`` and the Hypothesis strategy ``inputs``."""

from ._check import check_adapter as check_adapter
from ._strategies import inputs as inputs

__all__ = ["check_adapter", "inputs"]
