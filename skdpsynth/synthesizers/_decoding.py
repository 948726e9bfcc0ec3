"""Decoding binned columns through a DP 1-way marginal on a finer public grid (MST, AIM).

A model on coarse cells (32 equal-width bins by default) decodes a value
uniformly inside its bin, which flattens point masses (zero amounts, integer
values) and skews within the bin. Here each binned column's 1-way histogram is
measured once more on the finer grid of :func:`skdpsynth._grid.fine_cells`
(every integer of a small integer range, or sub-bins plus the two bounds), and
a sampled coarse cell is refined by ``P(fine cell | coarse cell)``.

Privacy: each fine histogram has L2 sensitivity 1 under add/remove one person
(one person is in one fine cell, or in none when missing); the ``k`` binned
columns get ``rho / k`` each through the discrete Gaussian mechanism. The
conditionals are post-processing of those counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from skdpsynth._grid import FineCells, PublicGrid, decode_fine, fine_cells, fine_conditionals
from skdpsynth.privacy import BudgetRecord

__all__ = ["FineDecoder"]


class FineDecoder:
    """Fine-grid counts of a grid's binned columns, summed over cohorts, and the decoder they give.

    Parameters
    ----------
    grid : PublicGrid
        The model's coarse cells.
    enabled : bool
        False: no fine measurements; values are decoded uniformly inside their bin.
    """

    def __init__(self, grid: PublicGrid, enabled: bool = True) -> None:
        self.grid = grid
        self.fines: list[FineCells | None] = [fine_cells(g) if enabled else None for g in grid.columns]
        self.counts: list[np.ndarray | None] = [None if f is None else np.zeros(f.n_cells, dtype=np.int64)
                                                for f in self.fines]
        self.conditionals: list[np.ndarray | None] = [None] * len(self.fines)

    @property
    def columns(self) -> list[int]:
        """Indices of the columns decoded through a fine grid."""
        return [j for j, f in enumerate(self.fines) if f is not None]

    def planned(self, rho: float) -> list[BudgetRecord]:
        """The records :meth:`measure` charges with ``rho`` (empty when no column is binned)."""
        k = len(self.columns)
        return [BudgetRecord("discrete gaussian", "fine 1-way marginal (decoding)", "zcdp", rho=rho / k)] * k if (
            k and rho > 0) else []

    def measure(self, table, rho: float | None) -> None:
        """Measure every binned column's fine histogram on the private table (``rho / k`` each; exact when None).

        Privacy: each is a query of ``table`` through a public row-wise encoding (L2 sensitivity 1).
        """
        cols = self.columns
        for j in cols:
            fine = self.fines[j]
            name = fine.column.spec.name
            noisy = table.histogram(lambda rows, f=fine, c=name: f.encode(rows[c]), fine.n_cells,
                                    rho=None if rho is None else rho / len(cols),
                                    target=f"fine 1-way marginal of {name!r} (decoding)")
            self.counts[j] = self.counts[j] + noisy
            self.conditionals[j] = fine_conditionals(fine, self.counts[j])

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """A schema-normalised table from coarse cell codes (fine grid where measured, else uniform in bin)."""
        out = {}
        for j, g in enumerate(self.grid.columns):
            if self.conditionals[j] is not None:
                out[g.spec.name] = decode_fine(self.fines[j], self.conditionals[j], codes[:, j], rng).to_numpy()
            else:
                out[g.spec.name] = g.decode(codes[:, j], rng).to_numpy()
        return pd.DataFrame(out)
