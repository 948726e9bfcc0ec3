"""Post-processing for MST: consistent tree model from noisy marginals, and tree sampling.

Everything here works on already-noised measurements (post-processing: no
privacy cost).
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["project_simplex", "combine_one_way", "project_table", "tree_order", "sample_tree"]


def project_simplex(x: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``x`` onto ``{p >= 0, sum(p) = total}`` (sort-based, exact)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return x
    u = np.sort(x)[::-1]
    css = np.cumsum(u) - total
    ind = np.arange(1, x.size + 1)
    cond = u - css / ind > 0
    r = ind[cond][-1]
    theta = css[cond][-1] / r
    return np.maximum(x - theta, 0.0)


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
    p = project_simplex(combined, n_hat)
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
