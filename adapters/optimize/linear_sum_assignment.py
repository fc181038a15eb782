"""``LinearSumAssignment``: SciPy's ``linear_sum_assignment``, the matching as integers."""

from typing import Any

import jax
import numpy as np
import scipy.optimize

import jaxbridge as jb


class LinearSumAssignment(jb.Adapter):
    """The assignment of least (or greatest) total cost, with SciPy's Hungarian-type
    solver on the host: ``rows, cols = LinearSumAssignment()(cost_matrix)``.

    ``cost_matrix`` is (n, m); ``rows`` and ``cols`` (int32, ``min(n, m)`` each) match row
    ``rows[i]`` to column ``cols[i]``, ``rows`` increasing, as SciPy returns them. Leading
    axes are batch axes (one SciPy call per matrix).

    Parameters:
        maximize: find the assignment of greatest total cost instead.

    The matching is locally constant, so its derivatives are zero in every mode; the
    optimal cost, written in JAX from it, is differentiable in ``cost_matrix``::

        rows, cols = LinearSumAssignment()(cost)
        total = cost[rows, cols].sum()   # its gradient: 1 on the chosen entries, 0 elsewhere

    That is the optimal cost's derivative wherever the optimal matching is unique. Where
    two matchings tie the cost has a kink, and this is the derivative along SciPy's choice.
    Entries may be ``inf`` (a forbidden pair; ``-inf`` when maximizing), never NaN; a
    matrix with no finite assignment is an error naming the adapter.
    """

    maximize: bool = False

    signature = "(n,m)->(k),(k)"

    def output_specs(self, cost_matrix):
        k = min(cost_matrix.shape[-2:])
        indices = jax.ShapeDtypeStruct((*cost_matrix.shape[:-2], k), np.int32)
        return indices, indices

    def check(self, cost_matrix):
        if np.isnan(cost_matrix).any():
            raise ValueError("argument 'cost_matrix' holds NaN; expected numbers (inf allowed).")
        forbidden = np.inf if self.maximize else -np.inf
        if (cost_matrix == forbidden).any():
            raise ValueError(
                f"argument 'cost_matrix' holds {forbidden}, which no assignment can "
                f"{'maximize' if self.maximize else 'minimize'} against."
            )

    def forward(self, cost_matrix):
        rows, cols = scipy.optimize.linear_sum_assignment(cost_matrix, maximize=self.maximize)
        return rows.astype(np.int32), cols.astype(np.int32)

    def pushforward(self, res, tangents):
        return None, None  # (integers: the matching does not move)

    def pullback(self, res, g):
        return (None,)


def linear_sum_assignment(cost_matrix: Any, maximize: bool = False) -> Any:
    """``scipy.optimize.linear_sum_assignment(cost_matrix, maximize)`` as
    ``LinearSumAssignment(maximize)(cost_matrix)``: ``(rows, cols)``, as SciPy's."""
    return LinearSumAssignment(maximize=maximize)(cost_matrix)
