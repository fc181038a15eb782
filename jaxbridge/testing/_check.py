"""``check_adapter``: one call that checks an adapter's host results, derivative rules and
batching. Each check lives in a module of its own; this one runs them in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from jaxbridge import Adapter

from ._batching import check_scan, check_vmap
from ._checks import CHECKS
from ._grad import check_grad
from ._hessian import check_hessian
from ._jit import check_jit
from ._jvp import check_jvp
from ._linear_transpose import check_linear_transpose
from ._refused import check_refused
from ._specs import check_specs
from ._subject import Subject
from ._transpose import check_transpose

_RUNS: Mapping[str, Callable[[Subject], None]] = {
    "specs": check_specs,
    "jit": check_jit,
    "linear_transpose": check_linear_transpose,
    "grad": check_grad,
    "vmap": check_vmap,
    "scan": check_scan,
    "jvp": check_jvp,
    "transpose": check_transpose,
    "hessian": check_hessian,
    "refused": check_refused,
}
assert tuple(_RUNS) == tuple(CHECKS)


def check_adapter(
    adapter: Adapter,
    *args: Any,
    checks: Iterable[str] = tuple(CHECKS),
    batch: int = 3,
    seed: int = 0,
    rtol: float | Mapping[str, float] | None = None,
    atol: float | Mapping[str, float] | None = None,
    refused: Sequence[Any] | None = None,
) -> None:
    """Check that ``adapter`` is right on ``args``; raise ``AssertionError`` if it is not.

    ``args`` are the arguments of one call, NumPy or JAX arrays (they may carry leading
    batch axes, like any call). The checks, in this order:

    - ``"specs"``: ``forward``, and ``backward`` and ``jvp`` where the adapter defines them,
      called directly on the host, return what ``output_specs`` and ``residual_specs``
      declare: the number of results, their core shapes and their exact dtypes (a
      cotangent's those of its argument, a tangent's those of its output). The bridge would
      cast a float64 result to a declared float32 without a word; this check does not let it
      pass. A ``forward`` that takes ``residuals=True`` must give the same outputs when
      told False.
    - ``"jit"``: the call under ``jax.jit`` equals the eager call.
    - ``"grad"``: the gradient of a random projection ``sum(ct * adapter(*args))`` through
      the bridge equals central finite differences of ``forward`` computed in float64, for
      every floating argument (integer arguments are held fixed). Steps stay inside the
      domain that ``adapter.domains`` declares, and move a ``"spd"`` matrix symmetrically.
    - ``"vmap"``: ``vmap`` of the call and of its pullback equals a Python loop of calls:
      over every argument, over some of them (the others unbatched), over the cotangent
      alone, nested two deep, and with leading batch axes given to the adapter directly
      (where an unbatched argument's gradient sums over the batch).
    - ``"scan"``: the call and its gradient inside ``lax.scan``, and the gradient of a scan
      over the calls, equal a Python loop.
    - ``"linear_transpose"``, where ``linear_in`` names arguments: ``forward`` is linear in
      them, on the host in float64 (``forward(u/2 + 3v/2) = forward(u)/2 + 3 forward(v)/2``
      for ``u``, ``v`` drawn from their domains, in each alone with the others it names at
      zero, then in all together); and ``jax.linear_transpose`` of the call in them equals
      its vjp. ``jax.linear_transpose`` runs the reverse-mode rule: an adapter that declares
      ``linear_in`` without ``backward`` or ``pullback`` fails here, where
      ``jax.linear_transpose`` and ``jax.grad`` would raise "defines no `backward`".
    - ``"jvp"``, where the adapter has a forward-mode rule (``jvp``, ``pushforward``, or
      ``linear_in`` naming every floating argument): ``jax.jvp`` under ``jit`` along a
      random tangent in each floating argument alone, and in all together, equals central
      finite differences of ``forward`` in float64; and ``vmap`` of it, over the arguments
      and tangents or over the tangents alone (as ``jax.jacfwd`` does), equals a loop.
    - ``"transpose"``, where the adapter has rules for both modes: ``<g, J t> = <J^T g,
      t>`` between ``jax.jvp`` and ``jax.vjp`` through the bridge, for each floating
      argument, to rounding: a cheap, exact test that the two rules agree.
    - ``"hessian"``, wherever second derivatives are defined: in each composition of modes
      that differentiates a rule written in JAX (or any rule of an adapter linear in all its
      floating arguments), the second derivative of ``sum(ct * adapter(*args))`` along a
      random direction ``v`` equals central differences along ``v`` of the bridge's gradient
      (of ``<gradient, v>`` by ``jax.jvp`` for an adapter without a reverse-mode rule), and
      the compositions agree with each other. The compositions: forward over reverse (as
      ``jax.hessian``; a JAX ``pullback`` and a forward-mode rule, host ``jvp`` included),
      reverse over reverse (a JAX ``pullback``), reverse over forward (a JAX ``pushforward``
      and a reverse-mode rule, host ``backward`` included), forward over forward (a JAX
      ``pushforward``). It catches a rule that reads a residual as if it were an input (to
      the rules' own derivatives, residuals are constants) and a wrong rule of a helper
      adapter that a rule calls.

    - ``"refused"``, where ``refused`` gives the arguments of a call the adapter refuses
      (unsorted sites, a singular matrix: one per argument, like ``args``): the eager call
      raises on them, and so does every composition that runs on ``args``, with the same
      error type (read through ``jaxbridge.host_errors``): ``jax.jit``, and
      ``jax.jit(jax.grad)``, ``jax.vmap(jax.grad)``, ``jax.jit(jax.jvp)`` and
      ``jax.jit(jax.linear_transpose)`` in each floating argument. Under ``jit`` XLA drops
      a host call whose value is not used, ``forward`` among them when only a derivative
      is: a refusal made in ``forward`` alone is lost there (``Adapter.check`` is where it
      holds).

    Checks that do not apply to the adapter are skipped quietly, so that every adapter
    passes with the default ``checks``: those of forward mode without a forward-mode rule,
    "grad" without a reverse-mode rule (``backward`` or ``pullback``), "hessian" where every
    rule runs on the host. Without "grad" (not asked for, or not applying), no check takes
    gradients. A skipped check is a transformation the adapter does not offer, and raises
    there: without a reverse-mode rule, ``jax.grad``, ``jax.vjp``, ``jax.jacrev`` and
    ``jax.linear_transpose`` ("defines no `backward`"); without a forward-mode rule,
    ``jax.jvp``, ``jax.jacfwd``, ``jax.linearize`` and ``jax.hessian`` (a ``TypeError``
    naming the adapter); without "hessian", second derivatives. ``applicable_checks`` lists
    the checks that run.

    The batch holds ``batch`` elements: the first is ``args``, the others are drawn from
    ``adapter.domains`` with ``seed`` (integer arguments are repeated), as are the random
    cotangents, tangents and directions.

    Results match when ``|got - expected| <= atol + rtol * scale`` entry by entry, where
    ``scale`` is the largest magnitude in either array; against finite differences, their own
    estimated error is allowed on top. ``rtol`` and ``atol`` are keyed by the inputs'
    floating dtype (float32 or float64; check float64 under ``jax.enable_x64(True)``):
    rounding level for one computation by two routes (jit, vmap and scan against single
    calls; the two sides of an identity between rules, where ``scale`` is the size of the
    terms), the precision of a derivative in that dtype against finite differences. Pass
    ``rtol`` and ``atol`` to override them: a number for every check, or a mapping from
    checks' names to numbers for those alone, e.g. ``rtol={"grad": 1e-5, "jvp": 1e-5,
    "hessian": 1e-5}`` for an adapter whose derivatives are as accurate as a solver's
    tolerance, while the other checks keep rounding level.

    Each check compiles at most two programs per new shape (~0.1-1 s each), reused when the
    same adapter is checked again at the same shapes.

    Examples:
        >>> import numpy as np
        >>> import jaxbridge
        >>> from jaxbridge.testing import check_adapter
        >>> class Cube(jaxbridge.Adapter):
        ...     signature = "()->()"
        ...     vectorized = True
        ...     def forward(self, x):
        ...         return x**3
        ...     def backward(self, res, g):
        ...         x, _ = res
        ...         return (3 * x**2 * g,)
        ...     def jvp(self, res, tangents):
        ...         x, _ = res
        ...         (dx,) = tangents
        ...         return 3 * x**2 * dx
        >>> check_adapter(Cube(), np.array([0.5, -1.0, 2.0], np.float32))

    Raises:
        AssertionError: a check failed; the message names the check, the input, where the
            results differ and by how much.
        TypeError, ValueError: the arguments or options do not make a valid check.
    """
    subject = Subject.make(
        adapter, args, checks=checks, batch=batch, seed=seed, rtol=rtol, atol=atol, refused=refused
    )
    for check, run in _RUNS.items():
        if check in subject.checks:
            try:
                run(subject)
            except AssertionError:
                raise
            except Exception as error:
                raise subject.failure(check, f"it raised {_in_one_line(error)}") from error


def _in_one_line(error: Exception) -> str:
    """``error`` as its type and message; for an error that JAX re-raised from a host call
    (a ``JaxRuntimeError`` whose message holds the whole traceback), the host error's own
    last line alone. The full error stays the failure's cause."""
    message = str(error)
    if "Traceback (most recent call last)" in message:
        host = message.split("\n--------------------")[0].rstrip().splitlines()
        return host[-1].rstrip(".")
    return f"{type(error).__name__}: {message.rstrip('.')}"


def applicable_checks(
    adapter: Adapter, *args: Any, refused: Sequence[Any] | None = None
) -> tuple[str, ...]:
    """The checks that ``check_adapter(adapter, *args, refused=refused)`` runs, in its order:
    those of ``CHECKS`` that apply to the adapter (the others it skips quietly: forward-mode
    checks without a forward-mode rule, "refused" without ``refused``, ...)."""
    subject = Subject.make(adapter, args, refused=refused)
    return tuple(c for c in CHECKS if c in subject.checks)
