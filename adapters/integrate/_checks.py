"""What the integrate adapters check and how they fail: a tolerance or limit that is not a
positive number, and an ``IntegrationFailure`` with its reason (``failure``)."""

from __future__ import annotations

from .._failure import IntegrationFailure


def check_positive(owner: str, name: str, value: object, allow_zero: bool = False) -> None:
    """Refuse a tolerance or a limit that is not a positive (or non-negative) number."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and (value >= 0 if allow_zero else value > 0)  # type: ignore[operator]
    if not ok:
        what = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{owner}: parameter '{name}' must be {what} number; got {value!r}.")


failure = IntegrationFailure.because
