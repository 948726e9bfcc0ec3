"""Junction trees over discrete attributes: construction, size, growth by one clique (for AIM).

Everything here depends on the public domain sizes and on cliques already
selected (public outputs of a DP selection): no private data, no privacy cost.
Attributes are integers ``0 .. d - 1``; a clique is a sorted tuple of them.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

__all__ = ["JunctionTree", "build_junction_tree", "grow_cells", "grow"]

Clique = tuple[int, ...]


@dataclass
class JunctionTree:
    """A tree of cliques with the running-intersection property, over all ``d`` attributes.

    Attributes
    ----------
    sizes : ndarray of int
        Domain size of every attribute.
    cliques : list of tuple of int
        The tree's cliques (sorted attribute tuples).
    neighbours : list of set of int
        Tree adjacency (indices into ``cliques``).
    parent, order, separators
        Rooted at clique 0: ``parent[i]`` (-1 at the root), a pre-order
        (parents first) and each clique's separator with its parent.
    """

    sizes: np.ndarray
    cliques: list[Clique]
    neighbours: list[set[int]]
    parent: list[int] = field(init=False)
    order: list[int] = field(init=False)
    separators: list[Clique] = field(init=False)

    def __post_init__(self) -> None:
        self._prune()
        c = len(self.cliques)
        self.parent, self.order = [-1] * c, []
        seen = [False] * c
        for start in range(c):
            if seen[start]:
                continue
            seen[start] = True
            queue = deque([start])
            while queue:
                u = queue.popleft()
                self.order.append(u)
                for v in sorted(self.neighbours[u]):
                    if not seen[v]:
                        seen[v] = True
                        self.parent[v] = u
                        queue.append(v)
        self.separators = [() if p < 0 else tuple(sorted(set(cl) & set(self.cliques[p])))
                           for cl, p in zip(self.cliques, self.parent)]
        self.size_tuple = tuple(int(v) for v in self.sizes)
        self.clique_cells = [math.prod(self.size_tuple[a] for a in cl) for cl in self.cliques]
        self.holders = [set() for _ in self.sizes]
        for i, cl in enumerate(self.cliques):
            for a in cl:
                self.holders[a].add(i)

    def _prune(self) -> None:
        """Merge every clique contained in a tree neighbour into it (keeps running intersection)."""
        changed = True
        while changed:
            changed = False
            for i, cl in enumerate(self.cliques):
                for j in self.neighbours[i]:
                    if set(cl) <= set(self.cliques[j]):
                        self._contract(i, j)
                        changed = True
                        break
                if changed:
                    break

    def _contract(self, i: int, j: int) -> None:
        for k in self.neighbours[i] - {j}:
            self.neighbours[k].discard(i)
            self.neighbours[k].add(j)
            self.neighbours[j].add(k)
        self.neighbours[j].discard(i)
        keep = [k for k in range(len(self.cliques)) if k != i]
        index = {old: new for new, old in enumerate(keep)}
        self.cliques = [self.cliques[k] for k in keep]
        self.neighbours = [{index[m] for m in self.neighbours[k]} for k in keep]

    def cells(self) -> int:
        """Number of cells of all clique tables (the model size)."""
        return int(sum(self.clique_cells))

    def home(self, clique: Clique) -> int:
        """Index of the smallest tree clique containing ``clique`` (-1 when none does)."""
        common = set.intersection(*(self.holders[a] for a in clique)) if clique else set(range(len(self.cliques)))
        return min(common, key=lambda i: (self.clique_cells[i], i)) if common else -1

    def paths(self) -> tuple[list[list[int]], list[list[list[int]]]]:
        """Tree distances and paths between every two cliques."""
        c = len(self.cliques)
        dist = [[10**9] * c for _ in range(c)]
        paths: list[list[list[int]]] = [[[] for _ in range(c)] for _ in range(c)]
        for s in range(c):
            dist[s][s] = 0
            paths[s][s] = [s]
            queue = deque([s])
            while queue:
                u = queue.popleft()
                for v in self.neighbours[u]:
                    if dist[s][v] > dist[s][u] + 1:
                        dist[s][v] = dist[s][u] + 1
                        paths[s][v] = paths[s][u] + [v]
                        queue.append(v)
        return dist, paths


def _elimination_cliques(sizes: np.ndarray, cliques: list[Clique]) -> list[Clique]:
    """Cliques of a greedy elimination (smallest resulting table first) of the clique graph."""
    d = len(sizes)
    logs = np.log(np.maximum(np.asarray(sizes, float), 1.0))
    adj: list[set[int]] = [set() for _ in range(d)]
    for cl in cliques:
        for a, b in itertools.combinations(cl, 2):
            adj[a].add(b)
            adj[b].add(a)
    remaining = set(range(d))
    out = []
    while remaining:
        v = min(remaining, key=lambda u: (logs[u] + sum(logs[w] for w in adj[u]), u))
        nb = set(adj[v])
        out.append(tuple(sorted(nb | {v})))
        for a in nb:
            adj[a] |= nb - {a}
            adj[a].discard(v)
        remaining.discard(v)
    return out


def build_junction_tree(sizes: np.ndarray, cliques: list[Clique]) -> JunctionTree:
    """A junction tree whose cliques cover every clique in ``cliques`` (greedy triangulation).

    The maximal elimination cliques joined by a maximum-weight spanning tree
    (weight: separator size) have the running-intersection property.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    elim = sorted(set(_elimination_cliques(sizes, list(cliques))), key=lambda c: (-len(c), c))
    maximal: list[Clique] = []
    for cl in elim:
        if not any(set(cl) <= set(m) for m in maximal):
            maximal.append(cl)
    c = len(maximal)
    edges = sorted((-len(set(maximal[i]) & set(maximal[j])), i, j) for i in range(c) for j in range(i + 1, c))
    root = list(range(c))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    neighbours: list[set[int]] = [set() for _ in range(c)]
    for _, i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            root[ri] = rj
            neighbours[i].add(j)
            neighbours[j].add(i)
    return JunctionTree(sizes, maximal, neighbours)


def _pair_growth(jt: JunctionTree, a: int, b: int, dist: np.ndarray, paths, cells: np.ndarray
                 ) -> tuple[int, dict[int, set[int]]]:
    """Cheapest extra cells to cover the pair ``(a, b)`` by adding ``a`` / ``b`` along the tree path.

    With the path ``p_0 .. p_m`` between the nearest cliques holding ``a`` and
    ``b``, the meeting clique ``p_i`` gets both, ``p_1 .. p_{i-1}`` get ``a``
    and ``p_{i+1} .. p_{m-1}`` get ``b``.
    """
    _, u, w = min((dist[u][w], u, w) for u in jt.holders[a] for w in jt.holders[b])
    path = paths[u][w]
    ka, kb = jt.size_tuple[a], jt.size_tuple[b]
    m = len(path) - 1
    c = [int(cells[i]) for i in path]
    gain_a = [0] + [c[j] * (ka - 1) for j in range(1, m + 1)]  # cost of adding a to p_j
    gain_b = [c[j] * (kb - 1) for j in range(m)] + [0]  # cost of adding b to p_j
    pre_a = list(itertools.accumulate(gain_a))  # a on p_1..p_i
    suf_b = list(itertools.accumulate(gain_b[::-1]))[::-1]  # b on p_i..p_{m-1}
    costs = [pre_a[i] + suf_b[i] + (c[i] * (ka - 1) * (kb - 1) if 1 <= i <= m - 1 else 0) for i in range(m + 1)]
    i = min(range(m + 1), key=costs.__getitem__)
    add: dict[int, set[int]] = {}
    for j in range(1, i + 1):
        add.setdefault(path[j], set()).add(a)
    for j in range(i, m):
        add.setdefault(path[j], set()).add(b)
    return costs[i], add


def _general_growth(jt: JunctionTree, clique: Clique, dist: np.ndarray, paths, cells: np.ndarray
                    ) -> tuple[int, dict[int, set[int]]]:
    """Cheapest extra cells to cover ``clique`` in one tree clique (every clique tried as the meeting point)."""
    holders = {v: sorted(jt.holders[v]) for v in clique}
    best, best_add = None, {}
    for t in range(len(jt.cliques)):
        add: dict[int, set[int]] = {}
        for v, hv in holders.items():
            u = min(hv, key=lambda h: dist[t][h])
            for node in paths[t][u][:-1]:  # every clique from t up to (not including) v's nearest holder
                add.setdefault(node, set()).add(v)
        extra = sum(int(cells[i]) * (math.prod(int(jt.sizes[v]) for v in s) - 1) for i, s in add.items())
        if best is None or extra < best:
            best, best_add = extra, add
    return best, best_add


def grow_cells(jt: JunctionTree, candidates: list[Clique]) -> np.ndarray:
    """Model size (cells) after adding each candidate by :func:`grow` (an upper bound on the best tree)."""
    dist, paths = jt.paths()
    cells = np.array(jt.clique_cells, dtype=np.int64)
    total = int(cells.sum())
    out = np.empty(len(candidates), dtype=np.int64)
    for n, cl in enumerate(candidates):
        if jt.home(cl) >= 0:
            out[n] = total
        elif len(cl) == 2:
            out[n] = total + _pair_growth(jt, cl[0], cl[1], dist, paths, cells)[0]
        else:
            out[n] = total + _general_growth(jt, cl, dist, paths, cells)[0]
    return out


def grow(jt: JunctionTree, clique: Clique) -> JunctionTree:
    """The tree with ``clique`` covered: its attributes added along tree paths to one meeting clique.

    Each added attribute's cliques stay connected (they gain a path next to
    the subtree that held it), so the result is again a junction tree.
    """
    if jt.home(clique) >= 0:
        return jt
    dist, paths = jt.paths()
    cells = np.array(jt.clique_cells, dtype=np.int64)
    grower = _pair_growth if len(clique) == 2 else None
    _, add = grower(jt, clique[0], clique[1], dist, paths, cells) if grower else _general_growth(
        jt, clique, dist, paths, cells)
    cliques = [tuple(sorted(set(cl) | add.get(i, set()))) for i, cl in enumerate(jt.cliques)]
    return JunctionTree(jt.sizes, cliques, [set(n) for n in jt.neighbours])
