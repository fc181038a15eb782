"""The table of ``check_adapter``'s checks (``CHECKS``, in the order it runs them, each with
the statement it tests), the names of the compositions of modes the "hessian" check
differentiates, and ``rtol``/``atol`` read per check."""

from __future__ import annotations

from collections.abc import Mapping

CHECKS: dict[str, str] = {
    "specs": "what forward, backward and jvp return on the host matches the declared specs",
    "jit": "forward under jit equals forward called eagerly",
    # before "grad": the bridge takes the rules of an adapter linear in all its arguments at
    # zero, so a wrong linear_in shows first as wrong gradients, which would not say why
    "linear_transpose": (
        "forward is linear in the arguments linear_in names, and jax.linear_transpose in "
        "them equals the vjp"
    ),
    "grad": "reverse-mode gradients equal central finite differences in float64",
    "vmap": "vmap of the call and of its gradient equals a Python loop",
    "scan": "the call and its gradient inside lax.scan equal a Python loop",
    "jvp": "forward-mode tangents equal central finite differences in float64",
    "transpose": "the forward-mode and reverse-mode rules are transposes: <g, J t> = <J^T g, t>",
    "hessian": (
        "second derivatives, in every composition of modes the rules define, equal finite "
        "differences of the gradient and each other"
    ),
    "refused": (
        "arguments the eager call refuses are refused, with the same error, under jit, and "
        "jit(grad), vmap(grad), jit(jvp) and jit(linear_transpose) in each argument"
    ),
}
"""Every check, in the order ``check_adapter`` runs them, with the statement it tests."""

FORWARD_OVER_REVERSE = "forward over reverse (jax.jvp of jax.grad, as jax.hessian)"
REVERSE_OVER_REVERSE = "reverse over reverse (jax.vjp of jax.grad)"
REVERSE_OVER_FORWARD = "reverse over forward (jax.grad of jax.jvp)"
FORWARD_OVER_FORWARD = "forward over forward (jax.jvp of jax.jvp)"
"""The compositions of modes that give second derivatives, as the "hessian" check names them."""


def per_check(name: str, value: float | Mapping[str, float] | None) -> Mapping[str, float]:
    """``check_adapter``'s ``rtol`` or ``atol`` as a value per check: one number for every
    check, a mapping from some checks' names to theirs, or None for the defaults."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(CHECKS))
        if unknown:
            raise ValueError(
                f"`{name}` names unknown checks {unknown}; the checks are {tuple(CHECKS)}."
            )
        chosen = dict(value)
    else:
        chosen = dict.fromkeys(CHECKS, value)
    for check, number in chosen.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not number >= 0:
            raise ValueError(f"`{name}` for {check!r} must be a number >= 0, got {number!r}.")
    return {check: float(number) for check, number in chosen.items()}
