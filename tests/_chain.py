"""A matrix-free symmetric operator for ``OperatorEigsh``'s tests: a chain of ``n`` unit
masses between two walls, joined by ``n + 1`` springs of stiffness ``theta``, on an on-site
potential ``onsite * (1, 2, ..., n)`` (spaced, so that the spectrum is well separated when
the springs are weak). Its rules are JAX code (it is bilinear in ``x`` and ``theta``), so
derivatives of every order go through it."""

import jax.numpy as jnp
import numpy as np

import jaxbridge as jb


def _stretches(x):
    """``x[j - 1] - x[j]`` for each spring ``j = 0 ... n`` (the walls do not move)."""
    pad = [(0, 0)] * (x.ndim - 1) + [(1, 1)]
    padded = np.pad(x, pad) if isinstance(x, np.ndarray) else jnp.pad(x, pad)
    return padded[..., :-1] - padded[..., 1:]


class Chain(jb.Adapter):
    n: int
    onsite: float = 0.0

    signature = "(n),(p)->(n)"
    vectorized = True

    def forward(self, x, theta):
        forces = theta * _stretches(x)
        potential = self.onsite * np.arange(1, x.shape[-1] + 1) * x
        return forces[..., 1:] - forces[..., :-1] + potential

    def pushforward(self, res, tangents):
        x, theta, _ = res
        dx, dtheta = tangents
        terms = []
        if dx is not None:
            terms.append(self(dx, theta))
        if dtheta is not None:  # linear in theta, without the on-site part
            forces = dtheta * _stretches(x)
            terms.append(forces[..., 1:] - forces[..., :-1])
        return sum(terms[1:], terms[0])

    def pullback(self, res, g):
        x, theta, _ = res
        return self(g, theta), _stretches(g) * _stretches(x)

    def dense(self, theta: np.ndarray) -> np.ndarray:
        """The matrix, column by column, for references."""
        return np.stack([self.forward(e, theta) for e in np.eye(self.n)], axis=-1)
