"""NPGC: a non-parametric Gaussian copula, differentially private end to end (papers/npgc-en.md).

This module: the estimator (fit from the exact sufficient statistics of a
cohort, whether a table in memory, an iterable of chunks or a Dask DataFrame;
sampling). The public cells are in :mod:`._npgc_cells`, the statistics and the handle that answers them only
under DP in :mod:`skdpsynth.privacy._copula_statistics`, the dependence (Kendall's tau, its private release)
in :mod:`._npgc_dependence`, the tau-to-correlation bridge in
:mod:`._npgc_bridge` and the sampler in :mod:`._npgc_copula`. Figures: ``docs/npgc.md``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import pandas as pd

from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.privacy._accounting import BudgetRecord, approx_dp_to_zcdp
from skdpsynth.privacy._copula_statistics import CohortStatistics, PairLayout, PrivateCopulaStatistics, dependence_map
from skdpsynth.synthesizers._npgc_cells import NPGCColumnCells, build_cells
from skdpsynth.synthesizers._npgc_copula import GaussianCopula
from skdpsynth.synthesizers._npgc_dependence import (
    SMALL_TABLE,
    exact_correlation,
    plan_dependence,
    release_correlation,
)
from skdpsynth.synthesizers._npgc_input import NPGCInput
from skdpsynth.synthesizers._npgc_marginals import (
    RARE_Z,
    marginals_again,
    noisy_marginals,
    pool_rare_cells,
    probabilities,
    support_and_tails,
)
from skdpsynth.synthesizers._npgc_tables import TABLE_SHARE, TableForest, candidate_pairs, release_tables
from skdpsynth.utils._param_validation import Interval, StrOptions

__all__ = ["NPGCSynthesizer", "NPGCColumnCells", "build_cells"]

#: ``marginal_share="auto"``: for tables of at most SMALL_TABLE columns (tau of every pair), and wider ones
AUTO_MARGINAL_SHARE = (0.5, 0.3)
#: decode() ignores ``within`` for cells without width; passing it avoids drawing unused randomness
_NO_WITHIN = np.zeros(0)


class NPGCSynthesizer(NPGCInput, BaseTabularSynthesizer):
    """Non-parametric Gaussian copula (NPGC), differentially private end to end.

    Each column's distribution is a histogram (noisy under DP), the dependence
    the correlation of a Gaussian copula estimated from rank statistics
    (Kendall's tau, or clipped normal scores of chosen pairs on wider tables),
    plus, for wider tables with categorical columns, the two-way tables of a
    forest of discrete pairs (categorical columns, and under DP integer
    columns with one cell per value) the copula cannot express. Sampling inverts
    each column's CDF at correlated normals; missing values occupy the top
    slice of each column's unit interval, so missingness keeps its relations
    with the other columns (papers/npgc-en.md). The fit reads the data once,
    chunk by chunk, into exact sufficient statistics (cell counts and pair
    tables), so a table in memory, an iterable of DataFrames or a Dask
    DataFrame (``fit(ddf)``; a schema is then required) give the same release
    in bounded memory; the noise is added once, to the merged statistics.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort (``fit`` / ``partial_fit`` call). ``None``: non-private
        "exact marginal preservation" (exact empirical CDFs, exact tau; the
        budget log says ``kind="none"``).
    delta : float, default=1e-6
        Per cohort. With ``delta > 0`` the model is accounted in zCDP (discrete
        Gaussian noise); with ``delta=0`` it is pure epsilon-DP (geometric
        noise; a ``schema`` with the categories is then needed).
    schema : TableSchema, dict, path or None, default=None
        Public domain; when None, estimated under DP with ``domain_share`` of
        the budget (read from the data when ``epsilon=None``).
    n_bins : int, default=32
        Equal-width bins per continuous / datetime column and wide integer column,
        plus one point cell at each bound (see :class:`NPGCColumnCells`).
    max_integer_cells : int, default=1024
        Integer columns with at most this many values get one cell per value
        (credits in steps of 15 or 30 keep their spikes; the noise of the empty
        cells is removed by the simplex projection).
    marginal_share : float or "auto", default="auto"
        Share of the model's budget (what the domain leaves) spent on the
        marginals, the rest on the dependence (all of it with one column).
        ``"auto"``: 0.5 for tables of at most 5 columns, 0.3 for wider ones,
        whose dependence has many more pairs to measure.
    domain_share : float, default=0.1
        Share of ``epsilon`` and ``delta`` spent on the domain when ``schema`` is None.
    stratified : bool, default=True
        Draw the rows of one ``sample`` call jointly so that every column's
        frequencies match the model's marginal to within two rows (rank-stratified
        uniforms; the copula is unchanged): no multinomial noise accumulating
        when synthetic data are refitted generation after generation. A column
        sampled from a two-way table (``table_edges_``) follows its table given
        its parent's stratified cells instead. ``False``: i.i.d. rows, generated in chunks.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose: "parallel" when they are different
        people (the maximum), "sequential" otherwise (the sum).
    random_state : int, Generator or None, default=None
        Seeds everything that is not privacy noise (sampling, within-cell
        positions). The privacy noise comes from fresh OS entropy.
    reproducible_noise : bool, default=False
        Derive the privacy noise from ``random_state`` (tests and papers only:
        such a release is not publishable).

    Attributes
    ----------
    cells_ : tuple of NPGCColumnCells
        The public cells of every column, laid out from the schema only (the
        last cell of a nullable column is "missing").
    cell_counts_ : list of ndarray of int64
        Per column, the released (noisy, summed over cohorts) cell counts.
    support_ : list of ndarray or None
        Non-private mode only: per numeric / datetime column the exact ECDF's support (missing last).
    probabilities_ : list of ndarray
        Per column, the probabilities sampled from (grid cells, or ``support_``).
    correlation_ : ndarray of shape (n_columns, n_columns)
        Latent Gaussian correlation (positive definite).
    table_edges_ : list of (int, int)
        ``(parent, child)`` column indices of the discrete pairs whose
        two-way tables were released (chosen on the first cohort), in sampling order.
    table_counts_ : list of ndarray of int64
        Their released tables (parent cells x child cells), noisy, summed over cohorts.
    n_estimate_ : int
        Number of people seen, all cohorts: under DP the rounded sum of the
        cohorts' ``n_hat`` (post-processing of the noisy marginals).
    cohort_sizes_ : list of float
        ``n_hat`` of each cohort (weights of the correlation).

    Privacy
    -------
    Neighbouring relation: add or remove one person (one row). Protected: every
    value of every row, whether it is missing, and the number of people.
    Public: the column names and dtypes, and ``schema`` when given; the plan
    (which statistics, how many pairs, the budget split) depends on ``d``, the
    kinds and cells of the schema, the budget and released counts only. The
    domain, when not given, is estimated under DP by the base class with
    ``domain_share`` of the budget. ``rho`` below is what the domain leaves
    (:meth:`BudgetAccountant.remaining_rho`); with ``delta=0`` every zCDP
    mechanism below is replaced by its pure counterpart (geometric / Laplace
    noise at the L1 sensitivity, the pure exponential mechanism) on the same
    shares of the epsilon left.

    *Marginals*: each column's histogram over its public cells (missing cell
    included) changes by 1 in one cell per person, so the d histograms form one
    integer vector of L2 sensitivity ``sqrt(d)``: discrete Gaussian mechanism at
    ``rho_m = share * rho`` (``marginal_share``). *Row count*: never read. Each
    noisy histogram sums to n plus noise; their inverse-variance average
    ``n_hat`` and ``a = max(2, floor(n_hat - 3 sd))`` are post-processing.

    *Dependence*, at ``rho_c = rho - rho_m`` (:func:`~._npgc_dependence.plan_dependence`):

    * up to 5 columns, every pair's Kendall's tau at once: concordant minus
      discordant pairs on the data padded with ``max(0, a - n)`` dummies in
      cell (0, 0), re-expressed on the public ``C(a, 2)`` pairs, integers of
      sensitivity ``2 (a - 1)`` per pair for every ``a`` (proof in
      :func:`~._npgc_dependence.noisy_kendall_tau`); one discrete Gaussian
      mechanism on the ``P`` pairs, L2 ``sqrt(P) 2 (a - 1)``;
    * wider tables, clipped normal scores (:mod:`._npgc_scores`): per pair the
      sum over people of ``s_i(x_i) s_j(x_j)``, public scores bounded by
      ``b_i`` (from the released marginals), so one person moves a set ``E`` of
      pairs by at most ``sqrt(sum_E b_i^2 b_j^2)`` in L2. Every pair at once
      (one Gaussian mechanism) when that is precise enough; otherwise ``1.5 d``
      pairs in 4 rounds, each pair chosen by the exponential mechanism
      (utility: its distance from the copula fitted so far, sensitivity ``max
      b_i b_j``; ``rho_c / 2`` over all choices) and each round's pairs
      measured together (``rho_c / 2`` over the rounds); proof in
      :func:`~._npgc_scores.adaptive_scores`. When even that would be noise
      (a few hundred people for dozens of columns), ``rho_c`` measures the
      marginals a second time instead and the two are averaged by precision;
    * with candidate discrete pairs (tables over 5 columns), a third of
      ``rho_c`` releases two-way tables of a forest of them (up to 16, chosen
      by the exponential mechanism, utility the L1 distance from the fitted
      copula's table less the table's expected noise, sensitivity 1; then one
      discrete Gaussian mechanism, L2 ``sqrt(k)``); proof in
      :func:`~._npgc_tables.release_tables`.

    *Post-processing*: the rare cells of each categorical column (noisy count
    below 3 noise sd) pooled and shared evenly, then simplex projection of
    the counts (total ``n_hat``);
    each statistic to the latent correlation by the copula's own expectation
    (:mod:`._npgc_bridge`); unmeasured pairs by maximum entropy; the tables
    projected and raked to the marginals; sampling.

    *Accounting*: everything is zCDP (or pure), ``rho_m + rho_c = rho``, converted
    once to (epsilon, delta - delta_domain) (Canonne, Kamath & Steinke 2020): a
    cohort never spends more than (``epsilon``, ``delta``). ``partial_fit``
    spends a fresh budget on the new cohort only (the tables of the first
    cohort's pairs, without choosing), adds its noisy counts and averages the
    correlations weighted by ``n_hat``. Fitting from chunks or a Dask DataFrame
    computes the same exact statistics and adds the noise once: the same
    release, the same accounting. The PyPI reference ``npgc`` 0.3.0 is not DP
    (see ``docs/npgc.md``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdpsynth import NPGCSynthesizer, TableSchema
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"score": rng.normal(60, 10, 500).clip(0, 100), "passed": rng.random(500) < 0.7})
    >>> schema = TableSchema.from_dict({"score": {"kind": "continuous", "lower": 0, "upper": 100},
    ...                                 "passed": {"kind": "boolean"}})
    >>> synth = NPGCSynthesizer(epsilon=1.0, schema=schema, random_state=0).fit(X)
    >>> synth.sample(3, random_state=0).shape
    (3, 2)
    >>> synth.privacy_spent_.epsilon <= 1.0
    True
    """

    _zcdp_model = True  # its clipped-value count is Gaussian too (see BaseTabularSynthesizer)
    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "max_integer_cells": [Interval(Integral, 1, None, closed="left")],
        "marginal_share": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "stratified": ["boolean"],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, schema=None, n_bins=32, max_integer_cells=1024,
                 marginal_share="auto", domain_share=0.1, stratified=True, cohort_composition="parallel",
                 random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.max_integer_cells = max_integer_cells
        self.marginal_share = marginal_share
        self.domain_share = domain_share
        self.stratified = stratified
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    def _planned_model_cost(self, columns: tuple[str, ...], eps_dom: float, delta_dom: float) -> list[BudgetRecord]:
        eps_left, delta_left = self.epsilon - eps_dom, self.delta - delta_dom
        if eps_left <= 0:
            return [BudgetRecord("geometric", "NPGC model", "pure", epsilon=max(eps_left, 0.0) + 1e-12)]
        if delta_left > 0:
            return [BudgetRecord("gaussian", "NPGC model", "zcdp", rho=approx_dp_to_zcdp(eps_left, delta_left))]
        return [BudgetRecord("geometric", "NPGC model", "pure", epsilon=eps_left)]

    # -- fitting ------------------------------------------------------------------------
    _takes_table = True

    def _private_view(self, Xn: pd.DataFrame | CohortStatistics, ctx: FitContext) -> PrivateCopulaStatistics:
        """The cohort's statistics (from :meth:`_check_input`, or from the normalised table when the domain was
        estimated or read from this table first) behind DP queries."""
        if isinstance(Xn, CohortStatistics):
            return PrivateCopulaStatistics(Xn, accountant=ctx.accountant, noise=ctx.noise)
        cells = build_cells(self.schema_, self.n_bins, self.max_integer_cells) if ctx.first else self.cells_
        return PrivateCopulaStatistics.from_rows(Xn, cells, accountant=ctx.accountant, noise=ctx.noise)

    def _fit_table(self, stats: PrivateCopulaStatistics, ctx: FitContext) -> None:
        """Noisy marginals, then the dependence, from the cohort's statistics (DP answers only); fold it in."""
        if ctx.first:
            self._start_model()
        private = stats.private
        cells = np.array([g.n_cells for g in self.cells_])
        d = len(cells)
        offsets = np.concatenate([[0], np.cumsum(cells)])
        plan, costs = None, None
        tables_on = self._candidates.any() if ctx.first else bool(self.table_edges_)
        if private:
            costs = self._split_budget(stats, d)
            counts, n_hat, a, var_cell = noisy_marginals(stats, cells, offsets, costs[0])
            self._exact_only = False
            plan, tables_on = self._plan(d, a, costs[1], tables_on)
            if plan is not None and plan.statistic == "none":
                counts, n_hat, var_cell = marginals_again(stats, counts, var_cell, cells, offsets, costs[1])
            self._count_variance += var_cell
        else:
            exact = stats.nonprivate(f"histograms of all {d} columns (exact empirical marginals)")
            counts, n_hat = exact.counts, float(exact.n)
            self._merge_ecdf(exact.ecdf)
        per_col = [counts[offsets[j]:offsets[j + 1]] for j in range(d)]
        probs = probabilities(self._pooled(per_col, var_cell, n_hat) if private else per_col,
                              n_hat if private else None)
        dep = [np.bincount(dependence_map(g), weights=p) for g, p in zip(self.cells_, probs)]  # the tables' cells
        corr, tables = np.eye(d), []
        if plan is not None and plan.statistic != "none":
            copula_cost = _share(costs[1], 1.0 - TABLE_SHARE if tables_on else 1.0)
            corr = release_correlation(stats, a, dep, n_hat, copula_cost)
        elif d > 1 and not private:
            exact = stats.nonprivate(f"Kendall's tau of all {d * (d - 1) // 2} column pairs")
            corr = exact_correlation(exact.tables, exact.n, dep)
        if tables_on:
            edges, tables = release_tables(stats, PairLayout([len(p) for p in dep]), self._candidates, dep,
                                           corr, n_hat, _share(costs[1], TABLE_SHARE) if private else None,
                                           edges=None if ctx.first else self.table_edges_,
                                           ordered=self._ordered)
            if ctx.first:
                self.table_edges_ = edges
        if tables:
            old = self.table_counts_ or [np.zeros_like(t) for t in tables]
            self.table_counts_ = [o + t for o, t in zip(old, tables)]
        # fold the cohort in (post-processing)
        self.cell_counts_ = [old + new for old, new in zip(self.cell_counts_, per_col)]
        self.cohort_sizes_ = [*self.cohort_sizes_, float(n_hat)]
        self._cohort_correlations = [*self._cohort_correlations, corr]
        self._refresh()

    @staticmethod
    def _plan(d: int, a: int, cost: dict, tables_on: bool):
        """The dependence plan, and whether two-way tables are measured (public: d, a, the budget).

        The tables take ``TABLE_SHARE`` of the dependence budget when the copula
        can still measure every pair at once with the rest, and, under zCDP,
        also when it measures its pairs in adaptive rounds; otherwise all of it
        goes to the copula (or to the marginals again). On UCI dropout (3,096
        rows, 37 columns, zCDP) the tables beside the rounds took TSTR at
        epsilon 1 from 0.540 to 0.567 (12 fits each): its nominal columns
        (course, application mode) carry associations with the outcome that the
        copula's order of their codes cannot. Under pure epsilon-DP the rounds
        left with two thirds of the budget lost their strongest pairs (on
        1,500 x 12, a correlation of 0.8 estimated below 0.4 in 5 of 40 fits).
        """
        if d == 1:
            return None, False
        if tables_on:
            plan = plan_dependence(d, a, _share(cost, 1.0 - TABLE_SHARE))
            if (plan.statistic == "scores" and plan.rounds == 0) or ("rho" in cost and plan.statistic != "none"):
                return plan, True
        return plan_dependence(d, a, cost), False

    def _start_model(self) -> None:
        self.cells_ = build_cells(self.schema_, self.n_bins, self.max_integer_cells)
        maps = [dependence_map(g) for g in self.cells_]
        sizes = np.array([int(m.max()) + 1 for m in maps])
        merged = np.array([len(m) != s for m, s in zip(maps, sizes)])
        d = len(self.cells_)
        # integer columns with one cell per value join the tables' candidates under DP; without privacy
        # they are sampled from their exact empirical support instead of their cells
        self._ordered = np.array([g.integer_values is not None and self.epsilon is not None for g in self.cells_])
        discrete = [g.spec.kind in ("categorical", "boolean") or o for g, o in zip(self.cells_, self._ordered)]
        self._candidates = (candidate_pairs(discrete, sizes, merged) if d > SMALL_TABLE
                            else np.zeros(d * (d - 1) // 2, dtype=bool))
        self.table_edges_, self.table_counts_ = [], []
        self.cell_counts_ = [np.zeros(g.n_cells, dtype=np.int64) for g in self.cells_]
        self._ecdf = [None if g.spec.kind in ("categorical", "boolean") else {} for g in self.cells_]
        self._exact_only = True
        self._count_variance = 0.0  # noise variance of one cell of the summed released counts
        self.cohort_sizes_ = []
        self._cohort_correlations = []

    def _split_budget(self, stats: PrivateCopulaStatistics, d: int) -> tuple[dict, dict | None]:
        """Costs of the marginals and of the tau vector (``{"rho": .}`` or ``{"epsilon": .}``), checked up front."""
        share = self._marginal_share(d)
        zcdp = stats.zcdp
        total = stats.remaining_rho() if zcdp else stats.remaining_epsilon()
        key = "rho" if zcdp else "epsilon"
        costs = ({key: total * share}, {key: total - total * share} if d > 1 else None)
        plan = [BudgetRecord("planned", "NPGC model", "zcdp" if zcdp else "pure", **c) for c in costs if c]
        stats.require(plan, what=f"{type(self).__name__}.fit")
        return costs

    def _marginal_share(self, d: int) -> float:
        """Share of the model's budget for the marginals (``"auto"``: from the number of columns, public)."""
        if d == 1:
            return 1.0
        if self.marginal_share != "auto":
            return float(self.marginal_share)
        return AUTO_MARGINAL_SHARE[0] if d <= SMALL_TABLE else AUTO_MARGINAL_SHARE[1]

    def _merge_ecdf(self, ecdf: list | None) -> None:
        """Fold exact empirical CDFs of numeric / datetime columns in (non-private mode only)."""
        for j, new in enumerate(ecdf or []):
            if self._ecdf[j] is None or new is None:
                continue
            values, counts, missing = new
            old = self._ecdf[j]
            if old:
                values, inv = np.unique(np.concatenate([old["values"], values]), return_inverse=True)
                counts = np.bincount(inv, weights=np.concatenate([old["counts"], counts]))
            self._ecdf[j] = {"values": values, "counts": np.asarray(counts, dtype=float),
                             "missing": (old.get("missing", 0.0) if old else 0.0) + float(missing)}

    def _refresh(self) -> None:
        """Recompute the sampling state from the accumulated statistics (post-processing)."""
        total = float(sum(self.cohort_sizes_))
        self.n_estimate_ = max(int(round(total)), 1)
        counts = self.cell_counts_ if self._exact_only else self._pooled(self.cell_counts_, self._count_variance, total)
        probs = probabilities(counts, None if self._exact_only else total)
        self.support_ = self._exact_support(probs) if self._exact_only else None
        self.probabilities_ = probs
        self._numeric_categories = [self._numeric_lookup(g) for g in self.cells_]
        weights = np.maximum(np.asarray(self.cohort_sizes_, dtype=float), 1.0)
        corr = sum(w * c for w, c in zip(weights, self._cohort_correlations)) / weights.sum()
        forest = TableForest(self.table_edges_, self.table_counts_)
        children = [(p, c, cum) for (p, c), cum in zip(forest.edges, forest.conditionals(probs, total))]
        self._copula = GaussianCopula(corr, probs, children)
        self.correlation_ = self._copula.correlation

    def _pooled(self, counts: list[np.ndarray], variance: float, total: float) -> list[np.ndarray]:
        """Released counts denoised (post-processing): each categorical column's rare cells pooled, each ordered
        column's cells outside its detected support replaced by geometric tails (:func:`support_and_tails`)."""
        sd = float(np.sqrt(variance))
        return [pool_rare_cells(c, RARE_Z * sd) if g.spec.kind in ("categorical", "boolean")
                else support_and_tails(c, g.n_value_cells, sd, total) for g, c in zip(self.cells_, counts)]

    def _exact_support(self, probs: list[np.ndarray]) -> list[np.ndarray | None]:
        """Non-private mode: the exact ECDF support of numeric columns (their ``probs`` are replaced in place)."""
        support = []
        for j, g in enumerate(self.cells_):
            e = self._ecdf[j]
            if e is None:
                support.append(None)
                continue
            missing_value = np.array(["NaT"], dtype="datetime64[ns]") if g.spec.kind == "datetime" else [np.nan]
            support.append(np.concatenate([e["values"], missing_value]))
            c = np.concatenate([e["counts"], [e["missing"]]])
            probs[j] = c / max(c.sum(), 1.0)
        return support

    def _numeric_lookup(self, g: NPGCColumnCells) -> np.ndarray | None:
        """Float lookup of a categorical column whose input dtype and categories are numbers (fast path)."""
        dtype = getattr(self, "dtypes_", {}).get(g.spec.name, "object")
        if g.spec.kind != "categorical" or not dtype.startswith(("int", "uint", "float", "Int", "UInt", "Float")):
            return None
        cats = g.spec.categories
        if not all(isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool) for c in cats):
            return None
        return np.array([*cats, np.nan] if g.spec.nullable else list(cats), dtype=float)

    # -- sampling -----------------------------------------------------------------------
    def _sample_table(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        exact = [self.support_ is not None and self.support_[j] is not None for j in range(len(self.cells_))]
        binned = [j for j, g in enumerate(self.cells_) if not exact[j] and g.edges is not None]
        codes, within = self._copula.cells(n_samples, rng, stratified=self.stratified, positions_for=binned)
        out = {}
        for j, g in enumerate(self.cells_):
            name = g.spec.name
            if exact[j]:
                out[name] = self.support_[j][codes[j]]
            elif g.spec.kind == "categorical" and self._numeric_categories[j] is not None:
                out[name] = self._numeric_categories[j][codes[j]]  # restored to the input's numeric dtype
            else:
                out[name] = g.decode(codes[j], rng, within.get(j, _NO_WITHIN)).to_numpy()
        return pd.DataFrame(out, copy=False)


def _share(cost: dict, share: float) -> dict:
    """``share`` of a cost ``{"rho": .}`` or ``{"epsilon": .}``."""
    return {k: v * share for k, v in cost.items()}
