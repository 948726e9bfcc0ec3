"""NPGC's sufficient statistics, accumulated chunk by chunk: exact, private, never stored.

Everything NPGC measures is a function of three additive statistics of the
cohort: the number of people ``n``, the cell counts of every column (the
marginals) and the contingency table of every pair of columns on coarser
*dependence cells* (Kendall's tau of a pair is computed exactly from its
table). They are summed over row chunks, over the chunks of an iterable, or
over the partitions of a Dask DataFrame (:mod:`skdpsynth._chunks`), so memory
is bounded by the chunk and the tables, whatever the number of rows. Noise is
added once, to the merged statistics, by the estimator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from skdpsynth.privacy._clipping import ClipTally
from skdpsynth.synthesizers._npgc_cells import NPGCColumnCells

__all__ = ["CohortStatistics", "PairLayout", "StatisticsBuilder", "dependence_map", "frame_statistics",
           "DEPENDENCE_CELLS", "CHUNK_CELLS"]

#: most dependence cells of one column (value cells are merged in runs of consecutive cells beyond this)
DEPENDENCE_CELLS = 36
#: rows x columns encoded at a time (bounds the temporaries of one chunk)
CHUNK_CELLS = 1 << 21
#: rows of one pass of the pair tables (their keys stay in the processor's cache)
PAIR_ROWS = 1 << 13


def dependence_map(cells: NPGCColumnCells, cap: int = DEPENDENCE_CELLS) -> np.ndarray:
    """Dependence cell of each of the column's cells (public: laid out from the schema only).

    Columns with at most ``cap`` cells keep them; wider columns (long integer
    ranges, many categories, many bins) merge runs of consecutive value cells
    into ``cap - 1`` groups (``cap`` when not nullable); the missing cell stays
    last. Tau on the merged cells is still the tau of the same latent copula
    (the bridge accounts for the extra ties).
    """
    n = cells.n_cells
    if n <= cap:
        return np.arange(n)
    values = cells.n_value_cells
    groups = cap - int(cells.spec.nullable)
    out = (np.arange(values) * groups) // values
    return np.concatenate([out, [groups]]) if cells.spec.nullable else out


class PairLayout:
    """Where each pair's contingency table lives in one flat int64 vector (public: from the cell counts only).

    Column ``i``'s tables against every later column form one block of shape
    ``(d - 1 - i, c_i, K_i)``: ``c_i`` rows (column ``i``'s dependence cells),
    ``K_i = max_(j > i) c_j`` columns (a narrower table is padded with empty
    cells). Pairs run in ``np.triu_indices`` order. Statistics of chunks add up
    as flat vectors.

    Parameters
    ----------
    sizes : sequence of int
        Dependence cells of every column.
    """

    def __init__(self, sizes) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        d = len(self.sizes)
        self.shapes = [(d - 1 - i, int(self.sizes[i]), int(self.sizes[i + 1:].max())) for i in range(d - 1)]
        lengths = [a * b * c for a, b, c in self.shapes]
        self.starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.size = int(self.starts[-1])

    def blocks(self, flat: np.ndarray):
        """``(i, view)`` for every column ``i`` with later columns; ``view`` is (pairs, c_i, K_i)."""
        for i, shape in enumerate(self.shapes):
            yield i, flat[self.starts[i]:self.starts[i + 1]].reshape(shape)

    def table(self, flat: np.ndarray, i: int, j: int) -> np.ndarray:
        """The (c_i, c_j) table of pair ``i < j``."""
        block = flat[self.starts[i]:self.starts[i + 1]].reshape(self.shapes[i])
        return block[j - i - 1, :, :self.sizes[j]]

    def add(self, flat: np.ndarray, dep: np.ndarray) -> None:
        """Add the pair tables of one chunk of dependence-cell codes (d, rows) to ``flat``."""
        for i, (width, rows, k) in enumerate(self.shapes):
            # one bincount per column against every later column: key = (pair, cell_i, cell_j)
            keys = dep[i + 1:] + (np.arange(width) * (rows * k))[:, None]
            keys += dep[i] * k
            flat[self.starts[i]:self.starts[i + 1]] += np.bincount(keys.ravel(), minlength=width * rows * k)


@dataclass
class CohortStatistics:
    """Exact statistics of one cohort (private: the estimator only adds noise to them).

    Attributes
    ----------
    n : int
        Number of rows (people).
    counts : ndarray of int64
        Cell counts of all columns, concatenated in column order.
    tables : ndarray of int64
        Contingency table of every column pair on the dependence cells, laid out by :class:`PairLayout`.
    ecdf : list or None
        Non-private mode only: per numeric / datetime column ``(values, counts, n_missing)``.
    clipped : ClipTally
        The values the schema clipped (exact; the estimator releases them only as a noisy count).
    """

    n: int
    counts: np.ndarray
    tables: np.ndarray
    ecdf: list | None = None
    clipped: ClipTally = field(default_factory=ClipTally)

    def merge(self, other: CohortStatistics) -> CohortStatistics:
        """The statistics of both chunks (sums; exact empirical CDFs merged)."""
        ecdf = None
        if self.ecdf is not None and other.ecdf is not None:
            ecdf = [_merge_ecdf(a, b) for a, b in zip(self.ecdf, other.ecdf)]
        return CohortStatistics(self.n + other.n, self.counts + other.counts, self.tables + other.tables, ecdf,
                                self.clipped.merge(other.clipped))


def _merge_ecdf(a, b):
    if a is None or b is None:
        return a if b is None else b
    values, inverse = np.unique(np.concatenate([a[0], b[0]]), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([a[1], b[1]]))
    return values, counts, a[2] + b[2]


class StatisticsBuilder:
    """Accumulates :class:`CohortStatistics` from schema-normalised chunks.

    Parameters
    ----------
    cells : tuple of NPGCColumnCells
        The public cells of every column.
    exact_values : bool
        Also keep the exact empirical CDF of numeric / datetime columns (non-private mode).
    """

    def __init__(self, cells: tuple[NPGCColumnCells, ...], exact_values: bool = False) -> None:
        self.cells = cells
        self.exact_values = exact_values
        sizes = np.array([g.n_cells for g in cells], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.maps = [dependence_map(g) for g in cells]
        self.layout = PairLayout([int(m.max()) + 1 for m in self.maps])
        d = len(cells)
        self.n = 0
        self.counts = np.zeros(int(self.offsets[-1]), dtype=np.int64)
        self.tables = np.zeros(self.layout.size, dtype=np.int64)
        self.ecdf = [None] * d if exact_values else None
        self.clipped = ClipTally()

    def add(self, columns: pd.DataFrame | dict, n_rows: int) -> None:
        """Fold in one schema-normalised chunk: a DataFrame, or ``TableSchema._normalised_columns`` output
        (categorical columns as codes into their categories)."""
        if n_rows == 0:
            return
        codes = np.empty((len(self.cells), n_rows), dtype=np.int64)  # one contiguous row per column
        for j, g in enumerate(self.cells):
            col = columns[g.spec.name]
            if isinstance(col, np.ndarray):  # category codes, -1 missing
                codes[j] = np.where(col < 0, g.missing_cell if g.missing_cell is not None else -1, col)
                continue
            codes[j] = g.encode(col)
            if self.exact_values and g.spec.kind not in ("categorical", "boolean"):
                self.ecdf[j] = _merge_ecdf(self.ecdf[j], _column_ecdf(col, g.spec.kind))
        self.add_codes(codes)

    def add_codes(self, codes: np.ndarray) -> None:
        """Fold in the cell codes (d, rows) of one chunk."""
        self.n += codes.shape[1]
        self.counts += np.bincount((codes + self.offsets[:-1, None]).ravel(), minlength=len(self.counts))
        if len(codes) > 1:
            dep = np.empty_like(codes)
            for j, m in enumerate(self.maps):
                dep[j] = m[codes[j]]
            for start in range(0, dep.shape[1], PAIR_ROWS):  # keys of a few thousand rows stay in cache
                self.layout.add(self.tables, dep[:, start:start + PAIR_ROWS])

    def result(self) -> CohortStatistics:
        """The statistics so far."""
        return CohortStatistics(self.n, self.counts, self.tables, self.ecdf, self.clipped)


def _column_ecdf(col: pd.Series, kind: str):
    """Distinct values, their counts and the number missing (non-private mode)."""
    missing = int(col.isna().sum())
    vals = col.dropna().to_numpy().astype("datetime64[ns]" if kind == "datetime" else float)
    values, counts = np.unique(vals, return_counts=True)
    return values, counts.astype(float), float(missing)


def chunk_rows(n_columns: int) -> int:
    """Rows per chunk for a table of ``n_columns`` columns."""
    return max(1024, CHUNK_CELLS // max(n_columns, 1))


def frame_statistics(X: pd.DataFrame, cells: tuple[NPGCColumnCells, ...], *, schema=None,
                     exact_values: bool = False) -> CohortStatistics:
    """Statistics of one table, chunk by chunk.

    ``X`` is validated against ``schema`` chunk by chunk when given (raw
    input), otherwise it must already be schema-normalised. The values it
    clips are tallied (:attr:`CohortStatistics.clipped`), never shown.
    """
    builder = StatisticsBuilder(cells, exact_values)
    rows = chunk_rows(X.shape[1])
    for start in range(0, max(len(X), 1), rows):
        chunk = X if len(X) <= rows else X.iloc[start:start + rows]
        columns = chunk
        if schema is not None:  # checked and normalised column by column; no normalised copy of the chunk
            masks: dict = {}
            columns = schema._normalised_columns(chunk, category_codes=True, clipped=masks)
            builder.clipped.add(masks)
        builder.add(columns, len(chunk))
    return builder.result()
