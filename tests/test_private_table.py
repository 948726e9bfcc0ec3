"""The private-data handle: its answers are DP answers, each charged before it is drawn, and it gives nothing else."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from skdpsynth import PublicGrid
from skdpsynth.privacy import BudgetAccountant, NoiseSource, PrivateTable
from skdpsynth.schema import ColumnSpec, TableSchema

SCHEMA = TableSchema([ColumnSpec("grade", "categorical", categories=("A", "B", "C")),
                      ColumnSpec("age", "integer", lower=18, upper=30)], public=True)


def _table(rows: pd.DataFrame, epsilon: float | None = 1.0, seed: int = 0) -> PrivateTable:
    accountant = BudgetAccountant(epsilon, 1e-6, delta_zcdp=1e-6)
    noise = NoiseSource.reproducible_from(np.random.SeedSequence(seed))
    return PrivateTable(rows, SCHEMA, accountant=accountant, noise=noise)


def _rows(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return SCHEMA.validate(pd.DataFrame({"grade": rng.choice(["A", "B", "C"], n), "age": rng.integers(18, 31, n)}))


def test_marginal_is_charged_before_it_is_answered_and_is_noisy():
    rows = _rows(500)
    table = _table(rows)
    grid = PublicGrid(SCHEMA, 8)
    noisy = table.marginal(grid, (0, 1), rho=0.01)
    exact = pd.crosstab(rows["grade"], pd.cut(rows["age"], 8)).to_numpy()
    assert noisy.shape == (grid.columns[0].n_cells, grid.columns[1].n_cells)
    assert not np.array_equal(noisy.sum(), len(rows))  # noise of sd ~7.1 per cell: the total is not exact
    assert abs(int(noisy.sum()) - exact.sum()) < 6 * 7.1 * np.sqrt(noisy.size)
    assert table.remaining_rho() < BudgetAccountant(1.0, 1e-6, delta_zcdp=1e-6).remaining_rho()


def test_a_private_query_needs_a_cost_and_rows_are_not_given_out():
    table = _table(_rows(50))
    with pytest.raises(ValueError, match="exactly one of rho"):
        table.count(target="n")
    with pytest.raises(PermissionError):
        table.nonprivate_rows("model")
    with pytest.raises(TypeError, match="never pickled"):
        pickle.dumps(table)
    with pytest.raises(TypeError):
        len(table)
    assert "grade" in repr(table) and "18" not in repr(table)


def test_nonprivate_table_answers_exactly_and_says_so():
    rows = _rows(40)
    accountant = BudgetAccountant(None, 0.0)
    table = PrivateTable(rows, SCHEMA, accountant=accountant, noise=NoiseSource.secure())
    assert table.count() == 40
    assert table.nonprivate_rows("a non-private model") is rows
    assert {r.kind for r in accountant.records} == {"none"}


def test_selection_sensitivity_is_the_largest_weight():
    rows = _rows(2000)
    grid = PublicGrid(SCHEMA, 4)
    table = _table(rows, epsilon=10.0)
    flat = [np.zeros((grid.columns[0].n_cells, grid.columns[1].n_cells)), np.zeros(grid.columns[0].n_cells)]
    pick = table.select_marginal(grid, [(0, 1), (0,)], flat, rho=0.5, weights=[1.0, 3.0], target="select")
    record = [r for r in table._accountant.records if r.target == "select"][0]
    assert record.sensitivity == 3.0
    assert pick in (0, 1)


def test_one_person_moves_one_cell_by_one():
    # the sensitivity a marginal claims, checked on neighbours: exact answers (non-private) differ in L1 by 1
    rows = _rows(300)
    grid = PublicGrid(SCHEMA, 8)
    one_more = pd.concat([rows, SCHEMA.validate(pd.DataFrame({"grade": ["C"], "age": [30]}))], ignore_index=True)
    a = PrivateTable(rows, SCHEMA, accountant=BudgetAccountant(None, 0.0), noise=NoiseSource.secure())
    b = PrivateTable(one_more, SCHEMA, accountant=BudgetAccountant(None, 0.0), noise=NoiseSource.secure())
    assert np.abs(a.marginal(grid, (0, 1)) - b.marginal(grid, (0, 1))).sum() == 1
