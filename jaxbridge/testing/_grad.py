"""The "grad" check: reverse-mode gradients through the bridge against central finite
differences of ``forward`` in float64."""

from __future__ import annotations

import numpy as np

from ._differences import finite_differences, projected
from ._subject import Subject
from ._transforms import floating


def check_grad(s: Subject) -> None:
    if not s.with_grad:
        return
    _, gradients = s.plain
    args = [a.astype(np.float64) if floating(a.dtype) else a for a in s.args]
    given = iter(c[0] for c in s.cts or ())
    cts = [next(given) if floating(o.dtype) else None for o in s.outputs]
    value = projected(s.adapter, args, s.ranks, s.output_ranks, cts)
    for i, gradient in zip(s.wrt, gradients):
        projections, differences, uncertainty = finite_differences(
            value, args, i, s.kinds[i], gradient
        )
        symmetric = " (moving entries (i, j) and (j, i) together)" if s.kinds[i] == "spd" else ""
        s.expect_close(
            "grad",
            f"the gradient of argument {s.names[i]!r}{symmetric}",
            projections,
            differences,
            "grad",
            None,
            ("from the bridge", "by central finite differences of forward in float64"),
            uncertainty,
        )
