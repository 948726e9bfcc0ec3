"""MST (McKenna, Miklau & Sheldon 2021): noisy 1- and 2-way marginals on a DP maximum spanning tree.

A clean numpy implementation (no private-pgm / JAX): the graphical model is a
tree, so a consistent model is estimated by least squares on the marginals the
tree needs (no junction-tree inference), and sampling runs root to leaves.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.exceptions import PrivacyBudgetError
from skdpsynth.privacy import (
    BudgetRecord,
    approx_dp_to_zcdp,
    discrete_gaussian_mechanism,
    exponential_mechanism_zcdp,
    project_to_simplex,
)
from skdpsynth.synthesizers._decoding import FineDecoder
from skdpsynth.synthesizers._mst_estimation import estimate_tree_model, sample_tree
from skdpsynth.utils._param_validation import Interval

__all__ = ["MSTSynthesizer"]


def budget_split(rho: float, d: int, select: bool) -> tuple[float, float, float]:
    """Total rho of the 1-way marginals, the tree selection and the 2-way marginals.

    Thirds when the tree is selected; halves between the two measurements
    otherwise (``d = 2`` or a later cohort); everything on the marginal when
    ``d = 1``.
    """
    if d == 1:
        return rho, 0.0, 0.0
    if select:
        return rho / 3, rho / 3, rho / 3
    return rho / 2, 0.0, rho / 2


def planned_records(d: int, rho: float, select: bool) -> list[BudgetRecord]:
    """The zCDP records a cohort of ``d`` columns will charge with ``rho`` (for the up-front check)."""
    if not rho > 0:
        raise PrivacyBudgetError("MSTSynthesizer: no zCDP budget is left for the model; raise epsilon or delta.")
    r1, rs, r2 = budget_split(rho, d, select)
    records = [BudgetRecord("discrete gaussian", "1-way marginal", "zcdp", rho=r1 / d)] * d
    if rs > 0:
        records += [BudgetRecord("exponential (zCDP)", "MST tree selection", "zcdp", rho=rs / (d - 1))] * (d - 1)
    if r2 > 0:
        records += [BudgetRecord("discrete gaussian", "2-way marginal", "zcdp", rho=r2 / (d - 1))] * (d - 1)
    return records


def _probabilities(counts: np.ndarray) -> np.ndarray:
    """Noisy counts projected onto the simplex and normalised (uniform when nothing survives)."""
    p = project_to_simplex(counts)
    s = p.sum()
    return p / s if s > 0 else np.full(len(p), 1.0 / len(p))


class MSTSynthesizer(BaseTabularSynthesizer):
    """Maximum-spanning-tree synthesizer (McKenna, Miklau & Sheldon 2021), zCDP.

    1. Measure every 1-way marginal on the public grid with discrete Gaussian
       noise (``rho / 3``); merge each column's cells whose noisy count is below
       ``3 sigma`` into one "rare" cell (as MST's domain compression).
    2. Select ``d - 1`` pairs forming a spanning tree: Kruskal's algorithm where
       each step draws, by the exponential mechanism (``rho / 3`` over the
       steps), a pair joining two components, scored by the L1 distance between
       the pair's exact 2-way counts and the independent estimate from the
       noisy 1-way marginals.
    3. Measure the selected 2-way marginals with discrete Gaussian noise
       (``rho / 3``).
    4. Estimate a consistent tree model: inverse-variance combination of every
       estimate of each 1-way marginal, projected onto the non-negative
       simplex; each edge's noisy table projected (least squares, Dykstra) onto
       non-negative tables with those 1-way margins. Sample the root, then
       every child from its conditional given its parent.
    5. Binned columns (continuous, datetime, wide integer ranges) are decoded
       inside their bin from a DP 1-way marginal on a finer public grid
       (``decode_share`` of the budget; :mod:`._decoding`): point masses at the
       bounds and integer values survive the 32 bins.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort. ``None`` = exact marginals and an exact maximum
        spanning tree (not private).
    delta : float, default=1e-9
        The zCDP spend is converted to (epsilon, delta) at this delta (minus
        the domain's share when ``schema`` is None); must be > 0 when
        ``epsilon`` is set.
    schema : TableSchema, dict, path or None, default=None
        Public domain; estimated under DP with ``domain_share`` of the budget when None.
    n_bins : int, default=32
        Bins per continuous column (integer ranges of at most ``n_bins`` values
        get one cell per value).
    compress : bool, default=True
        Merge cells with noisy 1-way count below ``3 sigma`` (decoded uniformly
        among the merged cells).
    decode_share : float, default=0.1
        Share of the zCDP budget spent on fine 1-way marginals of the binned
        columns, used to draw values inside their bin; 0 = uniform inside the
        bin (nothing spent). Nothing is taken when no column is binned.
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose.
    random_state : int, Generator or None, default=None
        Seeds everything that is not privacy noise (sampling, positions inside
        bins).
    reproducible_noise : bool, default=False
        Derive the privacy noise from ``random_state`` (tests and papers only:
        such a release is not publishable). By default the noise comes from
        fresh OS entropy and nothing can regenerate it.

    Attributes
    ----------
    grid_ : PublicGrid
        Cells of every column.
    maps_ : list of ndarray
        For every column, the compressed cell of each grid cell.
    merged_ : list of ndarray
        For every column, the grid cells merged into its "rare" cell.
    edges_ : list of (int, int)
        The selected tree (column indices).
    one_way_counts_ : list of ndarray of int64
        Noisy 1-way counts on the full grid, summed over cohorts.
    one_way_var_ : ndarray of float
        Per-cell noise variance of each column's ``one_way_counts_``.
    two_way_counts_ : dict of (int, int) to ndarray of int64
        Noisy 2-way counts of the edges on compressed cells, summed over cohorts.
    two_way_var_ : dict of (int, int) to float
        Their per-cell noise variance.
    one_way_ : list of ndarray
        Consistent 1-way probabilities on the compressed cells.
    conditionals_ : dict
        ``{(parent, child): P(child | parent)}`` on compressed cells.
    decoder_ : FineDecoder
        Fine-grid counts of the binned columns and the within-bin decoder.
    rho_ : float
        zCDP spent by the model in the first cohort (fine marginals included).
    n_estimate_ : int
        Inverse-variance mean of the latest cohort's noisy 1-way totals.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). With ``rho`` the
    zCDP budget left after the domain (converted from ``epsilon`` at ``delta``),
    less ``decode_share`` of it for the fine 1-way marginals of the ``k``
    binned columns (L2 sensitivity 1 each, ``rho_f / k`` each; post-processed
    into ``P(fine cell | bin)``):

    * 1-way marginals: each histogram has L2 sensitivity 1; each of the ``d``
      gets ``rho / (3 d)`` (discrete Gaussian, ``sigma = sqrt(3 d / (2 rho))``).
    * Selection: the score of a pair, ``||M_ij(D) - M_ij(est)||_1`` with
      ``est`` built from the already released noisy 1-way marginals, changes by
      at most 1 when one person is added or removed (one cell of ``M_ij(D)``
      moves by 1), so the utility sensitivity is 1. Each of the ``d - 1``
      exponential-mechanism steps is charged ``rho / (3 (d - 1))`` zCDP
      (:func:`~skdpsynth.privacy.exponential_mechanism_zcdp`, bounded-range
      analysis of Cesar & Rogers 2021). When ``d <= 2`` there is one possible
      tree and no selection; the budget is then split in halves between the
      two measurements (all of it goes to the marginal when ``d = 1``).
    * 2-way marginals: L2 sensitivity 1 each; each of the ``d - 1`` gets
      ``rho / (3 (d - 1))``.

    Everything composes by adding rho; the total is converted once (Canonne,
    Kamath & Steinke 2020). The whole cost (domain included) is checked
    against the budget before anything is spent. Every released number is an
    integer noisy count or post-processing of such counts. ``partial_fit``
    keeps the first cohort's tree and compression and measures the same 1-way
    and 2-way marginals on the new cohort with half of its budget each; counts
    of different cohorts add up (each cohort pays its own budget).
    """

    _zcdp_model = True  # its clipped-value count is Gaussian too (see BaseTabularSynthesizer)
    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "compress": ["boolean"],
        "decode_share": [Interval(Real, 0, 1, closed="left")],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=1.0, delta=1e-9, schema=None, n_bins=32, compress=True, decode_share=0.1,
                 domain_share=0.1, cohort_composition="parallel", random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.compress = compress
        self.decode_share = decode_share
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    # -- planning -----------------------------------------------------------------
    def _delta_required_by(self) -> str:
        return "measures under zCDP"

    def _planned_model_cost(self, columns: tuple[str, ...], eps_dom: float, delta_dom: float) -> list[BudgetRecord]:
        d = len(columns)
        rho = approx_dp_to_zcdp(self.epsilon - eps_dom, self.delta - delta_dom)
        # the kinds are not known before the estimate: plan the decoding share as if every column were binned
        rho_f = self.decode_share * rho
        fine = [BudgetRecord("discrete gaussian", "fine 1-way marginal (decoding)", "zcdp", rho=rho_f / d)] * d if (
            rho_f > 0) else []
        return fine + planned_records(d, rho - rho_f, select=d > 2)

    # -- fitting ------------------------------------------------------------------
    def _fit_table(self, X, ctx: FitContext):
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.decoder_ = FineDecoder(self.grid_, enabled=self.decode_share > 0)
        codes = self.grid_.encode(X)
        d = codes.shape[1]
        select = ctx.first and d > 2
        rho = rho_all = rho_f = None
        if ctx.accountant.private:
            rho_all = ctx.accountant.remaining_rho()
            rho_f = self.decode_share * rho_all if self.decoder_.columns else 0.0
            rho = rho_all - rho_f
            ctx.accountant.require(self.decoder_.planned(rho_f) + planned_records(d, rho, select),
                                   what="MSTSynthesizer's model")
        if rho is None or rho_f > 0:
            self.decoder_.measure(X, rho_f, ctx)
        r1, rs, r2 = budget_split(rho, d, select) if rho is not None else (None, None, None)

        noisy_1, var_1 = self._measure_one_way(codes, r1, ctx)
        self.n_estimate_ = self._cohort_size(noisy_1, var_1)
        if ctx.first:
            self._init_compression(noisy_1, var_1, private=rho is not None)
            self.one_way_counts_ = [np.zeros(len(m), dtype=np.int64) for m in self.maps_]
            self.one_way_var_ = np.zeros(d)
        self.one_way_counts_ = [a + b for a, b in zip(self.one_way_counts_, noisy_1)]
        self.one_way_var_ = self.one_way_var_ + var_1
        comp = [self.maps_[j][codes[:, j]] for j in range(d)]
        csizes = [int(m.max()) + 1 for m in self.maps_]

        if ctx.first:
            self.edges_ = self._select(comp, csizes, rs / (d - 1) if rs else None, ctx) if select else (
                [(0, 1)] if d == 2 else [])
            self.two_way_counts_ = {e: np.zeros((csizes[e[0]], csizes[e[1]]), dtype=np.int64) for e in self.edges_}
            self.two_way_var_ = {e: 0.0 for e in self.edges_}
            self.rho_ = math.inf if rho is None else rho_all
        self._measure_two_way(comp, csizes, r2 / len(self.edges_) if r2 else None, ctx)
        self._estimate(csizes)

    def _measure(self, exact: np.ndarray, rho: float | None, target: str, ctx: FitContext) -> tuple[np.ndarray, float]:
        """Noisy integer counts and their per-cell variance (exact counts, variance 0, when not private)."""
        if rho is None:
            ctx.accountant.declare_nonprivate(target)
            return exact.astype(np.int64), 0.0
        noisy = discrete_gaussian_mechanism(exact, l2_sensitivity=1.0, rho=rho, noise=ctx.noise,
                                            accountant=ctx.accountant, target=target)
        return noisy, 1.0 / (2.0 * rho)

    def _measure_one_way(self, codes: np.ndarray, rho_total: float | None, ctx: FitContext
                         ) -> tuple[list[np.ndarray], np.ndarray]:
        d = codes.shape[1]
        rho = None if rho_total is None else rho_total / d
        noisy, var = [], []
        for j, g in enumerate(self.grid_.columns):
            exact = np.bincount(codes[:, j], minlength=g.n_cells)
            y, v = self._measure(exact, rho, f"1-way marginal of {g.spec.name!r}", ctx)
            noisy.append(y)
            var.append(v)
        return noisy, np.array(var)

    def _measure_two_way(self, comp: list[np.ndarray], csizes: list[int], rho: float | None, ctx: FitContext):
        names = [g.spec.name for g in self.grid_.columns]
        for a, b in self.edges_:
            flat = comp[a] * csizes[b] + comp[b]
            exact = np.bincount(flat, minlength=csizes[a] * csizes[b]).reshape(csizes[a], csizes[b])
            y, v = self._measure(exact, rho, f"2-way marginal of ({names[a]!r}, {names[b]!r})", ctx)
            self.two_way_counts_[(a, b)] = self.two_way_counts_[(a, b)] + y
            self.two_way_var_[(a, b)] = self.two_way_var_[(a, b)] + v

    @staticmethod
    def _cohort_size(noisy: list[np.ndarray], var: np.ndarray) -> int:
        """Inverse-variance mean of the noisy 1-way totals (a column's total has variance cells x var)."""
        totals = np.array([y.sum() for y in noisy], dtype=float)
        if np.any(var <= 0):
            return max(int(round(totals.mean())), 1)
        w = 1.0 / (var * np.array([len(y) for y in noisy]))
        return max(int(round(float(np.sum(w * totals) / np.sum(w)))), 1)

    def _init_compression(self, y1: list[np.ndarray], var1: np.ndarray, private: bool):
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

    def _compressed_one_way(self, csizes: list[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Noisy 1-way counts and per-cell variances on the compressed cells (merged cells add up)."""
        counts = [np.bincount(m, weights=y, minlength=c) for m, y, c in zip(self.maps_, self.one_way_counts_, csizes)]
        var = [v * np.bincount(m, minlength=c) for m, v, c in zip(self.maps_, self.one_way_var_, csizes)]
        return counts, var

    def _select(self, comp: list[np.ndarray], csizes: list[int], rho_step: float | None, ctx: FitContext):
        """Kruskal with exponential-mechanism steps (exact argmax when not private); returns the edges."""
        d = len(comp)
        one, _ = self._compressed_one_way(csizes)
        probs = [_probabilities(o) for o in one]
        pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
        scores = np.empty(len(pairs))
        for i, (a, b) in enumerate(pairs):
            flat = comp[a] * csizes[b] + comp[b]
            exact = np.bincount(flat, minlength=csizes[a] * csizes[b]).reshape(csizes[a], csizes[b])
            scores[i] = np.abs(exact - self.n_estimate_ * np.outer(probs[a], probs[b])).sum()
        parent = list(range(d))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        pairs_arr = np.array(pairs)
        chosen = []
        for step in range(d - 1):
            roots = np.array([find(x) for x in range(d)])
            idx = np.flatnonzero(roots[pairs_arr[:, 0]] != roots[pairs_arr[:, 1]])
            if rho_step is None:
                pick = idx[int(np.argmax(scores[idx]))]
            else:
                pick = idx[exponential_mechanism_zcdp(scores[idx], sensitivity=1.0, rho=rho_step, noise=ctx.noise,
                                                      accountant=ctx.accountant,
                                                      target=f"MST tree selection step {step + 1}")]
            a, b = pairs[pick]
            parent[find(a)] = find(b)
            chosen.append((a, b))
        return chosen

    def _estimate(self, csizes: list[int]):
        one, var = self._compressed_one_way(csizes)
        two = {e: t.astype(float) for e, t in self.two_way_counts_.items()}
        _, self.one_way_, self.order_, self.conditionals_ = estimate_tree_model(one, var, two, self.two_way_var_)

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
        return self.decoder_.decode(codes, rng)
