"""``CoefficientGroups``, the batch walk ``LinearSolve``'s family and the filters share: one
call per set of coefficients (a matrix factorized once), however its data elements broadcast.
The families' tests check the results; this checks the calls."""

import numpy as np

from jaxbridge.adapters._shared._coefficient_groups import CoefficientGroups


def test_one_call_per_set_of_coefficients_with_every_element_that_shares_it():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(2, 1, 3, 3))  # batch (2, 1), rank 2
    v = rng.normal(size=(3, 3))  # batch (3,), rank 1
    data = rng.normal(size=(4, 1, 1, 3))  # batch (4, 1, 1): (4, 2, 3) with the others
    groups = CoefficientGroups([m, v], [2, 1], data, 1)
    assert groups.coefficient_batch == (1, 2, 3)  # (padded to the whole batch's rank)
    assert groups.shape == (4, 2, 3, 3)

    stacks = []

    def product(m, v, stack):
        stacks.append(stack.shape)
        return stack @ m.T + v, "rest"

    y = np.empty(groups.shape)
    rests = [groups.apply(index, product, y) for index in np.ndindex(1, 2, 3)]
    assert stacks == [(4, 3)] * 6 and rests == [["rest"]] * 6
    np.testing.assert_allclose(y, np.einsum("...ij,...j->...i", m, data) + v, rtol=1e-14)
