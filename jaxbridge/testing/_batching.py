"""The "vmap" and "scan" checks: the call and its pullback over a batch, by ``vmap`` (flat,
partial, nested, over the cotangent alone), by the adapter's own leading batch axes and by
``lax.scan``, equal a Python loop of calls on one element at a time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._subject import Subject

# (name of the batched result, what it is, [(index in it, element keys, cotangent key)])
Variant = tuple[str, str, Sequence[tuple[tuple[int, ...], tuple, tuple[int, int]]]]


def check_vmap(s: Subject) -> None:
    batch = len(s.stacked[0])
    n = len(s.names)
    all_of = [(0, k) for k in range(batch)]

    def names(mask: Sequence[bool]) -> str:
        return ", ".join(name for name, m in zip(s.names, mask) if m)

    variants: list[Variant] = [
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


def _not_batch_aware(s: Subject, method: str) -> str:
    """The likely cause of a batched result that differs from the per-element ones, for a
    vectorized adapter (the bridge then hands ``method`` whole batches at once); JAX batches
    a ``pullback`` itself."""
    if not type(s.adapter).vectorized or (method == "backward" and not s.host_backward):
        return ""
    return (
        f". {s.owner} declares `vectorized = True`, so the bridge hands {method} the whole "
        f"batch in one call: that may be wrong, if {method} does not treat leading axes as "
        f"batch axes (a reduction or an index over all axes mixes batch elements); remove "
        f"it to have the bridge loop over the batch"
    )


def _check_broadcast(s: Subject) -> None:
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
            hint = _not_batch_aware(s, "forward")
            s.expect_close("vmap", what, got[k], expected, "same", keys, hint=hint)
    if gradients is None:
        return
    for j, i in enumerate(s.wrt):
        if mask[i]:
            for k, (_, ref_gradients) in enumerate(refs):
                keys = tuple((0, k) if m else (0, 0) for m in mask)
                what = f"{description}: the cotangent of {s.names[i]!r} at batch element {k}"
                hint = _not_batch_aware(s, "backward")
                s.expect_close(
                    "vmap", what, gradients[j][k], ref_gradients[j], "same", keys, hint=hint
                )
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


def check_scan(s: Subject) -> None:
    all_of = [(0, k) for k in range(len(s.stacked[0]))]
    n = len(s.names)
    elements = [((k,), (key,) * n, key) for k, key in enumerate(all_of)]
    variants: list[Variant] = [
        ("scan_inner", "the call and its pullback inside lax.scan", elements)
    ]
    if s.with_grad:
        variants.append(("scan_outer", "the pullback of a lax.scan over the calls", elements))
    _compare_variants(s, "scan", variants)


def _compare_variants(s: Subject, check: str, variants: Sequence[Variant]) -> None:
    """Each variant's result at each index against the element it stands for, alone."""
    for key, description, elements in variants:
        outputs, gradients = s.batched[key]
        for index, keys, ct_key in elements:
            ref_outputs, ref_gradients = s.reference(keys, ct_key)
            at = f"batch element {index[0]}" if len(index) == 1 else f"batch element {index}"
            for o, (got, expected) in enumerate(zip(outputs, ref_outputs)):
                what = f"{description}: output {o} at {at}"
                hint = _not_batch_aware(s, "forward") if check == "vmap" else ""
                s.expect_close(check, what, got[index], expected, "same", keys, hint=hint)
            if gradients is None:
                continue
            for j, i in enumerate(s.wrt):
                what = f"{description}: the cotangent of {s.names[i]!r} at {at}"
                hint = _not_batch_aware(s, "backward") if check == "vmap" else ""
                s.expect_close(
                    check, what, gradients[j][index], ref_gradients[j], "same", keys, hint=hint
                )
