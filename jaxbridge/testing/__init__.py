"""Property checks for adapters: ``check_adapter``, the checks it runs (``CHECKS``; which
apply to an adapter: ``applicable_checks``), ``check_backends`` (an accelerator against the
CPU) and the Hypothesis strategy ``inputs``."""

from ._backends import check_backends as check_backends
from ._check import applicable_checks as applicable_checks
from ._check import check_adapter as check_adapter
from ._checks import CHECKS as CHECKS
from ._strategies import inputs as inputs

__all__ = ["CHECKS", "applicable_checks", "check_adapter", "check_backends", "inputs"]
