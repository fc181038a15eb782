"""Timing shared by the benchmarks: interleaved rounds, compared by medians."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import jax
import numpy as np


def medians(
    contenders: dict[str, Callable[[], object]], rounds: int, inner: int = 1
) -> dict[str, float]:
    """Median seconds per call of each contender, over rounds that run every contender
    ``inner`` times in a freshly shuffled order, so that the machine's noise hits them alike."""
    for run in contenders.values():  # compile and warm up
        jax.block_until_ready(run())
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            run = contenders[name]
            start = time.perf_counter()
            for _ in range(inner):
                jax.block_until_ready(run())
            samples[name].append((time.perf_counter() - start) / inner)
    return {name: float(np.median(s)) for name, s in samples.items()}
