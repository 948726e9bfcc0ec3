"""Public grids: map a table onto histogram cells laid out from the schema only.

Every count-based synthesizer (NPGC's marginals, DP-Histogram, DP-Marginals, MST)
measures counts on these cells. Because the cells come from the public schema,
the released cell list itself reveals nothing about the private rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from skdpsynth.schema import ColumnSpec, TableSchema

__all__ = ["ColumnGrid", "PublicGrid", "seconds_to_datetime"]


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
