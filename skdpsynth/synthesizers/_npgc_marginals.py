"""NPGC's marginals: every column's histogram in one mechanism, a second measurement, the size estimate."""

from __future__ import annotations

import logging
import math

import numpy as np

from skdpsynth.privacy._copula_statistics import PrivateCopulaStatistics
from skdpsynth.privacy._mechanisms import gaussian_sigma, geometric_variance
from skdpsynth.privacy._postprocess import inverse_variance_mean, project_to_simplex

__all__ = ["measure_histograms", "noisy_marginals", "marginals_again", "size_estimate", "probabilities",
           "pool_rare_cells", "ordered_support", "support_and_tails", "RARE_Z", "SUPPORT_Z"]

logger = logging.getLogger("skdpsynth.synthesizers._npgc")

#: standard deviations below the noisy row count used as the public size ``a`` of the tau query
N_BOUND_Z = 3.0
#: noise standard deviations under which the cells of a categorical column are pooled (MST's and AIM's threshold)
RARE_Z = 3.0
#: noise standard deviations a run of consecutive cells of an ordered column must exceed to count as support
SUPPORT_Z = 3.0


def measure_histograms(stats: PrivateCopulaStatistics, cells, offsets, cost: dict, again: bool = False):
    """All columns' histograms in one mechanism (L2 sensitivity sqrt(d)); returns (noisy, variance per cell)."""
    d = len(cells)
    what = f"histograms of all {d} columns on the public grid ({int(offsets[-1])} cells)"
    if again:
        what = f"second measurement of the {what}: the dependence is out of reach at this size"
    noisy = stats.histograms(offsets).measure(**cost, target=what)
    if "rho" in cost:
        return noisy, gaussian_sigma(math.sqrt(d), cost["rho"]) ** 2  # the discrete Gaussian's variance is <=
    return noisy, geometric_variance(float(d), cost["epsilon"])


def noisy_marginals(stats: PrivateCopulaStatistics, cells, offsets, cost: dict):
    """Noisy integer histograms of all columns in one mechanism; returns (counts, n_hat, a, variance)."""
    noisy, var_cell = measure_histograms(stats, cells, offsets, cost)
    return (noisy, *size_estimate(noisy, cells, offsets, var_cell), var_cell)


def size_estimate(noisy, cells, offsets, var_cell: float) -> tuple[float, int]:
    """``n_hat`` and the public size ``a`` of the tau query from released counts (post-processing)."""
    # every column's noisy histogram sums to n + noise: inverse-variance average
    sums = np.add.reduceat(noisy, offsets[:-1]).astype(float)
    n_hat, var = inverse_variance_mean(sums, cells.astype(float) * var_cell)
    sd = math.sqrt(var)
    a = max(2, math.floor(n_hat - N_BOUND_Z * sd))
    logger.debug("NPGC: noisy n %.1f (sd %.2f), public size of the tau query %d", n_hat, sd, a)
    return max(n_hat, 0.0), a


def marginals_again(stats: PrivateCopulaStatistics, counts, var_cell, cells, offsets, cost):
    """Spend the dependence budget on a second measurement of the marginals; the precision-weighted mean."""
    again, var_again = measure_histograms(stats, cells, offsets, cost, again=True)
    w, w_again = 1.0 / var_cell, 1.0 / var_again
    merged = np.rint((w * counts + w_again * again) / (w + w_again)).astype(np.int64)
    n_hat, _ = size_estimate(merged, cells, offsets, 1.0 / (w + w_again))
    return merged, n_hat, 1.0 / (w + w_again)


def pool_rare_cells(counts: np.ndarray, threshold: float) -> np.ndarray:
    """Noisy counts of a categorical column with its rare cells pooled and shared evenly (post-processing).

    A cell is rare when its noisy count is below ``threshold`` (a few noise
    standard deviations: its own count is not told apart from zero). With
    ``k >= 2`` rare cells each gets their mean: the pooled total carries
    ``sqrt(k)`` times one cell's noise for the people of ``k`` cells, so the
    rare categories keep their share of the column, spread evenly (MST's and
    AIM's rare cell), instead of the simplex projection keeping the few whose
    noise happened to be largest. The sum is unchanged.
    """
    out = np.asarray(counts, dtype=float).copy()
    rare = out < threshold
    if rare.sum() >= 2:
        out[rare] = out[rare].mean()
    return out


def ordered_support(counts: np.ndarray, sd: float, z: float = SUPPORT_Z) -> np.ndarray:
    """Cells of an ordered column that hold people, told from noise at several scales (post-processing).

    Windows of 1, 2, 4, ... consecutive cells are scanned from the finest
    scale up; a window is significant when the noisy counts of its cells not
    yet in the support sum to more than ``z sd sqrt(k)`` (``k`` such cells;
    ``sd``: the public noise sd of one cell), and its cells join the support.
    A few cells holding many people are found at the finest scale, a long
    sparse tail at a coarser one, and a run of empty cells (noise only) almost
    never: so the wide public range of a column (0-100 evaluations when
    nobody has more than 45) does not receive the positive part of its empty
    cells' noise, which the simplex projection alone leaves there.

    Returns
    -------
    ndarray of bool
    """
    y = np.asarray(counts, dtype=float)
    m = len(y)
    support = np.zeros(m, dtype=bool)
    h = 1
    while h <= m:
        rest = np.where(support, 0.0, y)
        free = (~support).astype(float)
        cs, cf = np.concatenate([[0.0], np.cumsum(rest)]), np.concatenate([[0.0], np.cumsum(free)])
        sums, sizes = cs[h:] - cs[:-h], cf[h:] - cf[:-h]
        hit = np.flatnonzero((sizes > 0) & (sums > z * sd * np.sqrt(np.maximum(sizes, 1.0))))
        if hit.size:
            mark = np.zeros(m + 1)
            np.add.at(mark, hit, 1.0)
            np.add.at(mark, hit + h, -1.0)
            support |= np.cumsum(mark)[:m] > 0
        h *= 2
    return support


def support_and_tails(counts: np.ndarray, n_value_cells: int, sd: float, total: float) -> np.ndarray:
    """Noisy counts of an ordered column with its cells outside the detected support replaced (post-processing).

    The support is :func:`ordered_support` of the value cells (the missing
    cell, last, is left as it is). The people the support does not hold
    (``total`` less the support's and the missing cell's noisy counts, when
    positive) are spread beyond the support's two ends as geometric tails
    starting from the level of its end cells (shared between the two sides by
    their noisy sums), so a tail too sparse to be told from noise keeps its
    mass, decaying, instead of being cut or spread flat over the public range.
    The other cells get ``-inf`` (no mass after the projection). A column with
    no significant cell is returned unchanged.
    """
    c = np.asarray(counts, dtype=float)
    y = c[:n_value_cells]
    support = ordered_support(y, sd)
    if not support.any():
        return c
    out = np.where(support, y, -np.inf)
    idx = np.flatnonzero(support)
    lo, hi, m = idx[0], idx[-1], len(y)
    mass = total - max(float(c[n_value_cells:].sum()), 0.0) - float(y[support].sum())
    sides = [(lo, max(float(y[:lo].sum()), 0.0), max(y[lo], 1.0), -1), (m - 1 - hi, max(float(y[hi + 1:].sum()), 0.0),
                                                                       max(y[hi], 1.0), 1)]
    sides = [s for s in sides if s[0] > 0]
    weights = np.array([s[1] for s in sides])
    if weights.sum() <= 0:
        weights = np.array([s[2] for s in sides])
    if mass > 0 and sides and weights.sum() > 0:
        for (length, _, level, step), w in zip(sides, weights / weights.sum()):
            share = mass * w
            if share <= 0:
                continue
            k = np.arange(1, length + 1)
            profile = level * (share / (share + level)) ** k
            profile *= share / profile.sum()
            out[(lo if step < 0 else hi) + step * k] = profile
    return np.concatenate([out, c[n_value_cells:]])


def probabilities(counts: list[np.ndarray], total: float | None) -> list[np.ndarray]:
    """Cell probabilities of every column: exact counts normalised, or noisy counts projected onto the simplex
    of ``total`` (all columns in one projection: shorter columns padded with cells that project to zero)."""
    if total is None:
        return [c / max(c.sum(), 1.0) for c in counts]
    width = max(len(c) for c in counts)
    padded = np.full((len(counts), width), -np.inf)
    for j, c in enumerate(counts):
        padded[j, :len(c)] = c
    padded[np.isneginf(padded)] = -1e300
    out = project_to_simplex(padded, max(total, 1.0)) / max(total, 1.0)
    return [out[j, :len(c)] for j, c in enumerate(counts)]
