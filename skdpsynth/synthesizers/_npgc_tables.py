"""NPGC's two-way tables of categorical pairs: the associations a Gaussian copula cannot express.

A Gaussian copula orders every column, so the association of two nominal
columns (a module and its students' gender, a course and its dropout rate) is
forced through a monotone one-parameter link. For tables with more than
``SMALL_TABLE`` columns and at least two categorical columns NPGC measures the
two-way tables of a forest of discrete pairs (categorical columns, and integer
columns with one cell per value), chosen where the fitted copula
is furthest from the data, and samples each child column from its noisy
conditional table given its parent's sampled cell (:class:`TableForest`); the
copula still carries the child's dependence on every other column through the
part of its latent value that the parent does not explain.
"""

from __future__ import annotations

import numpy as np

from skdpsynth.privacy._copula_statistics import PairLayout, PrivateCopulaStatistics
from skdpsynth.privacy._mechanisms import gaussian_sigma, geometric_variance
from skdpsynth.privacy._postprocess import project_to_simplex
from skdpsynth.synthesizers._npgc_bridge import HermiteMoments

__all__ = ["TableForest", "candidate_pairs", "release_tables", "TABLE_SHARE", "MAX_TABLES", "MAX_TABLE_CELLS"]

#: share of the dependence budget spent on the tables when there are candidate pairs
TABLE_SHARE = 1.0 / 3.0
#: share of the tables' budget spent choosing them
TABLE_SELECTION = 0.3
#: most tables measured (a forest over the discrete columns has at most their number minus one edges). On UCI
#: dropout (37 columns, 3,096 rows) at epsilon 1, 12 fits each: TSTR 0.557 with 8, 0.574 with 16, 0.552 with 24
MAX_TABLES = 16
#: largest table (cells, missing cells included) of a candidate pair
MAX_TABLE_CELLS = 400
#: a table's expected L1 noise per cell, in noise sd (E|N(0, 1)| = sqrt(2 / pi)): AIM's penalty of large tables
PENALTY = float(np.sqrt(2.0 / np.pi))
#: raking iterations matching a table to the released marginals of its two columns
_RAKING = 20


def candidate_pairs(discrete: np.ndarray, sizes: np.ndarray, merged: np.ndarray) -> np.ndarray:
    """Pairs (``np.triu_indices`` order) of two discrete columns whose table is small; a mask.

    ``discrete`` marks categorical / boolean columns and integer columns with
    one cell per value (a coded level such as Adult's ``education-num``, whose
    bijection with ``education`` no copula order can express); ``merged``
    marks columns whose dependence cells merge some of their cells (their
    table would not be the columns' own). Both are public (from the schema).
    """
    d = len(discrete)
    iu, ju = np.triu_indices(d, 1)
    ok = np.asarray(discrete, dtype=bool) & ~np.asarray(merged, dtype=bool)
    return ok[iu] & ok[ju] & (sizes[iu] * sizes[ju] <= MAX_TABLE_CELLS)


class TableForest:
    """Children sampled from noisy conditional tables given their parent's cell (post-processing only).

    Parameters
    ----------
    edges : list of (parent, child)
        In sampling order (every parent comes before its children).
    counts : list of ndarray
        The released tables (parent cells x child cells), noisy counts summed over cohorts.
    """

    def __init__(self, edges: list[tuple[int, int]], counts: list[np.ndarray]) -> None:
        self.edges = list(edges)
        self.counts = list(counts)

    def conditionals(self, probabilities: list[np.ndarray], total: float) -> list[np.ndarray]:
        """Cumulative ``P(child | parent)`` of every edge: each table projected onto the simplex of ``total``,
        then raked to the released marginals of its two columns."""
        out = []
        for (p, c), counts in zip(self.edges, self.counts):
            table = project_to_simplex(counts.ravel().astype(float), max(total, 1.0)).reshape(counts.shape)
            table = _rake(table, probabilities[p] * total, probabilities[c] * total)
            rows = table.sum(axis=1, keepdims=True)
            cond = np.where(rows > 0, table / np.where(rows > 0, rows, 1.0), probabilities[c][None, :])
            cum = np.cumsum(cond, axis=1)
            cum[:, -1] = 1.0
            out.append(cum)
        return out


def _rake(table: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Iterative proportional fitting of a non-negative table to row and column totals."""
    t = table + 1e-9 * max(table.sum(), 1.0) / table.size  # every cell reachable
    tol = 1e-9 * max(float(rows.sum()), 1.0)
    for step in range(_RAKING):
        r = t.sum(axis=1)
        if step and np.abs(r - rows).max() <= tol:  # the columns were just matched: both margins hold
            break
        t *= np.where(r > 0, rows / np.where(r > 0, r, 1.0), 0.0)[:, None]
        c = t.sum(axis=0)
        t *= np.where(c > 0, cols / np.where(c > 0, c, 1.0), 0.0)[None, :]
    return t


def copula_table(u_i: np.ndarray, u_j: np.ndarray, r: float) -> np.ndarray:
    """The copula's cell probabilities of a pair, ``sum_k r^k u_ik u_jk'`` (Mehler), clipped and normalised."""
    powers = r ** np.arange(u_i.shape[0])
    t = np.clip((u_i * powers[:, None]).T @ u_j, 0.0, None)
    return t / max(t.sum(), 1e-300)


def release_tables(stats: PrivateCopulaStatistics, layout: PairLayout, candidates: np.ndarray,
                   probs: list[np.ndarray], corr: np.ndarray, n_hat: float, cost: dict | None, *,
                   edges: list[tuple[int, int]] | None = None,
                   ordered: np.ndarray | None = None) -> tuple[list[tuple[int, int]], list[np.ndarray]]:
    """Choose a forest of candidate pairs and release their two-way tables; rho-zCDP (or epsilon-DP).

    Neighbouring relation: add or remove one person (one row).

    *Choice.* Up to ``MAX_TABLES`` edges, one at a time (Kruskal): among the
    candidate pairs joining two trees of the forest so far, the exponential
    mechanism picks one with utility ``|| T_ij - n_hat M_ij ||_1 - sqrt(2 /
    pi) sigma c_ij``, the L1 distance of the exact table from the fitted
    copula's less the table's expected L1 measurement noise (AIM's rule:
    ``c_ij`` cells, ``sigma`` the noise sd of one cell at the measurement's
    cost; ``M_ij``, ``n_hat`` and ``sigma`` are released or public, the
    candidates public). One person moves one cell of ``T_ij`` by one:
    sensitivity 1 (the penalty does not depend on the data;
    :meth:`~skdpsynth.privacy._copula_statistics.PrivateCopulaStatistics.pair_tables`). Each pick costs
    ``TABLE_SELECTION * rho / k`` (the zCDP exponential mechanism; pure
    epsilon-DP with ``epsilon``).

    *Measurement.* The ``k`` chosen tables at once: one person is in one cell
    of each, L2 sensitivity ``sqrt(k)`` (discrete Gaussian) or L1 ``k``
    (geometric), at the rest of ``cost``. When ``edges`` are given (a later
    cohort), nothing is chosen and all of ``cost`` measures their tables.
    ``cost=None``: the non-private mode (exact tables, the largest distances
    chosen; recorded as non-private). ``ordered`` (public) marks the integer
    columns, preferred as the roots of the forest (:func:`_orient`).

    Returns
    -------
    edges : list of (parent, child)
        Oriented, in sampling order.
    noisy : list of ndarray of int64
        The released tables, (parent cells, child cells).
    """
    if cost is None:
        key, total = None, 1.0
    else:
        key, total = ("rho", cost["rho"]) if "rho" in cost else ("epsilon", cost["epsilon"])
    d = len(probs)
    iu, ju = np.triu_indices(d, 1)
    measure = total
    if edges is None:
        n_cat = len(np.unique(np.concatenate([iu[candidates], ju[candidates]])))
        k = min(MAX_TABLES, max(n_cat - 1, 0))
        if k == 0:
            return [], []
        measure = total * (1.0 - TABLE_SELECTION)
        chosen = _choose_forest(stats, layout, candidates, probs, corr, n_hat, k, total * TABLE_SELECTION / k, key,
                                _noise_sd(key, measure, k))
        edges = _orient([(int(iu[p]), int(ju[p])) for p in chosen], probs,
                       np.zeros(d, bool) if ordered is None else ordered)
    tables, where = stats.pair_tables(layout, edges)
    target = f"two-way tables of {len(edges)} discrete column pairs ({tables.size} cells)"
    noisy = tables.measure(**({} if key is None else {key: measure}), target=target + (" (exact)" if key is None
                                                                                         else ""))
    return edges, [noisy[index].reshape(shape) for index, shape in where]


def _noise_sd(key: str | None, cost: float, k: int) -> float:
    """Noise sd of one cell of ``k`` tables measured together at ``cost`` (0 without privacy; public)."""
    if key is None:
        return 0.0
    if key == "rho":
        return gaussian_sigma(float(np.sqrt(k)), cost)
    return float(np.sqrt(geometric_variance(float(k), cost)))


def _choose_forest(stats, layout, candidates, probs, corr, n_hat, k, per_pick, key, sd) -> list[int]:
    """Kruskal with the exponential mechanism: ``k`` candidate pairs joining different trees."""
    d = len(probs)
    iu, ju = np.triu_indices(d, 1)
    cand = np.flatnonzero(candidates)
    tables, where = stats.pair_tables(layout, [(int(iu[p]), int(ju[p])) for p in cand])
    moments = HermiteMoments(probs).cell_coefficients
    models = [n_hat * copula_table(moments[iu[p]][:, :shape[0]], moments[ju[p]][:, :shape[1]], corr[iu[p], ju[p]])
              for p, (_, shape) in zip(cand, where)]
    penalties = np.array([PENALTY * sd * index.size for index, _ in where])
    tree = np.arange(d)  # each column's tree, relabelled as trees merge (d is small)
    chosen = []
    for step in range(k):
        open_ = tree[iu[cand]] != tree[ju[cand]]
        if not open_.any():
            break
        options = np.flatnonzero(open_)
        target = (f"choice of a discrete column pair for a two-way table ({step + 1} of {k}, "
                  f"{len(options)} candidates)")
        pick = tables.select([where[o][0] for o in options], [models[o] for o in options],
                             penalties=penalties[options], **({} if key is None else {key: per_pick}),
                             target=target)  # non-private: the largest distance
        p = cand[options[pick]]
        tree[tree == tree[iu[p]]] = tree[ju[p]]
        chosen.append(int(p))
    return chosen


def _orient(pairs: list[tuple[int, int]], probs: list[np.ndarray], ordered: np.ndarray) -> list[tuple[int, int]]:
    """Orient a forest, parents before children. In each tree the root is an ordered (integer) column if it
    has one, else the column with the most cells: a child keeps only the part of its copula dependence that
    its parent does not explain, and the copula expresses an ordered column's dependence on the other
    columns (an education level's on income) far better than a nominal one's, so the ordered column
    should keep all of it (Adult's ``education`` is then drawn from ``education-num``, not the reverse)."""
    neighbours: dict[int, list[int]] = {}
    for i, j in pairs:
        neighbours.setdefault(i, []).append(j)
        neighbours.setdefault(j, []).append(i)
    seen: set[int] = set()
    out = []
    for start in sorted(neighbours, key=lambda c: (not ordered[c], -len(probs[c]), c)):
        if start in seen:
            continue
        seen.add(start)
        queue = [start]
        while queue:
            node = queue.pop(0)
            for nxt in sorted(neighbours[node]):
                if nxt not in seen:
                    seen.add(nxt)
                    out.append((node, nxt))
                    queue.append(nxt)
    return out
