"""The arguments ``check_adapter`` is given, made what every check takes: NumPy arrays of
JAX's canonical dtypes inside their declared domains, written back as lines of Python."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbridge import Domain

from ._domains import room
from ._transforms import floating


def canonical(name: str, value: Any) -> np.ndarray:
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


def check_domain(owner: str, name: str, domain: Domain, value: np.ndarray) -> None:
    """Refuse an argument outside its declared domain, where finite differences mean little."""
    problem = None
    if domain.integer and not np.issubdtype(value.dtype, np.integer):
        problem = f"is {value.dtype}"
    elif floating(value.dtype) and not np.all(np.isfinite(value)):
        problem = "has entries that are not finite"
    elif domain.symmetric and not np.array_equal(value, np.swapaxes(value, -1, -2)):
        problem = "is not exactly symmetric"
    elif floating(value.dtype) and not np.all(room(domain, value.astype(np.float64)) > 0):
        problem = domain.outside
    if problem is not None:
        raise ValueError(
            f"{owner}: argument {name!r} {problem}, but {owner}.domains declares it "
            f"{domain.name!r}. Pass an input from that domain."
        )


def precision(dtypes: Sequence[Any]) -> np.dtype:
    """The least precise floating dtype in play, which sets the tolerances."""
    found = [np.dtype(d) for d in dtypes if floating(d)]
    return max(found, key=lambda d: np.finfo(d).eps) if found else np.dtype(np.float64)


def listing(names: Sequence[str], values: Sequence[np.ndarray]) -> str:
    """Arguments as lines of Python that rebuild them exactly."""
    lines = []
    for name, value in zip(names, values):
        prefix = f"  {name} = np.array("
        text = np.array2string(
            value, separator=", ", floatmode="unique", threshold=64, prefix=prefix
        )
        lines.append(f"{prefix}{text}, np.{value.dtype})  # shape {value.shape}")
    return "\n".join(lines)


def refused_arguments(
    owner: str, names: Sequence[str], args: Sequence[np.ndarray], refused: Sequence[Any]
) -> tuple[jax.Array, ...]:
    """``check_adapter``'s ``refused`` arguments, one per argument, as JAX arrays of the
    checked arguments' dtypes."""
    if len(refused) != len(names):
        raise TypeError(
            f"check_adapter({owner}, ..., refused=...) needs {len(names)} arguments "
            f"({', '.join(names)}), got {len(refused)}."
        )
    return tuple(jnp.asarray(r, a.dtype) for r, a in zip(refused, args))
