"""Pieces shared by the small GAN synthesizers (DP-CTGAN, PATE-GAN).

The data representation comes from the public grid only (no data-dependent
normalisation such as CTGAN's per-column Gaussian mixtures): every column is a
one-hot block over its public cells (missing cell included) and, for binned
numeric columns, one more value in [0, 1], the position inside the bin
(a public-grid analogue of CTGAN's mode-specific normalisation).

The torch networks are in :mod:`._gan_nets`, so that this module (and the
synthesizers' classes) import without the ``deep`` extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd

from skdpsynth._grid import PublicGrid
from skdpsynth.utils._param_validation import Interval

__all__ = ["GridEncoder", "check_hidden_dims", "progress", "GAN_CONSTRAINTS", "POSITIVE_INT", "POSITIVE_REAL"]

POSITIVE_INT = [Interval(Integral, 1, None, closed="left")]
POSITIVE_REAL = [Interval(Real, 0, None, closed="neither")]
#: parameter constraints shared by DP-CTGAN and PATE-GAN
GAN_CONSTRAINTS: dict = {
    "n_bins": POSITIVE_INT,
    "noise_dim": POSITIVE_INT,
    "hidden_dims": [tuple, list],
    "learning_rate": POSITIVE_REAL,
    "verbose": ["verbose"],
}


@dataclass(frozen=True)
class _Block:
    start: int
    n_cells: int
    offset: int | None  # column of the within-bin position, or None


class GridEncoder:
    """Encode a schema-normalised table as one-hot cells + within-bin positions, and back.

    Parameters
    ----------
    grid : PublicGrid
        The public cells.
    """

    def __init__(self, grid: PublicGrid) -> None:
        self.grid = grid
        blocks, pos = [], 0
        for g in grid.columns:
            has_offset = g.edges is not None and g.spec.kind in ("continuous", "integer", "datetime")
            blocks.append(_Block(pos, g.n_cells, pos + g.n_cells if has_offset else None))
            pos += g.n_cells + int(has_offset)
        self.blocks = tuple(blocks)
        self.dim = pos

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        """(n, dim) float32 matrix."""
        codes = self.grid.encode(X)
        out = np.zeros((len(X), self.dim), dtype=np.float32)
        rows = np.arange(len(X))
        for j, (g, b) in enumerate(zip(self.grid.columns, self.blocks)):
            out[rows, b.start + codes[:, j]] = 1.0
            if b.offset is not None:
                col = X[g.spec.name]
                if g.spec.kind == "datetime":
                    x = pd.to_datetime(col).astype("datetime64[ns]").astype("int64").to_numpy() / 1e9
                else:
                    x = col.to_numpy(dtype=float)
                cell = np.minimum(codes[:, j], len(g.edges) - 2)
                lo, hi = g.edges[cell], g.edges[cell + 1]
                pos = np.where(np.isnan(x), 0.5, (x - lo) / np.where(hi > lo, hi - lo, 1.0))
                out[:, b.offset] = np.clip(pos, 0.0, 1.0)
        return out

    def inverse(self, raw: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Table from generator outputs (per-block probabilities and positions); cells drawn from the probabilities."""
        cols = {}
        for g, b in zip(self.grid.columns, self.blocks):
            p = np.clip(raw[:, b.start:b.start + b.n_cells].astype(float), 1e-12, None)
            p = p / p.sum(axis=1, keepdims=True)
            cdf = np.cumsum(p, axis=1)
            codes = np.minimum((rng.random(len(raw))[:, None] > cdf).sum(axis=1), b.n_cells - 1)
            within = None
            if b.offset is not None:
                within = np.clip(raw[:, b.offset].astype(float), 0.0, 1.0 - 1e-9)
            cols[g.spec.name] = g.decode(codes, rng, within=within).to_numpy()
        return pd.DataFrame(cols)


def check_hidden_dims(hidden_dims) -> None:
    """Every hidden layer width must be a positive integer (the type is checked by the parameter constraints)."""
    if not all(isinstance(h, (int, np.integer)) and not isinstance(h, bool) and h > 0 for h in hidden_dims):
        raise ValueError(f"hidden_dims must be a tuple of positive integers, got {hidden_dims!r}.")


def progress(iterable, verbose: bool | int, desc: str, total: int | None = None):
    """``iterable`` wrapped in a tqdm progress bar when ``verbose`` (as CAPS shows its training)."""
    if verbose:
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc, total=total, leave=False)
    return iterable
