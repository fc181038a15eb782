"""``inputs``: a Hypothesis strategy of valid arguments for an adapter, built from its signature."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxbridge import Adapter
from jaxbridge.internal import arg_names, parse_signature

from ._domains import domains_of, make

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy


def inputs(
    adapter: Adapter,
    *,
    dtype: Any = np.float32,
    batch: tuple[int, ...] | SearchStrategy[tuple[int, ...]] = (),
    sizes: Mapping[str, int] | None = None,
    min_size: int = 1,
    max_size: int = 3,
) -> SearchStrategy[tuple[np.ndarray, ...]]:
    """A strategy of argument tuples for one call of ``adapter``.

    Each dimension name in ``adapter.signature``'s inputs gets one size from ``min_size``
    to ``max_size``, both included (the same for every argument that names it), or the size
    ``sizes`` fixes for it (for dimensions a static parameter decides, such as a sparse
    pattern's; ``sizes`` may lie outside the bounds). Raise ``min_size`` for an adapter that
    needs room: one that computes ``k`` eigenvalues of an ``(n, n)`` matrix with ``k < n``
    fails on every draw with ``n <= k``. Sizes shrink towards ``min_size``. Every
    argument gets the leading axes ``batch`` (a shape, or a strategy of shapes). Values come
    from ``adapter.domains``; floating arguments have ``dtype``, ``"integer"`` ones int32.
    Raw values shrink towards the simplest input of each domain (zeros, ones, the identity).

    Examples:
        >>> from hypothesis import given, settings, strategies as st
        >>> from jaxbridge.adapters import Linear
        >>> from jaxbridge.testing import check_adapter, inputs
        >>> @settings(deadline=None, max_examples=5)  # JAX compiles for every new shape
        ... @given(inputs(Linear(), batch=st.sampled_from([(), (2,)])))
        ... def test_linear(args):
        ...     check_adapter(Linear(), *args)
        >>> test_linear()
    """
    try:
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp
    except ImportError:  # pragma: no cover - hypothesis is a test dependency
        raise ImportError(
            "jaxbridge.testing.inputs needs Hypothesis: `pip install hypothesis`."
        ) from None

    owner = type(adapter).__name__
    names = arg_names(type(adapter))
    signature = parse_signature(adapter.signature)
    domains = domains_of(owner, adapter.domains, names, signature.inputs)
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise TypeError(f"`dtype` must be a floating dtype, got {dtype}.")
    dims = list(dict.fromkeys(d for core in signature.inputs for d in core if not d.isdigit()))
    fixed = dict(sizes or {})
    if not set(fixed) <= set(dims):
        raise ValueError(
            f"`sizes` names {sorted(set(fixed) - set(dims))}, which are not dimensions of "
            f"{owner}'s inputs in {signature.text!r}."
        )
    if not (isinstance(min_size, int) and min_size >= 0):
        raise ValueError(f"`min_size` must be an integer of at least 0, got {min_size!r}.")
    if not (isinstance(max_size, int) and max_size >= max(min_size, 1)):
        raise ValueError(
            f"`max_size` must be an integer of at least `min_size` ({min_size}) and 1, got "
            f"{max_size!r}."
        )
    batches = batch if isinstance(batch, st.SearchStrategy) else st.just(tuple(batch))
    raw_entries = st.floats(-1.0, 1.0, allow_subnormal=False)

    @st.composite
    def arguments(draw: Any) -> tuple[np.ndarray, ...]:
        size = {d: fixed[d] if d in fixed else draw(st.integers(min_size, max_size)) for d in dims}
        lead = tuple(draw(batches))
        values = []
        for domain, core in zip(domains, signature.inputs):
            shape = lead + tuple(int(d) if d.isdigit() else size[d] for d in core)
            raw = draw(hnp.arrays(np.float64, shape, elements=raw_entries))
            values.append(make(domain, raw, np.dtype(np.int32) if domain.integer else dtype))
        return tuple(values)

    return arguments()
