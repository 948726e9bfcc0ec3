"""Every attribute pair's model marginal in one pass over the junction tree (AIM's candidate scores).

With a home clique for every attribute, the message along a tree edge
``i -> j`` stacks ``P(a = v, S_ij)`` for every value ``v`` of every attribute
``a`` homed on ``i``'s side (``S_ij`` the separator): the rows homed in ``i``
come from its marginal, the others are the messages into ``i`` carried
through it, ``P(a, S_ij) = sum P(a, S_ki) mu_i / mu_i(S_ki)`` (``a`` is
independent of ``i``'s other attributes given ``S_ki``). In the home clique of
``b``, the incoming messages carried through the clique give ``P(a, b)`` for
every ``a`` homed elsewhere, the clique's marginal the rest. ``2 (m - 1)``
vectorised carries for a tree of ``m`` cliques (each message is carried
through a clique once, to all of that clique's outputs: upward, then
downward), instead of one traversal per attribute; the stacked rows are processed in chunks of at most about two
million cells. Post-processing of the model: no privacy cost.
"""

from __future__ import annotations

import numpy as np

from skdpsynth.synthesizers._graphical_model import MarkovModel
from skdpsynth.synthesizers._junction_tree import Clique

__all__ = ["all_pair_marginals"]

_CHUNK_CELLS = 2_000_000


def _axes_except(clique: Clique, keep) -> tuple[int, ...]:
    keep = set(keep)
    return tuple(i for i, a in enumerate(clique) if a not in keep)


def _rows_from_marginal(mu: np.ndarray, clique: Clique, a: int, sep: Clique, k_a: int) -> np.ndarray:
    """``P(a = v, sep)`` for every value ``v`` (shape ``(k_a, *sep)``) from a clique marginal holding ``a``."""
    if a in sep:
        m = mu.sum(axis=_axes_except(clique, sep))
        onehot = np.eye(k_a).reshape((k_a,) + tuple(k_a if x == a else 1 for x in sep))
        return onehot * m[None]
    u = tuple(sorted(set(sep) | {a}))
    return np.moveaxis(mu.sum(axis=_axes_except(clique, u)), u.index(a), 0)


class _Pass:
    """The stacked messages of one model (computed on demand, each once)."""

    def __init__(self, model: MarkovModel) -> None:
        tree = model.tree
        self.tree, self.mu = tree, model.marginals
        self.sizes = tree.size_tuple
        self.homed: list[list[int]] = [[] for _ in tree.cliques]
        for a in range(len(self.sizes)):
            h = tree.home((a,))
            if h >= 0:
                self.homed[h].append(a)
        self.messages: dict[tuple[int, int], tuple[list[int], np.ndarray]] = {}
        self.conditionals: dict[tuple[int, Clique], np.ndarray] = {}

    def sep(self, i: int, j: int) -> Clique:
        return tuple(sorted(set(self.tree.cliques[i]) & set(self.tree.cliques[j])))

    def _conditional(self, i: int, sep_in: Clique) -> np.ndarray:
        """``mu_i / mu_i(sep_in)`` (0 where the separator cell is empty)."""
        key = (i, sep_in)
        if key not in self.conditionals:
            cl, mu = self.tree.cliques[i], self.mu[i]
            shape = tuple(self.sizes[a] if a in sep_in else 1 for a in cl)
            below = mu.sum(axis=_axes_except(cl, sep_in)).reshape(shape)
            self.conditionals[key] = np.where(below > 0, mu / np.where(below > 0, below, 1.0), 0.0)
        return self.conditionals[key]

    def carry(self, phi: np.ndarray, i: int, sep_in: Clique, outs: list[Clique]) -> list[np.ndarray]:
        """Rows ``P(a, sep_in)`` carried through clique ``i`` to each clique tuple in ``outs``."""
        cl = self.tree.cliques[i]
        cond = self._conditional(i, sep_in)
        shape = tuple(self.sizes[a] if a in sep_in else 1 for a in cl)
        rows = phi.shape[0]
        results = [np.empty((rows,) + tuple(self.sizes[x] for x in out)) for out in outs]
        step = max(1, _CHUNK_CELLS // max(cond.size, 1))
        axes = [tuple(1 + k for k in _axes_except(cl, out)) for out in outs]
        for lo in range(0, rows, step):
            joint = phi[lo:lo + step].reshape((-1,) + shape) * cond[None]
            for res, ax in zip(results, axes):
                res[lo:lo + step] = joint.sum(axis=ax) if ax else joint
        return results

    def run(self, targets: dict[int, list[int]]) -> dict[tuple[int, int], tuple[list[int], np.ndarray]]:
        """Carry every message once: for clique ``i``, ``(k, out) -> (attributes, rows)``.

        ``out`` is a neighbour ``j`` (rows of ``P(a, S_ij)``, for the message ``i -> j``) or ``-1 - b`` for
        an attribute ``b`` in ``targets[i]`` (rows of ``P(a, b)``). Upward (children first), then downward.
        """
        tree = self.tree
        carried: dict[tuple[int, int, int], tuple[list[int], np.ndarray]] = {}  # (k, i, out)

        def outs_of(i: int, k: int) -> list[int]:
            return [j for j in sorted(tree.neighbours[i]) if j != k] + [-1 - b for b in targets.get(i, [])]

        def carry_in(k: int, i: int) -> None:  # the message k -> i carried through i to all of i's outputs
            attrs, phi = self.message(k, i, carried)
            outs = outs_of(i, k)
            if not attrs or not outs:
                return
            shapes = [self.sep(i, o) if o >= 0 else (-1 - o,) for o in outs]
            for o, table in zip(outs, self.carry(phi, i, self.sep(k, i), shapes)):
                carried[(k, i, o)] = (attrs, table)

        for i in reversed(tree.order):  # upward: children's messages into i
            for c in tree.neighbours[i]:
                if c != tree.parent[i]:
                    carry_in(c, i)
        for i in tree.order:  # downward: the parent's message into i
            if tree.parent[i] >= 0:
                carry_in(tree.parent[i], i)
        return carried

    def message(self, i: int, j: int, carried) -> tuple[list[int], np.ndarray]:
        """(attributes, rows) of the message ``i -> j``: ``P(a = v, S_ij)`` for every ``a`` homed on ``i``'s side."""
        if (i, j) in self.messages:
            return self.messages[(i, j)]
        sep = self.sep(i, j)
        cl, mu = self.tree.cliques[i], self.mu[i]
        attrs, parts = [], []
        for a in self.homed[i]:
            attrs.append(a)
            parts.append(_rows_from_marginal(mu, cl, a, sep, self.sizes[a]))
        for k in sorted(self.tree.neighbours[i] - {j}):
            if (k, i, j) in carried:
                sub_attrs, table = carried[(k, i, j)]
                attrs += sub_attrs
                parts.append(table)
        rows = np.concatenate(parts, axis=0) if parts else np.zeros((0,) + tuple(self.sizes[x] for x in sep))
        self.messages[(i, j)] = (attrs, rows)
        return attrs, rows


def _split_rows(attrs: list[int], table: np.ndarray, sizes) -> dict[int, np.ndarray]:
    out, lo = {}, 0
    for a in attrs:
        out[a] = table[lo:lo + sizes[a]]
        lo += sizes[a]
    return out


def all_pair_marginals(model: MarkovModel, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
    """The model's counts of each pair ``(a, b)`` (shape ``(k_a, k_b)``), whichever cliques hold them.

    Same values as :meth:`MarkovModel.pair_marginals`; attributes in different
    components of a forest are independent (outer product of their marginals).
    """
    if not pairs:
        return {}
    p = _Pass(model)
    tree, sizes = p.tree, p.sizes
    wanted: dict[int, set[int]] = {}  # b -> the a's paired with it
    for a, b in pairs:
        wanted.setdefault(b, set()).add(a)
    # each pair (a, b) is closed in the home clique of b
    targets = {i: [b for b in p.homed[i] if b in wanted] for i in range(len(tree.cliques))}
    carried = p.run(targets)
    got: dict[tuple[int, int], np.ndarray] = {}
    for (_, _i, o), (attrs, table) in carried.items():
        if o < 0:
            b = -1 - o
            for a, rows in _split_rows(attrs, table, sizes).items():
                if a in wanted[b]:
                    got[(a, b)] = rows
    for i, cl in enumerate(tree.cliques):
        for b in targets[i]:
            for a in wanted[b]:
                if (a, b) not in got and a in cl:
                    u = tuple(sorted((a, b)))
                    t = p.mu[i].sum(axis=_axes_except(cl, u))
                    got[(a, b)] = t if a < b else t.T
    out = {}
    for a, b in pairs:
        t = got.get((a, b))
        if t is None:  # another component of the forest
            pa, pb = model.project((a,)), model.project((b,))
            t = np.outer(pa, pb) / max(model.total, 1e-300)
        out[(a, b)] = t
    return out
