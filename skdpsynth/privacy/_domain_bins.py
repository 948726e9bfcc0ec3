"""The public, scale-free binning of the DP domain estimate, and the post-processing of its noisy counts.

Nothing here reads private data except :meth:`ScaleFreeBins.encode` (which only
maps values to bins laid out in advance); everything else works on noisy counts
released by a mechanism, so it is post-processing.

The numeric binning does not depend on the data or on a guessed scale: every
sign and magnitude has its bins. Zero and the small integers (``|x| < 16``) are
bins of their own (``[i, i + 1)`` holds the integer ``i`` exactly), below 1 the
bins are powers of two down to ``2^-30`` (not for integer columns), and from 16 up to about ``1.1e15`` they
are half-octaves (``[16 * 2^(j/2), 16 * 2^((j+1)/2))``); two overflow bins catch
the rest. Datetimes use one bin per calendar quarter from 1900 to 2100.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm

__all__ = ["ScaleFreeBins", "NUMERIC_BINS", "INTEGER_BINS", "DATETIME_BINS", "supported_bins", "anchored",
           "quantile_bins", "widen_bin"]

_SMALL = 16
_POSITIVE = np.concatenate([2.0 ** -np.arange(30, 0, -1), np.arange(1.0, _SMALL + 1),
                            _SMALL * 2.0 ** (np.arange(1, 93) / 2)])


@dataclass(frozen=True)
class ScaleFreeBins:
    """Bins ``[edges[i-1], edges[i])`` (bin 0 and the last bin are open-ended); fixed before any data is seen.

    Attributes
    ----------
    edges : ndarray
        Sorted public edges (seconds since the epoch for datetimes).
    kind : str
        ``"numeric"`` or ``"datetime"``.
    levels : int
        Coarsest level of the multi-resolution detection: groups of ``2^levels`` adjacent bins.
    spread : int
        Bins a typical column's mass spreads over (a few half-octaves, small integers or quarters): sizes
        how many people the estimate needs before it spends anything.
    """

    edges: np.ndarray
    kind: str
    levels: int = 5
    spread: int = 4

    @property
    def n_bins(self) -> int:
        """Number of value bins (the missing cell is not counted)."""
        return len(self.edges) + 1

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Bin of every (finite) value."""
        return np.searchsorted(self.edges, values, side="right")

    def left(self, i: int) -> float:
        """Lower edge of bin ``i`` (the lowest public edge for the open-ended bin 0)."""
        return float(self.edges[max(i - 1, 0)])

    def right(self, i: int) -> float:
        """Upper edge of bin ``i`` (the highest public edge for the open-ended last bin)."""
        return float(self.edges[min(i, len(self.edges) - 1)])

    def bounds(self, lo: int, hi: int, integer: bool) -> tuple[float, float]:
        """Value bounds covering bins ``lo .. hi`` (integers: the whole numbers those bins hold)."""
        a, b = self.left(lo), self.right(hi)
        if integer:
            return float(math.ceil(a)), float(max(math.ceil(b) - 1, math.ceil(a)))
        return a, b

    def centre(self, i: int, integer: bool) -> float:
        """A representative value of bin ``i`` (for fill values)."""
        a, b = self.left(i), self.right(i)
        value = a if integer or b - a <= 1 else (a + b) / 2
        return float(math.ceil(value)) if integer else value


NUMERIC_BINS = ScaleFreeBins(np.concatenate([-_POSITIVE[::-1], [0.0], _POSITIVE]), "numeric", levels=5)
#: integer columns: the same without the bins below 1, which hold no integer
INTEGER_BINS = ScaleFreeBins(np.concatenate([-_POSITIVE[_POSITIVE >= 1][::-1], [0.0], _POSITIVE[_POSITIVE >= 1]]),
                             "numeric", levels=5)
DATETIME_BINS = ScaleFreeBins(pd.date_range("1900-01-01", "2100-01-01", freq="QS").as_unit("s").asi8.astype(float),
                              "datetime", levels=6, spread=4)


def _window_sums(counts: np.ndarray, size: int) -> np.ndarray:
    """Sums over every window of ``size`` adjacent bins (window ``i`` = bins ``i .. i + size - 1``)."""
    c = np.concatenate([[0.0], np.cumsum(counts)])
    return c[size:] - c[:-size] if size <= len(counts) else c[-1:] - c[:1]


def supported_bins(noisy: np.ndarray, cell_sd: float, first_threshold: float, fp: float,
                   levels: int = 5) -> np.ndarray:
    """Bins whose noisy mass is real with high probability, at several resolutions (post-processing).

    A bin is supported when its noisy count exceeds ``first_threshold`` (the
    mechanism's tail at false-positive rate ``fp``), or when, in a window of
    ``2^L`` adjacent bins (``L = 1 .. levels``, fine to coarse), the
    bins not yet supported hold together more than ``z sd sqrt(m)`` noisy
    people (``m`` such bins; normal approximation): mass spread thinly over
    many bins is found, and mass already explained is not counted twice.

    Parameters
    ----------
    noisy : ndarray
        Noisy counts of one column's value bins.
    cell_sd : float
        Standard deviation of the noise of one cell.
    first_threshold : float
        Threshold of a single bin.
    fp : float
        False-positive rate per test.
    levels : int
        Coarsest level (groups of ``2^levels`` bins).

    Returns
    -------
    ndarray of bool
    """
    support = noisy >= first_threshold
    z = norm.isf(fp)
    for level in range(1, levels + 1):
        size = 2**level
        free = ~support
        residual = _window_sums(np.where(free, noisy, 0.0), size)
        m = _window_sums(free.astype(float), size)
        hits = np.flatnonzero((m > 0) & (residual >= z * cell_sd * np.sqrt(np.maximum(m, 1.0))))
        for start in hits:
            if not support[start: start + size].all():
                support[_localise(np.where(free, noisy, 0.0), free, start, size, cell_sd)] = True
    return _grow(support, noisy, cell_sd)


def _localise(noisy: np.ndarray, free: np.ndarray, start: int, size: int, cell_sd: float) -> list[int]:
    """The free bins of a window that hold its mass: the contiguous range from its 2% to its 98% (noisy) point.

    A wide window found because a few of its bins hold people must not support
    the far end of the window, which holds noise only.
    """
    stop = min(start + size, len(noisy))
    cells = np.where(free[start:stop], noisy[start:stop], 0.0)
    cum = np.cumsum(cells)
    total = cum[-1]
    if total <= 0:
        return []
    a = int(np.searchsorted(cum, 0.02 * total, side="left"))
    b = int(np.searchsorted(cum, 0.98 * total, side="left"))
    return [start + i for i in range(a, min(b, len(cells) - 1) + 1) if free[start + i]]


#: a bin (or 2 bins) next to the support joins it above this many noise sds: real mass is mostly
#: contiguous, and one bin too many only widens a bound by a bin (a false positive far away would be nonsense)
Z_GROW = 3.0


def _grow(support: np.ndarray, noisy: np.ndarray, cell_sd: float) -> np.ndarray:
    """Extend every run of supported bins outwards while the next 1 or 2 bins hold real-looking mass."""
    support = support.copy()
    n = len(noisy)
    for step in (-1, 1):
        edges = np.flatnonzero(support & ~np.roll(support, -step)) if step == 1 else \
            np.flatnonzero(support & ~np.roll(support, 1))
        for start in edges:
            i = start
            while True:
                grown = False
                for m in (1, 2):
                    block = [i + step * j for j in range(1, m + 1) if 0 <= i + step * j < n]
                    if len(block) < m or support[block].any():
                        break
                    if noisy[block].sum() >= Z_GROW * cell_sd * np.sqrt(m):
                        support[block] = True
                        i, grown = block[-1], True
                        break
                if not grown:
                    break
    return support


#: a run of supported bins away from the bulk is kept only with this many noise sds of evidence (else the
#: independent check of the mass beyond the bounds must bring it back): one noisy bin far away is a nonsense bound
Z_ISOLATED = 6.0
#: runs of supported bins this close (in bins) count as one
GAP = 2


def anchored(support: np.ndarray, noisy: np.ndarray, cell_sd: float) -> np.ndarray:
    """``support`` less the runs that are weak and apart from the bulk (the run holding the median mass)."""
    idx = np.flatnonzero(support)
    if not len(idx):
        return support
    runs = np.split(idx, np.flatnonzero(np.diff(idx) > GAP + 1) + 1)
    mass = [float(np.clip(noisy[r], 0, None).sum()) for r in runs]
    total = sum(mass)
    if total <= 0:
        return support
    median_run = int(np.searchsorted(np.cumsum(mass), total / 2))
    out = np.zeros_like(support)
    for i, r in enumerate(runs):
        strong = noisy[r].sum() >= Z_ISOLATED * cell_sd * np.sqrt(len(r))
        if i == median_run or strong:
            out[r] = True
    return out


def quantile_bins(denoised: np.ndarray, q: tuple[float, float]) -> tuple[int, int] | None:
    """(first, last) bin holding the ``q`` quantiles of the denoised counts, or None when there is no mass."""
    total = denoised.sum()
    if total <= 0:
        return None
    cdf = np.cumsum(denoised) / total
    lo = int(np.searchsorted(cdf, q[0], side="right"))
    hi = int(np.searchsorted(cdf, q[1], side="left"))
    nonzero = np.flatnonzero(denoised)
    lo, hi = max(lo, int(nonzero[0])), min(hi, int(nonzero[-1]))
    return min(lo, hi), max(lo, hi)


def widen_bin(noisy: np.ndarray, start: int, step: int, cell_sd: float, mass: float) -> int:
    """The bin to widen a bound to when a noisy check finds ``mass`` people beyond bin ``start`` (post-processing).

    Scans outwards (``step`` = -1 below, +1 above) for the nearest bin holding
    a real share of that mass: at least a quarter of it, and more noise sds
    the further it is (``z_j`` with tail ``0.001 / j`` at the ``j``-th bin, so
    a noisy bin far away is rarely taken: a nonsense bound). From there the
    contiguous bins above :data:`Z_GROW` sds join. Without such a bin, moves 4
    bins out (a factor 4 on the magnitude scale).
    """
    idx = np.arange(start + step, len(noisy) if step > 0 else -1, step)
    if not len(idx):
        return start
    need = np.maximum(norm.isf(0.001 / np.arange(1, len(idx) + 1)) * cell_sd, 0.25 * mass)
    hits = np.flatnonzero(noisy[idx] >= need)
    if not len(hits):
        return int(idx[min(3, len(idx) - 1)])
    j = int(hits[0])
    while j + 1 < len(idx) and noisy[idx[j + 1]] >= Z_GROW * cell_sd:
        j += 1
    return int(idx[j])
