"""Public grids: map a table onto histogram cells laid out from the schema only.

Every count-based synthesizer (NPGC's marginals, DP-Histogram, DP-Marginals, MST)
measures counts on these cells. Because the cells come from the public schema,
the released cell list itself reveals nothing about the private rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from skdpsynth.privacy._postprocess import project_to_simplex
from skdpsynth.schema import ColumnSpec, TableSchema

__all__ = ["ColumnGrid", "FineCells", "PublicGrid", "decode_fine", "fine_cells", "fine_conditionals",
           "seconds_to_datetime"]

#: sub-bins per coarse bin of the decoding grid (:func:`fine_cells`)
FINE_PER_BIN = 8
#: integer columns with at most this many values are decoded value by value
FINE_MAX_INTEGERS = 256


@dataclass(frozen=True)
class ColumnGrid:
    """Cells of one column: value cells, then one missing cell when nullable.

    Attributes
    ----------
    spec : ColumnSpec
        The column.
    edges : ndarray or None
        Bin edges (numeric / datetime in seconds) for binned columns.
    integer_values : ndarray or None
        One cell per integer when the integer range is small.
    """

    spec: ColumnSpec
    edges: np.ndarray | None
    integer_values: np.ndarray | None

    @property
    def n_value_cells(self) -> int:
        """Number of cells holding values."""
        if self.spec.kind in ("categorical", "boolean"):
            return len(self.spec.categories)
        if self.integer_values is not None:
            return len(self.integer_values)
        return len(self.edges) - 1

    @property
    def n_cells(self) -> int:
        """All cells, including the missing cell."""
        return self.n_value_cells + int(self.spec.nullable)

    @property
    def missing_cell(self) -> int | None:
        """Index of the missing cell (last), or None."""
        return self.n_value_cells if self.spec.nullable else None

    def encode(self, values: pd.Series) -> np.ndarray:
        """Cell index of every value (values must already satisfy the schema)."""
        isna = values.isna().to_numpy()
        codes = np.zeros(len(values), dtype=np.int64)
        kind = self.spec.kind
        if kind in ("categorical", "boolean"):
            lookup = {c: i for i, c in enumerate(self.spec.categories)}
            obj = values.to_numpy(dtype=object)
            codes[~isna] = [lookup[v] for v in obj[~isna]]
        else:
            x = _as_seconds(values) if kind == "datetime" else values.to_numpy(dtype=float)
            if self.integer_values is not None:
                codes[~isna] = np.rint(x[~isna]).astype(np.int64) - int(self.integer_values[0])
            else:
                inner = self.edges[1:-1]
                codes[~isna] = np.searchsorted(inner, x[~isna], side="right")
        if isna.any():
            codes[isna] = self.missing_cell
        return codes

    def decode(self, codes: np.ndarray, rng: np.random.Generator, within: np.ndarray | None = None) -> pd.Series:
        """Values for cell indices; binned cells get a uniform point inside the bin.

        Parameters
        ----------
        codes : ndarray of int
            Cell indices.
        rng : numpy.random.Generator
            For the within-bin position (ignored when ``within`` is given).
        within : ndarray of float in [0, 1), optional
            Position inside each cell (e.g. from a copula's uniform).
        """
        kind = self.spec.kind
        miss = codes == self.missing_cell if self.spec.nullable else np.zeros(len(codes), bool)
        safe = np.where(miss, 0, codes)
        if kind in ("categorical", "boolean"):
            out = np.array(self.spec.categories, dtype=object)[safe]
            out = out.astype(object)
            out[miss] = np.nan
            return pd.Series(out, dtype=object)
        u = rng.random(len(codes)) if within is None else within
        if self.integer_values is not None:
            x = self.integer_values[safe].astype(float)
        else:
            lo, hi = self.edges[safe], self.edges[safe + 1]
            x = lo + u * (hi - lo)
            if kind == "integer":
                x = np.clip(np.floor(x + 0.5 * (hi - lo > 0)), np.ceil(lo), np.floor(hi))
        x[miss] = np.nan
        if kind == "datetime":
            return seconds_to_datetime(x)
        return pd.Series(x)


def seconds_to_datetime(x: np.ndarray) -> pd.Series:
    """Seconds since the epoch (NaN = missing) as a datetime64[ns] Series.

    Converts to nanoseconds directly: pandas' unit cast runs under an over="raise" error state that was
    seen to fail intermittently inside the test suite.
    """
    x = np.asarray(x, dtype=float)
    miss = np.isnan(x)
    out = pd.Series(np.round(np.where(miss, 0.0, x) * 1e9).astype(np.int64).view("datetime64[ns]"))
    out[miss] = pd.NaT
    return out


def _as_seconds(values: pd.Series) -> np.ndarray:
    ts = pd.to_datetime(values).astype("datetime64[ns]")
    out = ts.astype("int64").to_numpy().astype(float) / 1e9
    out[values.isna().to_numpy()] = np.nan
    return out


def _column_grid(spec: ColumnSpec, n_bins: int) -> ColumnGrid:
    if spec.kind in ("categorical", "boolean"):
        return ColumnGrid(spec, None, None)
    lo, hi = spec.numeric_bounds
    if spec.kind == "integer" and hi - lo + 1 <= n_bins:
        return ColumnGrid(spec, None, np.arange(int(lo), int(hi) + 1))
    if hi == lo:
        hi = lo + 1.0
    return ColumnGrid(spec, np.linspace(lo, hi, n_bins + 1), None)


class PublicGrid:
    """Histogram cells for every column of a schema.

    Parameters
    ----------
    schema : TableSchema
        The public domain.
    n_bins : int, default=32
        Equal-width bins for continuous and datetime columns, and for integer
        columns with more than ``n_bins`` values (smaller integer ranges get a
        cell per value).
    """

    def __init__(self, schema: TableSchema, n_bins: int = 32) -> None:
        self.schema = schema
        self.n_bins = n_bins
        self.columns = tuple(_column_grid(spec, n_bins) for spec in schema.columns)

    @property
    def n_cells(self) -> np.ndarray:
        """Cells per column."""
        return np.array([c.n_cells for c in self.columns])

    def encode(self, X: pd.DataFrame) -> np.ndarray:
        """(n_rows, n_columns) cell indices of a schema-validated table."""
        return np.column_stack([g.encode(X[g.spec.name]) for g in self.columns]).astype(np.int64)

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """A table (schema-normalised types) from cell indices."""
        return pd.DataFrame({g.spec.name: g.decode(codes[:, j], rng).to_numpy() for j, g in enumerate(self.columns)})


@dataclass(frozen=True)
class FineCells:
    """A finer public grid inside a binned column's coarse cells, to decode values within their bin.

    Cells are either exact points (every integer of a small integer range, or
    the two bounds) or sub-bins of width ``> 0``; every fine cell lies inside
    one coarse cell of the column's :class:`ColumnGrid`, so drawing a fine
    cell given the coarse cell refines the model's draw. Laid out from the
    schema only.

    Attributes
    ----------
    column : ColumnGrid
        The coarse cells.
    lower, upper : ndarray
        Each fine cell's interval (equal for point cells), in the column's units (seconds for datetimes).
    coarse : ndarray of int
        The coarse cell of each fine cell.
    """

    column: ColumnGrid
    lower: np.ndarray
    upper: np.ndarray
    coarse: np.ndarray

    @property
    def n_cells(self) -> int:
        """Number of fine cells (values only: a missing value has no fine cell)."""
        return len(self.lower)

    def encode(self, values: pd.Series) -> np.ndarray:
        """Fine cell of every non-missing value (-1 for missing)."""
        x = _as_seconds(values) if self.column.spec.kind == "datetime" else values.to_numpy(dtype=float)
        out = np.full(len(x), -1, dtype=np.int64)
        ok = ~np.isnan(x)
        xv = x[ok]
        if np.all(self.lower == self.upper):  # one point per integer
            out[ok] = np.clip(np.rint(xv) - self.lower[0], 0, self.n_cells - 1).astype(np.int64)
            return out
        lo, hi = self.lower[0], self.upper[-1]
        sub = np.searchsorted(self.lower[1:-1], xv, side="right")  # 1-based sub-bin (lower[1] == lo)
        out[ok] = np.where(xv <= lo, 0, np.where(xv >= hi, self.n_cells - 1, sub))
        return out

    def within_weights(self) -> np.ndarray:
        """Prior weight of each fine cell inside its coarse cell: its width (points: equal weights when all points)."""
        width = self.upper - self.lower
        return np.ones(self.n_cells) if np.all(width == 0) else width

    def decode(self, fine: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Values for fine cells: the point itself, or a uniform position inside the sub-bin."""
        lo, hi = self.lower[fine], self.upper[fine]
        x = lo + rng.random(len(fine)) * (hi - lo)
        if self.column.spec.kind == "integer":
            x = np.where(hi > lo, np.clip(np.floor(x + 0.5), np.ceil(lo), np.floor(hi)), lo)
        return x


def fine_cells(column: ColumnGrid, per_bin: int = FINE_PER_BIN, max_integers: int = FINE_MAX_INTEGERS
               ) -> FineCells | None:
    """The decoding grid of a binned column, or None when its coarse cells are already exact values.

    Integer ranges of at most ``max_integers`` values get one point per
    integer; other binned columns get ``per_bin`` equal-width sub-bins per
    coarse bin plus a point cell at each bound (point masses at the bounds,
    e.g. zero amounts, are common).
    """
    if column.edges is None:
        return None
    edges = column.edges
    spec = column.spec
    lo, hi = float(edges[0]), float(edges[-1])
    if spec.kind == "integer" and np.ceil(lo) <= np.floor(hi) and np.floor(hi) - np.ceil(lo) + 1 <= max_integers:
        values = np.arange(np.ceil(lo), np.floor(hi) + 1)
        coarse = np.searchsorted(edges[1:-1], values, side="right")
        return FineCells(column, values, values.copy(), coarse)
    n_bins = len(edges) - 1
    j = np.arange(per_bin) / per_bin
    left = (edges[:-1, None] + (edges[1:] - edges[:-1])[:, None] * j[None, :]).ravel()
    right = np.append(left[1:], hi)
    coarse = np.repeat(np.arange(n_bins), per_bin)
    lower = np.concatenate([[lo], left, [hi]])
    upper = np.concatenate([[lo], right, [hi]])
    return FineCells(column, lower, upper, np.concatenate([[0], coarse, [n_bins - 1]]))


def fine_conditionals(fine: FineCells, noisy: np.ndarray) -> np.ndarray:
    """P(fine cell | its coarse cell) from noisy fine counts (post-processing).

    Each coarse cell's fine counts are projected onto the non-negative simplex
    and normalised; a coarse cell whose counts vanish falls back to the prior
    (:meth:`FineCells.within_weights`, i.e. uniform within the bin). Coarse
    cells with as many fine cells are projected together, one row each.
    """
    noisy = np.asarray(noisy, float)
    out = np.zeros(fine.n_cells)
    prior = fine.within_weights()
    order = np.argsort(fine.coarse, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(fine.coarse[order]) != 0])
    groups = np.split(order, starts[1:])
    for size in sorted({len(g) for g in groups}):
        idx = np.array([g for g in groups if len(g) == size])  # (coarse cells, fine cells of each)
        p = project_to_simplex(noisy[idx])
        empty = p.sum(axis=1) <= 0
        fallback = prior[idx]
        fallback[fallback.sum(axis=1) <= 0] = 1.0
        p[empty] = fallback[empty]
        out[idx] = p / p.sum(axis=1, keepdims=True)
    return out


def decode_fine(fine: FineCells, conditionals: np.ndarray, codes: np.ndarray, rng: np.random.Generator
                ) -> pd.Series:
    """Values for coarse cell codes, drawn through the fine cells ``P(fine | coarse)`` (missing kept)."""
    column = fine.column
    x = np.full(len(codes), np.nan)
    for c in np.unique(codes):
        if c == column.missing_cell:
            continue
        rows = np.flatnonzero(codes == c)
        idx = np.flatnonzero(fine.coarse == c)
        pick = idx[rng.choice(len(idx), size=len(rows), p=conditionals[idx])] if len(idx) > 1 else np.repeat(idx,
                                                                                                          len(rows))
        x[rows] = fine.decode(pick, rng)
    if column.spec.kind == "datetime":
        return seconds_to_datetime(x)
    return pd.Series(x)
