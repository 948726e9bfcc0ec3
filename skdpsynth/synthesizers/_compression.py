"""Domain compression of the marginal synthesizers (MST, AIM): grid cells with small noisy 1-way counts merged.

Post-processing of the noisy 1-way marginals (no privacy cost), done once before any larger marginal is
measured. Unordered columns merge their small cells into one "rare" cell (MST's compression); ordered columns
(integers, binned numbers, dates) merge runs of *adjacent* cells until each
group's noisy count reaches the threshold, so the model keeps coarse but
ordered bins (a column of 3,000 people spread over 32 bins at a threshold of a
few hundred keeps about 3,000 / threshold ranges instead of one rare cell).
A merged cell is decoded into its grid cells by their noisy 1-way proportions.
"""

from __future__ import annotations

import numpy as np

from skdpsynth._grid import ColumnGrid, PublicGrid
from skdpsynth.privacy import project_to_simplex
from skdpsynth.synthesizers._graphical_model import Measurement

__all__ = ["Compression", "compress_column", "expand_codes"]


def _rare_groups(keep: np.ndarray) -> list[np.ndarray]:
    kept = [np.array([i]) for i in np.flatnonzero(keep)]
    rare = np.flatnonzero(~keep)
    return kept + ([rare] if len(rare) else [])


def _run_groups(noisy: np.ndarray, threshold: float) -> list[np.ndarray]:
    """Adjacent cells, left to right, closed once their noisy total reaches ``threshold``."""
    groups, current, total = [], [], 0.0
    for i, y in enumerate(noisy):
        current.append(i)
        total += float(y)
        if total >= threshold:
            groups.append(np.array(current))
            current, total = [], 0.0
    if current:  # a tail below the threshold joins the last group
        if groups:
            groups[-1] = np.concatenate([groups[-1], current])
        else:
            groups.append(np.array(current))
    return groups


def compress_column(column: ColumnGrid, noisy: np.ndarray, threshold: float | None
                    ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Compressed cells of one column from its noisy 1-way counts on the grid.

    Parameters
    ----------
    column : ColumnGrid
        The column's public cells (value cells, then the missing cell when nullable).
    noisy : ndarray
        Noisy counts of the grid cells.
    threshold : float or None
        Merge below this noisy count (None: no compression).

    Returns
    -------
    mapping : ndarray of int64
        The compressed cell of every grid cell.
    groups : list of ndarray
        The grid cells of every compressed cell.
    probs : list of ndarray
        Within each compressed cell, the probability of each of its grid cells.
    """
    k = len(noisy)
    if threshold is None:
        groups = [np.array([i]) for i in range(k)]
    elif column.spec.kind in ("categorical", "boolean"):
        keep = noisy >= threshold
        groups = _rare_groups(keep if keep.sum() < k - 1 else np.ones(k, bool))  # merging one cell changes nothing
    else:
        n_val = column.n_value_cells
        groups = _run_groups(noisy[:n_val], threshold) + [np.array([i]) for i in range(n_val, k)]
    mapping = np.empty(k, dtype=np.int64)
    probs = []
    for g, cells in enumerate(groups):
        mapping[cells] = g
        p = project_to_simplex(noisy[cells].astype(float)) if len(cells) > 1 else np.ones(1)
        probs.append(p / p.sum() if p.sum() > 0 else np.full(len(cells), 1.0 / len(cells)))
    return mapping, groups, probs


def expand_codes(comp: np.ndarray, groups: list[np.ndarray], probs: list[np.ndarray],
                 rng: np.random.Generator) -> np.ndarray:
    """Grid cells from compressed cells: each merged cell drawn by its cells' noisy proportions."""
    lookup = np.array([cells[0] for cells in groups], dtype=np.int64)
    out = lookup[comp]
    for g, cells in enumerate(groups):
        if len(cells) > 1:
            rows = np.flatnonzero(comp == g)
            if len(rows):
                out[rows] = cells[rng.choice(len(cells), size=len(rows), p=probs[g])]
    return out


class Compression:
    """Every column's compressed cells, fitted once on the first cohort's noisy 1-way marginals.

    Parameters
    ----------
    grid : PublicGrid
        The public cells.
    one_way : list of Measurement
        Noisy 1-way marginal of every column on the full grid, in column order.
    threshold : float or None
        Merge below this noisy count (None: keep every cell).

    Attributes
    ----------
    maps : list of ndarray of int64
        Per column, the compressed cell of every grid cell (the public maps the queries take).
    groups, probs : list of list of ndarray
        Per column and compressed cell, its grid cells and their noisy 1-way proportions.
    sizes : ndarray of int64
        Number of compressed cells of every column.
    """

    def __init__(self, grid: PublicGrid, one_way: list[Measurement], threshold: float | None) -> None:
        fitted = [compress_column(g, np.asarray(m.counts), threshold) for g, m in zip(grid.columns, one_way)]
        self.maps = [f[0] for f in fitted]
        self.groups = [f[1] for f in fitted]
        self.probs = [f[2] for f in fitted]
        self.sizes = np.array([len(g) for g in self.groups], dtype=np.int64)

    def compress(self, m: Measurement) -> Measurement:
        """A full-grid 1-way measurement on the compressed cells (merged cells' counts and variances add up)."""
        (j,) = m.clique
        size = int(self.sizes[j])
        counts = np.bincount(self.maps[j], weights=np.asarray(m.counts, float), minlength=size)
        variance = np.bincount(self.maps[j], weights=np.broadcast_to(np.asarray(m.variance, float), self.maps[j].shape),
                               minlength=size)
        return Measurement(m.clique, counts, variance)

    def expand(self, comp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Grid cell codes from a table of compressed codes (see :func:`expand_codes`)."""
        return np.column_stack([expand_codes(comp[:, j], self.groups[j], self.probs[j], rng)
                                for j in range(comp.shape[1])])
