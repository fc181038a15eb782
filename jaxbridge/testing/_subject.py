"""``Subject``: an adapter, the arguments to check it on, and what every check derives from them.

Also which checks (``_checks.CHECKS``) apply to an adapter: forward-mode checks only to an
adapter with a forward-mode rule, and so on (see ``Subject.applies``).
"""

from __future__ import annotations

import dataclasses
import functools
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbridge import Adapter, Domain
from jaxbridge.internal import (
    Signature,
    arg_names,
    bind_dims,
    linear_in_all,
    overrides,
    parse_signature,
)

from . import _host
from ._arguments import canonical, check_domain, listing, precision, refused_arguments
from ._checks import (
    CHECKS,
    FORWARD_OVER_FORWARD,
    FORWARD_OVER_REVERSE,
    REVERSE_OVER_FORWARD,
    REVERSE_OVER_REVERSE,
    per_check,
)
from ._compare import Tolerance, mismatch, tolerance
from ._domains import domains_of, sample
from ._transforms import Layout, Result, batched, floating, plain

_LEAST_SCALE = 1e-2  # the least scale of a drawn tangent, as in the finite differences


@dataclasses.dataclass
class Subject:
    """An adapter, the arguments to check it on, and everything derived from them once."""

    adapter: Adapter
    owner: str
    names: tuple[str, ...]
    signature: Signature
    domains: tuple[Domain, ...]
    args: tuple[np.ndarray, ...]
    outputs: tuple[jax.ShapeDtypeStruct, ...]
    checks: frozenset[str]  # the checks asked for that apply to this adapter
    with_grad: bool
    layout: Layout
    stacked: tuple[np.ndarray, ...]
    extra: tuple[np.ndarray, ...]
    cts: tuple[np.ndarray, ...] | None  # per floating output, stacked like the arguments
    extra_cts: tuple[np.ndarray, ...] | None
    dtype: np.dtype
    seed: int
    options: str
    rtol: Mapping[str, float]  # the caller's overrides, per check
    atol: Mapping[str, float]
    refused: tuple[jax.Array, ...] | None = None  # arguments the adapter refuses
    references: dict[tuple, Result] = dataclasses.field(default_factory=dict)
    memo: dict[tuple, Any] = dataclasses.field(default_factory=dict)  # results checks share

    @classmethod
    def make(
        cls,
        adapter: Adapter,
        args: Sequence[Any],
        *,
        checks: Iterable[str] = tuple(CHECKS),
        batch: int = 2,
        seed: int = 0,
        rtol: float | Mapping[str, float] | None = None,
        atol: float | Mapping[str, float] | None = None,
        refused: Sequence[Any] | None = None,
    ) -> Subject:
        """The subject of ``check_adapter(adapter, *args, ...)`` (its options, by name)."""
        if not isinstance(adapter, Adapter):
            raise TypeError(f"check_adapter needs a jaxbridge.Adapter, got {adapter!r}.")
        owner = type(adapter).__name__
        names = arg_names(type(adapter))
        signature = parse_signature(adapter.signature)
        if len(args) != len(names):
            raise TypeError(
                f"check_adapter({owner}, ...) needs {len(names)} arguments "
                f"({', '.join(names)}), got {len(args)}."
            )
        asked = frozenset(checks)
        if not asked <= set(CHECKS):
            raise ValueError(
                f"unknown checks {sorted(asked - set(CHECKS))}; the checks are {tuple(CHECKS)}."
            )
        if not (isinstance(batch, int) and batch >= 2):
            raise ValueError(f"`batch` must be an integer of at least 2, got {batch!r}.")
        arrays = tuple(canonical(name, a) for name, a in zip(names, args))
        bind_dims(owner, names, signature.inputs, tuple(a.shape for a in arrays))
        domains = domains_of(owner, adapter.domains, names, signature.inputs)
        for name, domain, a in zip(names, domains, arrays):
            check_domain(owner, name, domain, a)
        got = jax.eval_shape(adapter, *arrays)
        outputs = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        dtype = precision([a.dtype for a in arrays] + [o.dtype for o in outputs])
        differentiable = any(floating(a.dtype) for a in arrays) and any(
            floating(o.dtype) for o in outputs
        )
        # an adapter without a reverse-mode rule (forward mode only) skips the gradients
        with_grad = "grad" in asked and differentiable and _reverse_rule(adapter)

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
                        sample(domain, a.shape, a.dtype, rng) if floating(a.dtype) else a
                        for _ in range(batch - first)
                    ]
                )
                for domain, a in zip(domains, elements)
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
            vmap="vmap" in asked,
            scan="scan" in asked,
        )
        stacked, cts = draw(True), draw_cts()
        extra, extra_cts = draw(False), draw_cts()
        subject = cls(
            adapter=adapter,
            owner=owner,
            names=names,
            signature=signature,
            domains=domains,
            args=arrays,
            outputs=outputs,
            checks=frozenset(),
            with_grad=with_grad,
            layout=layout,
            stacked=stacked,
            extra=extra,
            cts=cts,
            extra_cts=extra_cts,
            dtype=dtype,
            seed=seed,
            options=f"seed={seed}, batch={batch}",
            rtol=per_check("rtol", rtol),
            atol=per_check("atol", atol),
            refused=None if refused is None else refused_arguments(owner, names, arrays, refused),
        )
        subject.checks = frozenset(c for c in asked if subject.applies(c, differentiable))
        return subject

    # --- which checks apply

    @functools.cached_property
    def forward_rule(self) -> bool:
        """Whether the adapter has a forward-mode rule: ``jvp`` or ``pushforward``, or (linear
        in all its floating arguments) ``forward`` itself."""
        adapter = self.adapter
        return (
            overrides(adapter, "jvp")
            or overrides(adapter, "pushforward")
            or linear_in_all(adapter, self.args)
        )

    @functools.cached_property
    def host_backward(self) -> bool:
        """Whether the reverse-mode rule runs on the host: ``backward``, not ``pullback``."""
        return overrides(self.adapter, "backward") and not overrides(self.adapter, "pullback")

    @functools.cached_property
    def reverse_rule(self) -> bool:
        """Whether the adapter has a reverse-mode rule: ``backward`` or ``pullback``."""
        return _reverse_rule(self.adapter)

    @functools.cached_property
    def second_orders(self) -> tuple[str, ...]:
        """The compositions of modes that give second derivatives (see ``_hessian``): those
        that differentiate a rule written in JAX (``pullback``, ``pushforward``), or any rule
        of an adapter linear in all its floating arguments (its rules are constant)."""
        adapter = self.adapter
        linear = linear_in_all(adapter, self.args)
        pullback = overrides(adapter, "pullback") or (linear and self.reverse_rule)
        pushforward = overrides(adapter, "pushforward") or linear
        found = {
            FORWARD_OVER_REVERSE: pullback and self.forward_rule,
            REVERSE_OVER_REVERSE: pullback,
            REVERSE_OVER_FORWARD: pushforward and self.reverse_rule,
            FORWARD_OVER_FORWARD: pushforward,
        }
        return tuple(c for c, exists in found.items() if exists)

    def applies(self, check: str, differentiable: bool) -> bool:
        """Whether ``check`` says anything about this adapter; those that do not are skipped.

        The checks of derivative rules need floating arguments and outputs; "grad" needs a
        reverse-mode rule (and without one, no check takes gradients), "jvp" a forward-mode
        rule, "transpose" one of each mode, "hessian" a rule that differentiates again (see
        ``second_orders``), "linear_transpose" a non-empty ``linear_in``.
        """
        adapter = self.adapter
        if check == "grad":
            return differentiable and self.reverse_rule
        if check == "linear_transpose":
            return bool(adapter.linear_in) and differentiable
        if check == "jvp":
            return differentiable and self.forward_rule
        if check == "transpose":
            return differentiable and self.forward_rule and self.reverse_rule
        if check == "hessian":
            return differentiable and bool(self.second_orders)
        if check == "refused":
            return self.refused is not None
        return True

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

    @property
    def floating_outputs(self) -> list[int]:
        return [i for i, o in enumerate(self.outputs) if floating(o.dtype)]

    def generator(self, purpose: str) -> np.random.Generator:
        """A generator of its own for each purpose, seeded from ``seed``: what one check
        draws does not depend on which other checks run."""
        return np.random.default_rng([self.seed, zlib.crc32(purpose.encode())])

    def tolerance(self, tier: str, check: str, dtype: np.dtype | None = None) -> Tolerance:
        """The tolerance of ``tier`` in ``check`` for ``dtype`` (the inputs'), with the
        caller's overrides for that check."""
        return tolerance(
            self.dtype if dtype is None else dtype,
            tier,
            self.rtol.get(check),
            self.atol.get(check),
        )

    def element(self, keys: Sequence[tuple[int, int]]) -> tuple[np.ndarray, ...]:
        """The arguments of one batch element: ``(0, k)`` is element k of the batch that
        starts with ``args``, ``(1, k)`` element k of the extra batch."""
        return tuple((self.stacked, self.extra)[source][i][k] for i, (source, k) in enumerate(keys))

    @property
    def first(self) -> tuple[np.ndarray, ...]:
        """``args`` as the batch holds them: leading axes padded to the same number."""
        return tuple(a[0] for a in self.stacked)

    def element_cts(self, source: int, k: int) -> tuple[np.ndarray, ...] | None:
        cts = (self.cts, self.extra_cts)[source]
        return None if cts is None else tuple(c[k] for c in cts)

    def directions(self, purpose: str, count: int) -> tuple[np.ndarray, ...]:
        """Random directions in the floating arguments (one per entry of ``wrt``), stacked
        ``count`` deep and shaped like ``first``: normal entries scaled like the argument's
        (its root mean square, at least 1e-2), symmetric for a symmetric domain's argument."""
        rng = self.generator(purpose)
        out = []
        for i in self.wrt:
            x = self.first[i]
            t = rng.standard_normal((count, *x.shape))
            if self.domains[i].symmetric:
                t = (t + np.swapaxes(t, -1, -2)) / 2
            rms = float(np.sqrt(np.mean(x.astype(np.float64) ** 2))) if x.size else 0.0
            out.append((max(rms, _LEAST_SCALE) * t).astype(x.dtype))
        return tuple(out)

    @functools.cached_property
    def tangents(self) -> tuple[np.ndarray, ...]:
        """Tangents of the floating arguments for the forward-mode checks, stacked like them."""
        return self.directions("tangents", len(self.stacked[0]))

    @functools.cached_property
    def probe_cts(self) -> tuple[np.ndarray, ...]:
        """Cotangents of the floating outputs for the checks of derivative rules, shaped like
        the outputs of a call on ``first`` (drawn whether or not "grad" runs)."""
        rng = self.generator("cotangents")
        return tuple(
            rng.standard_normal(self.outputs[o].shape).astype(self.outputs[o].dtype)
            for o in self.floating_outputs
        )

    def inputs(self, keys: Sequence[tuple[int, int]] | None = None) -> str:
        """``args``, or the batch element ``keys`` stands for, as lines of Python."""
        return listing(self.names, self.args if keys is None else self.element(keys))

    def failure(self, check: str, detail: str, inputs: str | None = None) -> AssertionError:
        inputs = self.inputs() if inputs is None else inputs
        return AssertionError(
            f"check_adapter({self.owner}): the {check!r} check failed ({CHECKS[check]}): "
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
        least_scale: tuple[float, str] | None = None,
        hint: str = "",
    ) -> None:
        """Raise the failure of ``check`` if ``got`` and ``expected`` differ; ``keys`` says
        which batch element they stand for (``None``: ``args``). ``uncertainty`` and
        ``least_scale`` are passed on to ``mismatch``; ``hint``, a likely cause, ends the
        message."""
        tol = self.tolerance(tier, check)
        problem = mismatch(got, expected, tol, labels, uncertainty, least_scale)
        if problem is not None:
            raise self.failure(check, f"{what} {problem}{hint}", self.inputs(keys))

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


def _reverse_rule(adapter: Adapter) -> bool:
    return overrides(adapter, "backward") or overrides(adapter, "pullback")
