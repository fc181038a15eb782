"""``Doubling``: the host function ``x * 2`` that the JAX callback tutorials start from."""

import jaxbridge as jb


class Doubling(jb.Adapter):
    """``2 * x`` computed by NumPy on the host, elementwise."""

    signature = "()->()"
    vectorized = True
    linear_in = ("x",)  # so forward mode, every order and linear_transpose need nothing more

    def forward(self, x):
        return x * 2

    def backward(self, res, g):
        return (2 * g,)
