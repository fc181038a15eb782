"""The "grad" check: reverse-mode gradients through the bridge against central finite
differences of ``forward`` in float64."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._differences import finite_differences, projected
from ._subject import Subject
from ._transforms import floating, plain


def check_grad(s: Subject) -> None:
    """With the drawn cotangent of every floating output together, and then, where there
    are several, of each output alone: in the sum, an error in a small output's share of
    the gradient hides under the tolerance of a large one."""
    if not s.with_grad:
        return
    drawn = s.element_cts(0, 0) or ()
    _check(s, drawn, s.plain[1], "")
    if len(drawn) > 1:
        args = tuple(jnp.asarray(a) for a in s.args)
        for k, name in enumerate(s.floating_outputs):
            alone = tuple(c if j == k else np.zeros_like(c) for j, c in enumerate(drawn))
            gradients = jax.tree.map(np.asarray, plain(s.adapter, args, alone))[1]
            _check(s, alone, gradients, f" through output {name} alone")


def _check(s: Subject, drawn: tuple, gradients: tuple, through: str) -> None:
    args = [a.astype(np.float64) if floating(a.dtype) else a for a in s.args]
    given = iter(drawn)
    cts = [next(given) if floating(o.dtype) else None for o in s.outputs]
    value = projected(s.adapter, args, s.ranks, s.output_ranks, cts)
    for i, gradient in zip(s.wrt, gradients):
        projections, differences, uncertainty = finite_differences(
            value, args, i, s.domains[i], gradient
        )
        symmetric = " (moving entries (i, j) and (j, i) together)" if s.domains[i].symmetric else ""
        s.expect_close(
            "grad",
            f"the gradient of argument {s.names[i]!r}{through}{symmetric}",
            projections,
            differences,
            "grad",
            None,
            ("from the bridge", "by central finite differences of forward in float64"),
            uncertainty,
        )
