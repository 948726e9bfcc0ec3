"""MST (McKenna, Miklau & Sheldon 2021): noisy 1- and 2-way marginals on a DP maximum spanning tree.

A clean numpy implementation (no private-pgm / JAX): the graphical model is a
tree, so a consistent model is estimated by least squares on the marginals the
tree needs (no junction-tree inference), and sampling runs root to leaves.
"""

from __future__ import annotations

import math

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._mechanisms import gaussian_mechanism
from skdpsynth.synthesizers._mst_estimation import (
    combine_one_way,
    project_table,
    sample_tree,
    tree_order,
)

__all__ = ["MSTSynthesizer"]


class MSTSynthesizer(BaseTabularSynthesizer):
    """Maximum-spanning-tree synthesizer (McKenna, Miklau & Sheldon 2021), zCDP.

    1. Measure every 1-way marginal on the public grid with Gaussian noise
       (``rho / 3``); merge each column's cells whose noisy count is below
       ``3 sigma`` into one "rare" cell (as MST's domain compression).
    2. Select ``d - 1`` pairs forming a spanning tree: Kruskal's algorithm where
       each step draws, by the exponential mechanism (``rho / 3`` over the
       steps), a pair joining two components, scored by the L1 distance between
       the pair's exact 2-way counts and the independent estimate from the
       noisy 1-way marginals.
    3. Measure the selected 2-way marginals with Gaussian noise (``rho / 3``).
    4. Estimate a consistent tree model: inverse-variance combination of every
       estimate of each 1-way marginal, projected onto the non-negative
       simplex; each edge's noisy table projected (least squares, Dykstra) onto
       non-negative tables with those 1-way margins. Sample the root, then
       every child from its conditional given its parent.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort. ``None`` = exact marginals and an exact maximum
        spanning tree (not private).
    delta : float, default=1e-9
        The zCDP spend is converted to (epsilon, delta) at this delta (minus
        the domain's share when ``schema`` is None).
    schema : TableSchema, dict, path or None, default=None
        Public domain; estimated under DP with ``domain_share`` of the budget when None.
    n_bins : int, default=32
        Bins per continuous column (integer ranges of at most ``n_bins`` values
        get one cell per value).
    compress : bool, default=True
        Merge cells with noisy 1-way count below ``3 sigma`` (decoded uniformly
        among the merged cells).
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose.
    random_state : int, Generator or None, default=None
        Seeds all randomness.

    Attributes
    ----------
    grid_ : PublicGrid
        Cells of every column.
    edges_ : list of (int, int)
        The selected tree (column indices).
    one_way_ : list of ndarray
        Consistent 1-way probabilities on the compressed cells.
    conditionals_ : dict
        ``{(parent, child): P(child | parent)}`` on compressed cells.
    rho_ : float
        zCDP spent by the model in the first cohort.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). With ``rho`` the
    zCDP budget left after the domain (converted from ``epsilon`` at ``delta``):

    * 1-way marginals: each histogram has L2 sensitivity 1; each of the ``d``
      gets ``rho / (3 d)`` (Gaussian, ``sigma = sqrt(3 d / (2 rho))``).
    * Selection: the score of a pair, ``||M_ij(D) - M_ij(est)||_1`` with
      ``est`` built from the already released noisy 1-way marginals, changes by
      at most 1 when one person is added or removed (one cell of ``M_ij(D)``
      moves by 1), so the utility sensitivity is 1. Each of the ``d - 1``
      exponential-mechanism steps uses ``eps_s = sqrt(8 (rho/3) / (d - 1))``
      and is charged ``eps_s^2 / 8`` zCDP (bounded-range analysis, Cesar &
      Rogers 2021). When ``d <= 2`` there is one possible tree and no selection;
      the budget is then split in halves between the two measurements (all of
      it goes to the marginal when ``d = 1``).
    * 2-way marginals: L2 sensitivity 1 each; each of the ``d - 1`` gets
      ``rho / (3 (d - 1))``.

    Everything composes by adding rho; the total is converted once (Canonne,
    Kamath & Steinke 2020). Estimation and sampling are post-processing.
    ``partial_fit`` keeps the first cohort's tree and compression and measures
    the same 1-way and 2-way marginals on the new cohort with half of its budget
    each; counts of different cohorts add up (each cohort pays its own budget).
    """

    def __init__(self, *, epsilon=1.0, delta=1e-9, schema=None, n_bins=32, compress=True, domain_share=0.1,
                 cohort_composition="parallel", random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.compress = compress
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state

    # -- fitting ------------------------------------------------------------------
    def _check_input(self, X, y, reset):
        if not (isinstance(self.n_bins, (int, np.integer)) and self.n_bins >= 1):
            raise ValueError(f"n_bins must be a positive integer, got {self.n_bins!r}.")
        return super()._check_input(X, y, reset)

    def _fit_table(self, X, accountant: BudgetAccountant, rngs, first):
        if first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
        codes = self.grid_.encode(X)
        d = codes.shape[1]
        sizes = [int(c) for c in self.grid_.n_cells]
        private = accountant.private
        if private:
            spent_pure = sum(r.epsilon for r in accountant.records if r.kind in ("pure", "approx"))
            rho = accountant.remaining_rho(spent_pure=spent_pure)
            if rho <= 0:
                raise ValueError("MSTSynthesizer: no zCDP budget left after the domain estimate.")
            select = first and d > 2
            rho1 = rho / 3 if select else rho / 2
            rho2 = rho / 3 if select else rho / 2
            rho_sel = rho / 3 if select else 0.0
            if d == 1:  # no pair to measure: everything on the single marginal
                rho1 = rho
        noise = rngs["noise"]

        # 1. one-way marginals on the full grid
        y1, var1 = [], []
        for j in range(d):
            exact = np.bincount(codes[:, j], minlength=sizes[j]).astype(float)
            target = f"1-way marginal of {self.grid_.columns[j].spec.name!r}"
            if private:
                noisy = gaussian_mechanism(exact, l2_sensitivity=1.0, rho=rho1 / d, rng=noise, accountant=accountant,
                                           target=target)
                v = 1.0 / (2 * rho1 / d)
            else:
                accountant.spend(BudgetRecord("exact (non-private)", target, "none", epsilon=math.inf))
                noisy, v = exact, 0.0
            y1.append(noisy)
            var1.append(v)

        if first:
            self._init_compression(y1, var1, private)
            self._y1 = [np.zeros(len(m)) for m in self.maps_]
            self._v1 = [np.zeros(len(m)) for m in self.maps_]
        comp = [self.maps_[j][codes[:, j]] for j in range(d)]
        csizes = [int(m.max()) + 1 for m in self.maps_]
        for j in range(d):
            self._y1[j] = self._y1[j] + y1[j]
            self._v1[j] = self._v1[j] + var1[j]

        # 2. select the tree (first cohort only)
        if first:
            self.edges_ = self._select(comp, csizes, d, rho_sel if private else None, accountant, noise)
            self._y2 = {e: np.zeros((csizes[e[0]], csizes[e[1]])) for e in self.edges_}
            self._v2 = {e: 0.0 for e in self.edges_}

        # 3. two-way marginals of the tree's edges
        n_edges = len(self.edges_)
        for a, b in self.edges_:
            flat = comp[a] * csizes[b] + comp[b]
            exact = np.bincount(flat, minlength=csizes[a] * csizes[b]).astype(float).reshape(csizes[a], csizes[b])
            target = (f"2-way marginal of ({self.grid_.columns[a].spec.name!r}, "
                      f"{self.grid_.columns[b].spec.name!r})")
            if private:
                noisy = gaussian_mechanism(exact, l2_sensitivity=1.0, rho=rho2 / n_edges, rng=noise,
                                           accountant=accountant, target=target)
                v = 1.0 / (2 * rho2 / n_edges)
            else:
                accountant.spend(BudgetRecord("exact (non-private)", target, "none", epsilon=math.inf))
                noisy, v = exact, 0.0
            self._y2[(a, b)] = self._y2[(a, b)] + noisy
            self._v2[(a, b)] = self._v2[(a, b)] + v
        if first and private:
            self.rho_ = rho
        elif first:
            self.rho_ = math.inf
        self._estimate(csizes)

    def _init_compression(self, y1, var1, private):
        """Map full-grid cells to compressed cells (cells with noisy count < 3 sigma merged into the last one)."""
        self.maps_ = []
        self.merged_ = []
        for noisy, v in zip(y1, var1):
            k = len(noisy)
            keep = noisy >= 3 * math.sqrt(v) if (private and self.compress) else np.ones(k, bool)
            if keep.sum() >= k - 1:  # merging one cell (or none) changes nothing
                keep = np.ones(k, bool)
            mapping = np.empty(k, dtype=np.int64)
            mapping[keep] = np.arange(int(keep.sum()))
            mapping[~keep] = int(keep.sum())
            self.maps_.append(mapping)
            self.merged_.append(np.flatnonzero(~keep))

    def _select(self, comp, csizes, d, rho_sel, accountant, rng):
        """Kruskal with exponential-mechanism steps; returns edges (parent-agnostic pairs)."""
        if d < 2:
            return []
        if d == 2:
            return [(0, 1)]
        one = []
        for j in range(d):
            y = np.bincount(self.maps_[j], weights=self._y1[j], minlength=csizes[j])
            one.append(np.clip(y, 0, None))
        totals = np.array([o.sum() for o in one])
        n_hat = max(float(np.median(totals)), 1.0)
        probs = [o / o.sum() if o.sum() > 0 else np.full(len(o), 1.0 / len(o)) for o in one]
        pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
        scores = np.empty(len(pairs))
        for i, (a, b) in enumerate(pairs):
            flat = comp[a] * csizes[b] + comp[b]
            exact = np.bincount(flat, minlength=csizes[a] * csizes[b]).reshape(csizes[a], csizes[b])
            scores[i] = np.abs(exact - n_hat * np.outer(probs[a], probs[b])).sum()
        parent = list(range(d))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        steps = d - 1
        eps_s = math.sqrt(8 * rho_sel / steps) if rho_sel is not None else None
        pairs_arr = np.array(pairs)
        chosen = []
        for step in range(steps):
            roots = np.array([find(x) for x in range(d)])
            ok = roots[pairs_arr[:, 0]] != roots[pairs_arr[:, 1]]
            idx = np.flatnonzero(ok)
            if eps_s is None:
                pick = idx[int(np.argmax(scores[idx]))]
            else:
                pick = idx[self._exp_mech(scores[idx], eps_s, accountant, rng, step)]
            a, b = pairs[pick]
            parent[find(a)] = find(b)
            chosen.append((a, b))
        return chosen

    @staticmethod
    def _exp_mech(utilities, eps, accountant, rng, step):
        """Exponential mechanism (Gumbel-max), utility sensitivity 1, charged eps^2/8 zCDP."""
        accountant.spend(BudgetRecord(
            "exponential", f"MST tree selection step {step + 1}", "zcdp", rho=eps ** 2 / 8, sensitivity=1.0,
            noise_scale=2.0 / eps, details={"epsilon_em": eps, "analysis": "bounded range: eps^2/8 zCDP"}))
        logits = eps * (utilities - utilities.max()) / 2.0
        return int(np.argmax(logits + rng.gumbel(size=len(utilities))))

    def _estimate(self, csizes):
        d = len(csizes)
        edges = self.edges_
        # 1-way on compressed cells: sum the merged cells' measurements
        y1c = [np.bincount(self.maps_[j], weights=self._y1[j], minlength=csizes[j]) for j in range(d)]
        v1c = [np.bincount(self.maps_[j], weights=self._v1[j], minlength=csizes[j]) for j in range(d)]
        from_edges = {j: [] for j in range(d)}
        for a, b in edges:
            t, v = self._y2[(a, b)], self._v2[(a, b)]
            from_edges[a].append((t.sum(axis=1), v * csizes[b]))
            from_edges[b].append((t.sum(axis=0), v * csizes[a]))
        # total count: inverse-variance mean of every marginal's total
        tot, w = [], []
        for j in range(d):
            tot.append(y1c[j].sum())
            w.append(v1c[j].sum())
        for a, b in edges:
            tot.append(self._y2[(a, b)].sum())
            w.append(self._v2[(a, b)] * csizes[a] * csizes[b])
        tot, w = np.array(tot), np.array(w)
        if np.any(w == 0):
            n_hat = float(tot[w == 0].mean())
        else:
            n_hat = float(np.sum(tot / w) / np.sum(1 / w))
        n_hat = max(n_hat, 1.0)
        self.n_hat_ = n_hat
        self.one_way_ = [combine_one_way(y1c[j], v1c[j], from_edges[j], n_hat) for j in range(d)]
        self.conditionals_ = {}
        self.order_ = tree_order(d, edges)
        for parent, child in self.order_[1]:
            key = (parent, child) if (parent, child) in self._y2 else (child, parent)
            table = self._y2[key] if key == (parent, child) else self._y2[key].T
            fitted = project_table(table, n_hat * self.one_way_[parent], n_hat * self.one_way_[child])
            rows = fitted.sum(axis=1, keepdims=True)
            cond = np.where(rows > 0, fitted / np.where(rows > 0, rows, 1.0), self.one_way_[child][None, :])
            self.conditionals_[(parent, child)] = cond / cond.sum(axis=1, keepdims=True)

    # -- sampling -----------------------------------------------------------------
    def _sample_table(self, n_samples, rng):
        comp = sample_tree(n_samples, self.order_, self.one_way_, self.conditionals_, rng)
        codes = np.empty_like(comp)
        for j, mapping in enumerate(self.maps_):
            merged = self.merged_[j]
            kept = np.flatnonzero(np.isin(np.arange(len(mapping)), merged, invert=True))
            col = comp[:, j]
            out = np.empty(n_samples, dtype=np.int64)
            is_rare = col >= len(kept)
            out[~is_rare] = kept[col[~is_rare]]
            if is_rare.any():
                out[is_rare] = merged[rng.integers(len(merged), size=int(is_rare.sum()))]
            codes[:, j] = out
        return self.grid_.decode(codes, rng)
