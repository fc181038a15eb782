"""Errors the bridge raises on the host about an adapter, not ones its own code raised:
``host_error`` leaves them as they are instead of naming the adapter's method as their
source."""


class Refusal(Exception):
    """An error about what an adapter's method returned, or about the adapter itself."""


class RefusedType(Refusal, TypeError):
    pass


class RefusedValue(Refusal, ValueError):
    pass
