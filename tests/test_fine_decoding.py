"""The within-bin decoder's conditionals: each coarse cell's noisy fine counts projected, or its prior."""

import numpy as np
import pytest

from skdpsynth import TableSchema
from skdpsynth._grid import PublicGrid, fine_cells, fine_conditionals
from skdpsynth.privacy import project_to_simplex

SCHEMA = TableSchema.from_dict({
    "amount": {"kind": "continuous", "lower": 0.0, "upper": 1000.0},
    "age": {"kind": "integer", "lower": 15, "upper": 75},
})


@pytest.mark.parametrize("column", [0, 1])
def test_conditionals_are_each_coarse_cells_projection_or_its_prior(column):
    fine = fine_cells(PublicGrid(SCHEMA, 8).columns[column])
    rng = np.random.default_rng(column)
    noisy = rng.normal(3.0, 6.0, fine.n_cells)
    empty = np.flatnonzero(fine.coarse == fine.coarse[len(fine.coarse) // 2])
    noisy[empty] = -4.0  # one coarse cell with nothing left after the projection
    got = fine_conditionals(fine, noisy)
    prior = fine.within_weights()
    for c in np.unique(fine.coarse):
        idx = np.flatnonzero(fine.coarse == c)
        p = project_to_simplex(noisy[idx])
        want = prior[idx] if p.sum() <= 0 else p
        np.testing.assert_allclose(got[idx], want / want.sum(), rtol=1e-12)
    assert np.all(got[empty] > 0)  # the vanished cell fell back to its prior, not to zeros
