"""NPGC's public cells: the layout of every column's histogram, from the schema only."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from skdpsynth._grid import ColumnGrid, _as_seconds, seconds_to_datetime

__all__ = ["NPGCColumnCells", "build_cells"]


@dataclass(frozen=True)
class NPGCColumnCells(ColumnGrid):
    """Public cells of one column, as :class:`ColumnGrid`, plus point cells at the bounds.

    Binned columns (continuous, datetime, wide integer ranges) get one cell for
    values exactly at each bound around the ``n_bins`` equal-width bins: point
    masses at the bounds (zero amounts, values clipped to the public bounds) are
    common. The layout depends on the schema only.
    """

    bound_cells: bool = False

    @property
    def n_value_cells(self) -> int:
        """Number of cells holding values."""
        return ColumnGrid.n_value_cells.fget(self) + (2 if self.bound_cells else 0)

    @cached_property
    def _categories(self) -> pd.Index:
        """The categories as an object index (one hash table, built once per column)."""
        return pd.Index(list(self.spec.categories), dtype=object)

    def encode(self, values: pd.Series) -> np.ndarray:
        """Cell index of every value (vectorised; values must satisfy the schema)."""
        kind = self.spec.kind
        if kind in ("categorical", "boolean"):
            codes = self._categories.get_indexer(values.to_numpy(dtype=object)).astype(np.int64)
        else:
            x = _as_seconds(values) if kind == "datetime" else values.to_numpy(dtype=float)
            isna = np.isnan(x)
            if isna.any():
                codes = np.full(len(x), -1, dtype=np.int64)
                codes[~isna] = self._value_cells(x[~isna])
            else:  # no masking
                codes = self._value_cells(x)
        missing = codes < 0
        if missing.any():
            if self.missing_cell is None:
                raise ValueError(f"column {self.spec.name!r} has missing values but is not nullable.")
            codes[missing] = self.missing_cell
        return codes

    def _value_cells(self, x: np.ndarray) -> np.ndarray:
        """Cell index of every (non-missing) number."""
        if self.integer_values is not None:
            return np.rint(x).astype(np.int64) - int(self.integer_values[0])
        c = self._bins(x)
        if self.bound_cells:  # the point cells at the bounds first and last
            c += 1
            c[x <= self.edges[0]] = 0
            c[x >= self.edges[-1]] = len(self.edges)
        return c

    @cached_property
    def _bin_bounds(self) -> np.ndarray:
        """Lower bound of every bin for :meth:`_bins`, the first -inf, then +inf."""
        return np.concatenate([[-np.inf], self.edges[1:-1], [np.inf]])

    def _bins(self, x: np.ndarray) -> np.ndarray:
        """``np.searchsorted(edges[1:-1], x, side="right")``, faster: the bin of equal-width edges, checked
        against the edges themselves (the few values a rounding put in a neighbour are searched)."""
        n = len(self.edges) - 1
        guess = (x - self.edges[0]) * (n / (self.edges[-1] - self.edges[0]))
        np.clip(guess, 0, n - 1, out=guess)
        c = guess.astype(np.int64)
        bounds = self._bin_bounds
        wrong = np.flatnonzero((bounds[c] > x) | (bounds[1:][c] <= x))
        if wrong.size:
            c[wrong] = np.searchsorted(self.edges[1:-1], x[wrong], side="right")
        return c

    def decode(self, codes: np.ndarray, rng: np.random.Generator, within: np.ndarray | None = None) -> pd.Series:
        """Values for cell indices (see :meth:`ColumnGrid.decode`); point cells give the bound itself."""
        if not self.bound_cells:
            return ColumnGrid.decode(self, codes, rng, within)
        n_bins = len(self.edges) - 1
        codes = np.asarray(codes)
        miss = codes == self.missing_cell if self.spec.nullable else np.zeros(len(codes), bool)
        at_lo, at_hi = codes == 0, codes == n_bins + 1
        inner = np.clip(codes - 1, 0, n_bins - 1)
        u = rng.random(len(codes)) if within is None else within
        lo, hi = self.edges[inner], self.edges[inner + 1]
        x = lo + u * (hi - lo)
        if self.spec.kind == "integer":
            x = np.clip(np.floor(x + 0.5 * (hi - lo > 0)), np.ceil(lo), np.floor(hi))
        x = np.where(at_lo, self.edges[0], np.where(at_hi, self.edges[-1], x))
        x[miss] = np.nan
        if self.spec.kind == "datetime":
            return seconds_to_datetime(x)
        return pd.Series(x)


def build_cells(schema, n_bins: int, max_integer_cells: int) -> tuple[NPGCColumnCells, ...]:
    """The public cell layout of every column of ``schema`` (nothing is read from data)."""
    cells = []
    for spec in schema.columns:
        if spec.kind in ("categorical", "boolean"):
            cells.append(NPGCColumnCells(spec, None, None))
            continue
        lo, hi = spec.numeric_bounds
        if spec.kind == "integer" and hi - lo + 1 <= max(max_integer_cells, n_bins):
            cells.append(NPGCColumnCells(spec, None, np.arange(int(lo), int(hi) + 1)))
            continue
        if hi == lo:
            hi = lo + 1.0
        cells.append(NPGCColumnCells(spec, np.linspace(lo, hi, n_bins + 1), None, bound_cells=True))
    return tuple(cells)
