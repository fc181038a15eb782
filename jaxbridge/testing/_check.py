"""``check_adapter``: one call that checks an adapter's host results, gradients and batching."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._adapter import Adapter
from .._plan import arg_names
from .._signature import Signature, bind_dims, parse
from . import _host
from ._compare import Tolerance, mismatch, tolerance
from ._domains import Kind, describe, kinds_of, room, sample
from ._gradients import finite_differences, projected
from ._transforms import Layout, Result, batched, floating, plain

CHECKS = ("specs", "jit", "grad", "vmap", "scan")

_WHAT = {
    "specs": "what forward and backward return on the host matches the declared specs",
    "jit": "forward under jit equals forward called eagerly",
    "grad": "reverse-mode gradients equal central finite differences in float64",
    "vmap": "vmap of the call and of its gradient equals a Python loop",
    "scan": "the call and its gradient inside lax.scan equal a Python loop",
}


def check_adapter(
    adapter: Adapter,
    *args: Any,
    checks: Iterable[str] = CHECKS,
    batch: int = 3,
    seed: int = 0,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Check that ``adapter`` is right on ``args``; raise ``AssertionError`` if it is not.

    ``args`` are the arguments of one call, NumPy or JAX arrays (they may carry leading
    batch axes, like any call). The checks, in this order:

    - ``"specs"``: ``forward`` and ``backward``, called directly on the host, return what
      ``output_specs`` and ``residual_specs`` declare: the number of results, their core
      shapes and their exact dtypes. The bridge would cast a float64 result to a declared
      float32 without a word; this check does not let it pass.
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

    The batch holds ``batch`` elements: the first is ``args``, the others are drawn from
    ``adapter.domains`` with ``seed`` (integer arguments are repeated), as are the random
    cotangents. Gradient checks are skipped when ``"grad"`` is not in ``checks``.

    Results match when ``|got - expected| <= atol + rtol * scale`` entry by entry, where
    ``scale`` is the largest magnitude in either array; for gradients, the finite
    differences' own estimated error is allowed on top. ``rtol`` and ``atol`` are keyed by
    the inputs' floating dtype (float32 or float64; check float64 under
    ``jax.enable_x64(True)``): rounding level for one computation by two routes (jit, vmap
    and scan against single eager or jitted calls), the precision of a backward in that
    dtype for gradients. Pass ``rtol`` and ``atol`` to override both.

    Each check compiles at most two programs per new shape (~0.1 s each), reused when the
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
        >>> check_adapter(Cube(), np.array([0.5, -1.0, 2.0], np.float32))

    Raises:
        AssertionError: a check failed; the message names the check, the input, where the
            results differ and by how much.
        TypeError, ValueError: the arguments or options do not make a valid check.
    """
    subject = _Subject.make(adapter, args, checks, batch, seed, rtol, atol)
    for check in CHECKS:
        if check in subject.checks:
            try:
                _RUNS[check](subject)
            except AssertionError:
                raise
            except Exception as error:
                message = str(error).rstrip(".")
                raise subject.failure(
                    check, f"it raised {type(error).__name__}: {message}", subject.inputs()
                ) from error


@dataclasses.dataclass
class _Subject:
    """An adapter, the arguments to check it on, and everything derived from them once."""

    adapter: Adapter
    owner: str
    names: tuple[str, ...]
    signature: Signature
    kinds: tuple[Kind, ...]
    args: tuple[np.ndarray, ...]
    outputs: tuple[jax.ShapeDtypeStruct, ...]
    checks: frozenset[str]
    with_grad: bool
    layout: Layout
    stacked: tuple[np.ndarray, ...]
    extra: tuple[np.ndarray, ...]
    cts: tuple[np.ndarray, ...] | None  # per floating output, stacked like the arguments
    extra_cts: tuple[np.ndarray, ...] | None
    dtype: np.dtype
    options: str
    rtol: float | None
    atol: float | None
    references: dict[tuple, Result] = dataclasses.field(default_factory=dict)

    @classmethod
    def make(cls, adapter, args, checks, batch, seed, rtol, atol) -> _Subject:
        if not isinstance(adapter, Adapter):
            raise TypeError(f"check_adapter needs a jaxbridge.Adapter, got {adapter!r}.")
        owner = type(adapter).__name__
        names = arg_names(type(adapter))
        signature = parse(adapter.signature)
        if len(args) != len(names):
            raise TypeError(
                f"check_adapter({owner}, ...) needs {len(names)} arguments "
                f"({', '.join(names)}), got {len(args)}."
            )
        checks = frozenset(checks)
        if not checks <= set(CHECKS):
            raise ValueError(
                f"unknown checks {sorted(checks - set(CHECKS))}; the checks are {CHECKS}."
            )
        if not (isinstance(batch, int) and batch >= 2):
            raise ValueError(f"`batch` must be an integer of at least 2, got {batch!r}.")
        arrays = tuple(_canonical(name, a) for name, a in zip(names, args))
        bind_dims(owner, names, signature.inputs, tuple(a.shape for a in arrays))
        kinds = kinds_of(owner, adapter.domains, names, signature.inputs)
        for name, kind, a in zip(names, kinds, arrays):
            _check_domain(owner, name, kind, a)
        got = jax.eval_shape(adapter, *arrays)
        outputs = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        dtype = _precision([a.dtype for a in arrays] + [o.dtype for o in outputs])
        with_grad = (
            "grad" in checks
            and any(floating(a.dtype) for a in arrays)
            and any(floating(o.dtype) for o in outputs)
        )

        rng = np.random.default_rng(seed)
        # batch elements get the same number of leading axes, so that stacked they still
        # broadcast like a gufunc's arguments: (4,) and (2, 4) stack as (3, 1, 4), (3, 2, 4)
        elements = _host.padded(arrays, [len(core) for core in signature.inputs])

        def draw(first: bool) -> tuple[np.ndarray, ...]:
            # integer arguments are repeated: their valid values are the adapter's business
            return tuple(
                np.stack(
                    ([a] if first else [])
                    + [
                        sample(kind, a.shape, a.dtype, rng) if floating(a.dtype) else a
                        for _ in range(batch - first)
                    ]
                )
                for kind, a in zip(kinds, elements)
            )

        def draw_cts() -> tuple[np.ndarray, ...] | None:
            if not with_grad:
                return None
            return tuple(
                rng.standard_normal((batch, *o.shape)).astype(o.dtype)
                for o in outputs
                if floating(o.dtype)
            )

        n = len(names)
        layout = Layout(
            some=tuple(i % 2 == 0 for i in range(n)) if n > 1 else None,
            broadcast=tuple(i % 2 == 1 for i in range(n)) if n > 1 else (True,),
            outer=tuple(i == 0 for i in range(n)),
            vmap="vmap" in checks,
            scan="scan" in checks,
        )
        stacked, cts = draw(True), draw_cts()
        extra, extra_cts = draw(False), draw_cts()
        return cls(
            adapter=adapter,
            owner=owner,
            names=names,
            signature=signature,
            kinds=kinds,
            args=arrays,
            outputs=outputs,
            checks=checks,
            with_grad=with_grad,
            layout=layout,
            stacked=stacked,
            extra=extra,
            cts=cts,
            extra_cts=extra_cts,
            dtype=dtype,
            options=f"seed={seed}, batch={batch}",
            rtol=rtol,
            atol=atol,
        )

    # --- what the checks share

    @property
    def ranks(self) -> list[int]:
        return [len(core) for core in self.signature.inputs]

    @property
    def output_ranks(self) -> list[int]:
        return [len(core) for core in self.signature.outputs]

    @property
    def wrt(self) -> list[int]:
        """The floating arguments, the ones with gradients."""
        return [i for i, a in enumerate(self.args) if floating(a.dtype)]

    def tolerance(self, tier: str) -> Tolerance:
        return tolerance(self.dtype, tier, self.rtol, self.atol)

    def element(self, keys: Sequence[tuple[int, int]]) -> tuple[np.ndarray, ...]:
        """The arguments of one batch element: ``(0, k)`` is element k of the batch that
        starts with ``args``, ``(1, k)`` element k of the extra batch."""
        return tuple((self.stacked, self.extra)[source][i][k] for i, (source, k) in enumerate(keys))

    def element_cts(self, source: int, k: int) -> tuple[np.ndarray, ...] | None:
        cts = (self.cts, self.extra_cts)[source]
        return None if cts is None else tuple(c[k] for c in cts)

    def inputs(self, keys: Sequence[tuple[int, int]] | None = None) -> str:
        """``args``, or the batch element ``keys`` stands for, as lines of Python."""
        return _listing(self.names, self.args if keys is None else self.element(keys))

    def failure(self, check: str, detail: str, inputs: str) -> AssertionError:
        return AssertionError(
            f"check_adapter({self.owner}): the {check!r} check failed ({_WHAT[check]}): "
            f"{detail}.\nOn the inputs:\n{inputs}\n(check_adapter options: {self.options})"
        )

    def expect_close(
        self,
        check: str,
        what: str,
        got: Any,
        expected: Any,
        tier: str,
        keys: Sequence[tuple[int, int]] | None = None,
        labels: tuple[str, str] = ("batched", "from a call on that element alone"),
        uncertainty: np.ndarray | None = None,
    ) -> None:
        """Raise the failure of ``check`` if ``got`` and ``expected`` differ; ``keys`` says
        which batch element they stand for (``None``: ``args``)."""
        problem = mismatch(got, expected, self.tolerance(tier), labels, uncertainty)
        if problem is not None:
            raise self.failure(check, f"{what} {problem}", self.inputs(keys))

    @functools.cached_property
    def plain(self) -> Result:
        """The call on ``args`` under ``jit``: outputs and pullback, as NumPy arrays."""
        args = tuple(jnp.asarray(a) for a in self.args)
        return jax.tree.map(np.asarray, plain(self.adapter, args, self.element_cts(0, 0)))

    def reference(self, keys: tuple[tuple[int, int], ...], ct_key: tuple[int, int]) -> Result:
        """One batch element called on its own (under ``jit``: every element hits the same
        compiled program)."""
        if (keys, ct_key) not in self.references:
            args = tuple(jnp.asarray(a) for a in self.element(keys))
            result = plain(self.adapter, args, self.element_cts(*ct_key))
            self.references[keys, ct_key] = jax.tree.map(np.asarray, result)
        return self.references[keys, ct_key]

    @functools.cached_property
    def batched(self) -> dict[str, Result]:
        results = batched(
            self.adapter, self.layout, self.stacked, self.cts, self.extra, self.extra_cts
        )
        return jax.tree.map(np.asarray, results)


def _canonical(name: str, value: Any) -> np.ndarray:
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        array = np.asarray(value)
        canonical = np.dtype(jax.dtypes.canonicalize_dtype(array.dtype))
        if canonical != array.dtype:
            raise TypeError(
                f"argument {name!r} is {array.dtype}, which JAX would turn into {canonical} "
                f"because its 64-bit mode is off: pass {canonical}, or check under "
                "`with jax.enable_x64(True):`."
            )
        return array
    return np.asarray(jnp.asarray(value))


_OUTSIDE = {
    "positive": "has entries that are not positive",
    "away_from_zero": "has entries equal to 0",
    "spd": "is not positive definite",
    "well_conditioned": "is singular",
    "stable": "has eigenvalues with a real part that is not negative",
}


def _check_domain(owner: str, name: str, kind: Kind, value: np.ndarray) -> None:
    """Refuse an argument outside its declared domain, where finite differences mean little."""
    problem = None
    if kind == "integer" and not np.issubdtype(value.dtype, np.integer):
        problem = f"is {value.dtype}"
    elif floating(value.dtype) and not np.all(np.isfinite(value)):
        problem = "has entries that are not finite"
    elif kind == "spd" and not np.array_equal(value, np.swapaxes(value, -1, -2)):
        problem = "is not exactly symmetric"
    elif floating(value.dtype) and not np.all(room(kind, value.astype(np.float64)) > 0):
        problem = _OUTSIDE[str(kind)]  # only named kinds set limits
    if problem is not None:
        raise ValueError(
            f"{owner}: argument {name!r} {problem}, but {owner}.domains declares it "
            f"{describe(kind)}. Pass an input from that domain."
        )


def _precision(dtypes: Sequence[Any]) -> np.dtype:
    """The least precise floating dtype in play, which sets the tolerances."""
    found = [np.dtype(d) for d in dtypes if floating(d)]
    return max(found, key=lambda d: np.finfo(d).eps) if found else np.dtype(np.float64)


def _listing(names: Sequence[str], values: Sequence[np.ndarray]) -> str:
    """Arguments as lines of Python that rebuild them exactly."""
    lines = []
    for name, value in zip(names, values):
        prefix = f"  {name} = np.array("
        text = np.array2string(
            value, separator=", ", floatmode="unique", threshold=64, prefix=prefix
        )
        lines.append(f"{prefix}{text}, np.{value.dtype})  # shape {value.shape}")
    return "\n".join(lines)


# --- the checks


def _check_specs(s: _Subject) -> None:
    core = tuple(a[(0,) * (a.ndim - r)] for a, r in zip(s.args, s.ranks))
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in core]
    declared = [
        (f"output {i}", "output_specs", spec)
        for i, spec in enumerate(_specs(s.adapter.output_specs(*specs)))
    ] + [
        (f"residual {i}", "residual_specs", spec)
        for i, spec in enumerate(_specs(s.adapter.residual_specs(*specs)))
    ]
    n_out = len(s.signature.outputs)
    n_specs = sum(source == "output_specs" for _, source, _ in declared)
    if n_specs != n_out:
        raise s.failure(
            "specs",
            f"output_specs gives {n_specs} specs for the {n_out} outputs of signature "
            f"{s.signature.text!r}",
            s.inputs(),
        )
    calls: list[tuple[str, tuple[np.ndarray, ...], tuple[int, ...], Any]] = [
        ("one unbatched call", core, (), _core_cts(s)),
    ]
    if type(s.adapter).vectorized:
        loop = np.broadcast_shapes(*(a.shape[: a.ndim - r] for a, r in zip(s.stacked, s.ranks)))
        first = tuple(a[0] for a in s.stacked)
        mixed = tuple(b if m else f for m, b, f in zip(s.layout.broadcast, s.stacked, first))
        calls.append((f"a call on a batch of shape {loop}", s.stacked, loop, s.cts))
        calls.append((f"a call broadcasting to a batch of shape {loop}", mixed, loop, s.cts))
    for where, args, loop, cts in calls:
        inputs = _listing(s.names, args)
        items = _host.forward_items(s.adapter, args, s.ranks)
        if len(items) != len(declared):
            raise s.failure(
                "specs",
                f"forward returned {len(items)} values on {where}, but it should return "
                f"{len(declared)}: the {n_out} outputs of signature {s.signature.text!r}, "
                f"then the {len(declared) - n_out} residuals that residual_specs declares",
                inputs,
            )
        for value, (label, source, spec) in zip(items, declared):
            _expect_result(s, f"{label} of forward on {where}", value, spec, source, loop, inputs)
        if cts is not None and type(s.adapter).pullback is Adapter.pullback:
            _check_backward(s, where, args, items, declared, loop, cts, inputs)


def _specs(declared: Any) -> list[jax.ShapeDtypeStruct]:
    items = declared if isinstance(declared, (tuple, list)) else (declared,)
    return [jax.ShapeDtypeStruct(tuple(d.shape), np.dtype(d.dtype)) for d in items]


def _core_cts(s: _Subject) -> tuple[np.ndarray, ...] | None:
    """The first element's cotangents, without the leading axes of ``args``."""
    if s.cts is None:
        return None
    return tuple(c[0][(0,) * (c.ndim - 1 - r)] for c, r in zip(s.cts, _floating_output_ranks(s)))


def _floating_output_ranks(s: _Subject) -> list[int]:
    return [r for r, o in zip(s.output_ranks, s.outputs) if floating(o.dtype)]


def _expect_result(
    s: _Subject,
    what: str,
    value: Any,
    spec: jax.ShapeDtypeStruct,
    source: str | None,
    loop: tuple[int, ...],
    inputs: str,
) -> None:
    """One host result against its spec, declared by ``source`` (``None``: a cotangent,
    whose spec is its argument's). Leading axes may broadcast to ``loop``, as in a gufunc."""
    array = np.asarray(value)
    if array.dtype != spec.dtype:
        fate = (
            f"cast it to {spec.dtype} without a word"
            if array.dtype.kind == np.dtype(spec.dtype).kind
            else "refuse it"
        )
        declared = f"{source} declares" if source else "its argument is"
        fix = f", or declare {array.dtype}" if source else ""
        raise s.failure(
            "specs",
            f"{what} has dtype {array.dtype}, but {declared} {spec.dtype}. The bridge would "
            f"{fate}: return {spec.dtype} (with `.astype`, say){fix}",
            inputs,
        )
    core = tuple(spec.shape)
    lead = array.shape[: array.ndim - len(core)]
    if (
        array.ndim < len(core)
        or array.shape[array.ndim - len(core) :] != core
        or not _broadcasts(lead, loop)
    ):
        declared = f"{source} declares" if source else "its argument has"
        raise s.failure(
            "specs",
            f"{what} has shape {array.shape}, but {declared} the core shape {core}, so it "
            f"should have shape {loop + core}",
            inputs,
        )


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _check_backward(
    s: _Subject,
    where: str,
    args: Sequence[np.ndarray],
    items: Sequence[Any],
    declared: Sequence[tuple[str, str, jax.ShapeDtypeStruct]],
    loop: tuple[int, ...],
    cts: Sequence[np.ndarray],
    inputs: str,
) -> None:
    """``backward`` on the host, given what the bridge would give it."""
    padded = _host.padded(args, s.ranks)
    res = (*padded, *(np.asarray(v).astype(spec.dtype) for v, (_, _, spec) in zip(items, declared)))
    given = iter(cts)
    g: tuple[Any, ...] = tuple(
        next(given)
        if floating(spec.dtype)
        else np.zeros(loop + tuple(spec.shape), spec.dtype)  # as the bridge passes them
        for _, _, spec in declared[: len(s.signature.outputs)]
    )
    got = s.adapter.backward(res, g[0] if len(g) == 1 else g)
    if not isinstance(got, (tuple, list)) or len(got) != len(s.names):
        raise s.failure(
            "specs",
            f"backward returned {type(got).__name__}"
            + (f" of {len(got)}" if isinstance(got, (tuple, list)) else "")
            + f" on {where}; it must return a tuple of {len(s.names)} cotangents, one per "
            "input (None for zero)",
            inputs,
        )
    for i in s.wrt:
        if got[i] is not None:
            arg = args[i]
            core = arg.shape[arg.ndim - s.ranks[i] :]
            spec = jax.ShapeDtypeStruct(core, arg.dtype)
            what = f"the cotangent of {s.names[i]!r} from backward on {where}"
            _expect_result(s, what, got[i], spec, None, loop, inputs)


def _check_jit(s: _Subject) -> None:
    eager = s.adapter(*(jnp.asarray(a) for a in s.args))  # concrete: forward runs directly
    eager = eager if isinstance(eager, (tuple, list)) else (eager,)
    jitted, _ = s.plain
    for i, (got, expected) in enumerate(zip(jitted, eager)):
        s.expect_close(
            "jit",
            f"output {i}",
            got,
            np.asarray(expected),
            "same",
            None,
            ("under jit", "eager"),
        )


def _check_grad(s: _Subject) -> None:
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


def _check_vmap(s: _Subject) -> None:
    batch = len(s.stacked[0])
    n = len(s.names)
    all_of = [(0, k) for k in range(batch)]

    def names(mask: Sequence[bool]) -> str:
        return ", ".join(name for name, m in zip(s.names, mask) if m)

    variants: list[tuple[str, str, list[tuple[tuple[int, ...], tuple, tuple[int, int]]]]] = [
        (
            "vmap",
            "vmap over every argument",
            [((k,), (key,) * n, key) for k, key in enumerate(all_of)],
        ),
        (
            "vmap_nested",
            f"nested vmap (outer over {names(s.layout.outer)}, along axis 1; inner over every "
            "argument)",
            [
                ((j, k), tuple((j, k) if m else (0, k) for m in s.layout.outer), (j, k))
                for j in range(2)
                for k in range(batch)
            ],
        ),
    ]
    if s.layout.some is not None:
        in_axes = tuple(0 if m else None for m in s.layout.some)
        variants.append(
            (
                "vmap_some",
                f"vmap over {names(s.layout.some)} only (in_axes={in_axes})",
                [
                    ((k,), tuple(key if m else (0, 0) for m in s.layout.some), key)
                    for k, key in enumerate(all_of)
                ],
            )
        )
    if s.with_grad:
        variants.append(
            (
                "vmap_cotangent",
                "vmap over the cotangent only (the arguments unbatched)",
                [((k,), ((0, 0),) * n, key) for k, key in enumerate(all_of)],
            )
        )
    _compare_variants(s, "vmap", variants)
    _check_broadcast(s)


def _check_broadcast(s: _Subject) -> None:
    """Leading batch axes given to the adapter directly; unbatched arguments broadcast, and
    their gradients sum over the batch."""
    mask = s.layout.broadcast
    batch = len(s.stacked[0])
    description = (
        "a call with a leading batch axis on "
        + ", ".join(name for name, m in zip(s.names, mask) if m)
        + (" only (gufunc broadcasting)" if not all(mask) else "")
    )
    outputs, gradients = s.batched["broadcast"]
    refs = [s.reference(tuple((0, k) if m else (0, 0) for m in mask), (0, k)) for k in range(batch)]
    for k, (ref_outputs, ref_gradients) in enumerate(refs):
        keys = tuple((0, k) if m else (0, 0) for m in mask)
        for o, (got, expected) in enumerate(zip(outputs, ref_outputs)):
            what = f"{description}: output {o} at batch element {k}"
            s.expect_close("vmap", what, got[k], expected, "same", keys)
    if gradients is None:
        return
    for j, i in enumerate(s.wrt):
        if mask[i]:
            for k, (_, ref_gradients) in enumerate(refs):
                keys = tuple((0, k) if m else (0, 0) for m in mask)
                what = f"{description}: the cotangent of {s.names[i]!r} at batch element {k}"
                s.expect_close("vmap", what, gradients[j][k], ref_gradients[j], "same", keys)
        else:
            expected = np.sum([r[1][j] for r in refs], axis=0)
            what = f"{description}: the cotangent of the unbatched {s.names[i]!r}"
            s.expect_close(
                "vmap",
                what,
                gradients[j],
                expected,
                "same",
                None,
                ("batched", "summed over calls on each element alone"),
            )


def _check_scan(s: _Subject) -> None:
    all_of = [(0, k) for k in range(len(s.stacked[0]))]
    n = len(s.names)
    elements = [((k,), (key,) * n, key) for k, key in enumerate(all_of)]
    variants = [("scan_inner", "the call and its pullback inside lax.scan", elements)]
    if s.with_grad:
        variants.append(("scan_outer", "the pullback of a lax.scan over the calls", elements))
    _compare_variants(s, "scan", variants)


def _compare_variants(
    s: _Subject,
    check: str,
    variants: Sequence[tuple[str, str, Sequence[tuple[tuple[int, ...], tuple, tuple[int, int]]]]],
) -> None:
    """Each variant's result at each index against the element it stands for, alone."""
    for key, description, elements in variants:
        outputs, gradients = s.batched[key]
        for index, keys, ct_key in elements:
            ref_outputs, ref_gradients = s.reference(keys, ct_key)
            at = f"batch element {index[0]}" if len(index) == 1 else f"batch element {index}"
            for o, (got, expected) in enumerate(zip(outputs, ref_outputs)):
                what = f"{description}: output {o} at {at}"
                s.expect_close(check, what, got[index], expected, "same", keys)
            if gradients is None:
                continue
            for j, i in enumerate(s.wrt):
                what = f"{description}: the cotangent of {s.names[i]!r} at {at}"
                s.expect_close(check, what, gradients[j][index], ref_gradients[j], "same", keys)


_RUNS: Mapping[str, Callable[[_Subject], None]] = {
    "specs": _check_specs,
    "jit": _check_jit,
    "grad": _check_grad,
    "vmap": _check_vmap,
    "scan": _check_scan,
}
