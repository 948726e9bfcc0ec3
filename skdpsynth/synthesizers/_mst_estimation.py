"""Post-processing for MST: consistent tree model from noisy marginals, and tree sampling.

Everything here works on already-noised measurements (post-processing: no
privacy cost).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from skdpsynth.privacy import project_to_simplex

__all__ = ["combine_one_way", "estimate_tree_model", "project_table", "tree_order", "sample_tree"]


def combine_one_way(y: np.ndarray, var: np.ndarray, others: list[tuple[np.ndarray, float]], n_hat: float
                    ) -> np.ndarray:
    """Probabilities of one column from its own noisy marginal and those implied by its edges.

    Inverse-variance weighted mean per cell (exact measurements, variance 0,
    win outright), then the least-squares projection onto non-negative counts
    summing to ``n_hat``, normalised.

    Parameters
    ----------
    y, var : ndarray
        The column's own noisy counts and their per-cell variances.
    others : list of (counts, variance)
        Margins of the noisy 2-way tables touching this column (scalar variance per cell).
    n_hat : float
        Estimated number of people.
    """
    ests = [(np.asarray(y, float), np.broadcast_to(np.asarray(var, float), np.shape(y)))]
    ests += [(np.asarray(m, float), np.full(np.shape(y), float(v))) for m, v in others]
    values = np.stack([e[0] for e in ests])
    variances = np.stack([e[1] for e in ests])
    if np.all(variances <= 0):  # non-private: every estimate is exact
        combined = values[0]
    else:
        w = 1.0 / np.maximum(variances, 1e-12)
        combined = (values * w).sum(0) / w.sum(0)
    p = project_to_simplex(combined, n_hat)
    s = p.sum()
    return p / s if s > 0 else np.full(len(p), 1.0 / len(p))


def _affine(m: np.ndarray, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Orthogonal projection onto tables with row sums ``r`` and column sums ``c`` (``sum r == sum c``)."""
    a, b = m.shape
    dr = r - m.sum(axis=1)
    dc = c - m.sum(axis=0)
    s = dr.sum()
    return m + dr[:, None] / b + dc[None, :] / a - s / (a * b)


def project_table(table: np.ndarray, r: np.ndarray, c: np.ndarray, *, n_iter: int = 500, tol: float = 1e-6
                  ) -> np.ndarray:
    """Least-squares projection of a noisy 2-way table onto non-negative tables with margins ``r``, ``c``.

    Dykstra's alternating projections between the affine set of tables with
    the given margins and the non-negative orthant; converges to the exact
    Euclidean projection onto their intersection (the transportation polytope).

    Parameters
    ----------
    table : ndarray of shape (a, b)
        Noisy counts.
    r, c : ndarray
        Target row and column sums (same total).
    """
    r = np.asarray(r, float)
    c = np.asarray(c, float) * (r.sum() / max(np.asarray(c, float).sum(), 1e-300))
    x = np.asarray(table, float).copy()
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    scale = max(r.sum(), 1.0)
    for _ in range(n_iter):
        z = _affine(x + p, r, c)
        p = x + p - z
        x_new = np.maximum(z + q, 0.0)
        q = z + q - x_new
        delta = np.abs(x_new - x).sum()
        x = x_new
        if delta <= tol * scale:
            break
    # tidy: a final proportional fit so the margins hold (the LS solution is already within tol)
    for _ in range(20):
        rs = x.sum(axis=1)
        x = x * np.where(rs > 0, r / np.where(rs > 0, rs, 1), 0)[:, None]
        cs = x.sum(axis=0)
        x = x * np.where(cs > 0, c / np.where(cs > 0, cs, 1), 0)[None, :]
    return x


def tree_order(d: int, edges: list[tuple[int, int]]) -> tuple[list[int], list[tuple[int, int]]]:
    """Roots (one per component) and (parent, child) pairs in breadth-first order."""
    adj: dict[int, list[int]] = {j: [] for j in range(d)}
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    seen = np.zeros(d, bool)
    roots, pairs = [], []
    for start in range(d):
        if seen[start]:
            continue
        roots.append(start)
        seen[start] = True
        queue = deque([start])
        while queue:
            u = queue.popleft()
            for v in sorted(adj[u]):
                if not seen[v]:
                    seen[v] = True
                    pairs.append((u, v))
                    queue.append(v)
    return roots, pairs


def sample_tree(n: int, order: tuple[list[int], list[tuple[int, int]]], one_way: list[np.ndarray],
                conditionals: dict[tuple[int, int], np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` rows of compressed cell codes: roots from their marginals, children given parents."""
    roots, pairs = order
    codes = np.zeros((n, len(one_way)), dtype=np.int64)
    for r in roots:
        codes[:, r] = rng.choice(len(one_way[r]), size=n, p=one_way[r])
    for parent, child in pairs:
        cdf = np.cumsum(conditionals[(parent, child)], axis=1)
        u = rng.random(n)
        rows = cdf[codes[:, parent]]
        codes[:, child] = np.minimum((u[:, None] > rows).sum(axis=1), cdf.shape[1] - 1)
    return codes


def _inverse_variance_mean(values: list[float], variances: list[float]) -> float:
    """Inverse-variance weighted mean (exact values, variance 0, win outright), at least 1."""
    values, variances = np.asarray(values, float), np.asarray(variances, float)
    exact = variances <= 0
    if exact.any():
        return max(float(values[exact].mean()), 1.0)
    return max(float(np.sum(values / variances) / np.sum(1.0 / variances)), 1.0)


def estimate_tree_model(one_way: list[np.ndarray], one_way_var: list[np.ndarray],
                        two_way: dict[tuple[int, int], np.ndarray], two_way_var: dict[tuple[int, int], float]
                        ) -> tuple[float, list[np.ndarray], tuple[list[int], list[tuple[int, int]]], dict]:
    """A consistent tree model from noisy measurements on compressed cells (post-processing).

    The number of people is the inverse-variance mean of every measurement's
    total; each column's probabilities combine its own marginal with the
    margins of its edges (:func:`combine_one_way`); each edge's table is
    projected onto non-negative tables with those margins
    (:func:`project_table`) and turned into ``P(child | parent)``.

    Parameters
    ----------
    one_way : list of ndarray
        Noisy counts of each column on its compressed cells.
    one_way_var : list of ndarray
        Their per-cell variances (0 for exact counts).
    two_way : dict of (int, int) to ndarray
        Noisy table of each tree edge ``(a, b)`` (rows: cells of ``a``).
    two_way_var : dict of (int, int) to float
        Per-cell variance of each table.

    Returns
    -------
    n_hat : float
        Estimated number of people.
    probabilities : list of ndarray
        Consistent 1-way probabilities.
    order : (list of int, list of (int, int))
        Roots and (parent, child) pairs in breadth-first order (:func:`tree_order`).
    conditionals : dict of (int, int) to ndarray
        ``P(child | parent)``, one row per parent cell.
    """
    d = len(one_way)
    from_edges: dict[int, list] = {j: [] for j in range(d)}
    totals = [float(np.sum(y)) for y in one_way]
    variances = [float(np.sum(v)) for v in one_way_var]
    for (a, b), table in two_way.items():
        v = two_way_var[(a, b)]
        from_edges[a].append((table.sum(axis=1), v * table.shape[1]))
        from_edges[b].append((table.sum(axis=0), v * table.shape[0]))
        totals.append(float(table.sum()))
        variances.append(v * table.size)
    n_hat = _inverse_variance_mean(totals, variances)
    probs = [combine_one_way(one_way[j], one_way_var[j], from_edges[j], n_hat) for j in range(d)]
    order = tree_order(d, list(two_way))
    conditionals = {}
    for parent, child in order[1]:
        table = two_way[(parent, child)] if (parent, child) in two_way else two_way[(child, parent)].T
        fitted = project_table(table, n_hat * probs[parent], n_hat * probs[child])
        rows = fitted.sum(axis=1, keepdims=True)
        cond = np.where(rows > 0, fitted / np.where(rows > 0, rows, 1.0), probs[child][None, :])
        conditionals[(parent, child)] = cond / cond.sum(axis=1, keepdims=True)
    return n_hat, probs, order, conditionals
