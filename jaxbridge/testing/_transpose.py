"""The "transpose" check: the forward-mode rule and the reverse-mode rule are transposes of
each other, ``<g, J t> = <J^T g, t>``, for a random tangent ``t`` and cotangent ``g``: exact
up to rounding, and cheap (one ``jax.jvp`` and one ``jax.vjp``, through the bridge)."""

from __future__ import annotations

import numpy as np

from ._jvp import tangents_at
from ._subject import Subject


def check_transpose(s: Subject) -> None:
    along, _, pulled = tangents_at(s, 0)
    g = [np.asarray(c, np.float64) for c in s.probe_cts]
    tol = s.tolerance("same", "transpose")
    for j, i in enumerate(s.wrt):
        t = s.tangents[j][0].astype(np.float64)
        jt = [np.asarray(x, np.float64) for x in along[j]]
        jtg = np.asarray(pulled[j], np.float64)
        forward = sum(float(np.sum(gi * x)) for gi, x in zip(g, jt))
        reverse = float(np.sum(jtg * t))
        # each side rounds like its vector's largest entry times the other's sum of entries
        scale = sum(np.sum(np.abs(gi)) * _largest(x) for gi, x in zip(g, jt))
        scale += np.sum(np.abs(t)) * _largest(jtg)
        allowed = tol.atol + tol.rtol * float(scale)
        difference = abs(forward - reverse)
        if not difference <= allowed:  # NaN fails too
            raise s.failure(
                "transpose",
                f"along argument {s.names[i]!r}, <g, J t> is {forward:.9g} by jax.jvp (the "
                f"forward-mode rule) but <J^T g, t> is {reverse:.9g} by jax.vjp (the "
                f"reverse-mode rule): they differ by {difference:.3g}; allowed: {allowed:.3g} "
                f"= atol {tol.atol:.3g} + rtol {tol.rtol:g} × {float(scale):.3g} (the size of "
                f"the terms), so they are off by {difference / scale if scale else np.inf:.2g} "
                f"of that size. One of the two rules is wrong in {s.names[i]!r} (a transposed "
                "matrix, a missing term): the 'jvp' and 'grad' checks say which",
            )


def _largest(x: np.ndarray) -> float:
    return float(np.max(np.abs(x))) if x.size else 0.0
