"""NPGC: a non-parametric Gaussian copula, differentially private end to end (papers/npgc-en.md).

This module: the public cells, the noisy marginals and the estimator; the
dependence (Kendall's tau, its private release, the copula) is in
:mod:`skdpsynth.synthesizers._npgc_dependence`. Figures: ``docs/npgc.md``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval

from skdpsynth._grid import ColumnGrid, _as_seconds, seconds_to_datetime
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord, approx_dp_to_zcdp
from skdpsynth.privacy._mechanisms import discrete_gaussian_mechanism, gaussian_sigma, geometric_mechanism
from skdpsynth.privacy._postprocess import project_to_simplex
from skdpsynth.synthesizers._npgc_dependence import (
    GaussianCopula,
    all_pairs_tau_a,
    noisy_kendall_tau,
    tau_to_correlation,
)

__all__ = ["NPGCSynthesizer"]

logger = logging.getLogger(__name__)

#: standard deviations below the noisy row count used as the public size ``a`` of the tau query
_N_BOUND_Z = 3.0
#: decode() ignores ``within`` for cells without width; passing it avoids drawing unused randomness
_NO_WITHIN = np.zeros(0)


@dataclass(frozen=True)
class NPGCColumnCells(ColumnGrid):
    """Public cells of one column, as :class:`ColumnGrid`, plus point cells at the bounds.

    Binned columns (continuous, datetime, wide integer ranges) get one cell for
    values exactly at each bound around the ``n_bins`` equal-width bins: point
    masses at the bounds (zero amounts, values clipped to the public bounds) are
    common. The layout depends on the schema only.
    """

    bound_cells: bool = False

    @property
    def n_value_cells(self) -> int:
        """Number of cells holding values."""
        return ColumnGrid.n_value_cells.fget(self) + (2 if self.bound_cells else 0)

    def encode(self, values: pd.Series) -> np.ndarray:
        """Cell index of every value (vectorised; values must satisfy the schema)."""
        kind = self.spec.kind
        if kind in ("categorical", "boolean"):
            codes = pd.Categorical(values.to_numpy(dtype=object), categories=list(self.spec.categories)).codes
            codes = codes.astype(np.int64)
        else:
            x = _as_seconds(values) if kind == "datetime" else values.to_numpy(dtype=float)
            isna = np.isnan(x)
            codes = np.full(len(x), -1, dtype=np.int64)
            xv = x[~isna]
            if self.integer_values is not None:
                codes[~isna] = np.rint(xv).astype(np.int64) - int(self.integer_values[0])
            else:
                c = np.searchsorted(self.edges[1:-1], xv, side="right")
                if self.bound_cells:
                    c = np.where(xv <= self.edges[0], -1, np.where(xv >= self.edges[-1], len(self.edges) - 1, c)) + 1
                codes[~isna] = c
        missing = codes < 0
        if missing.any():
            if self.missing_cell is None:
                raise ValueError(f"column {self.spec.name!r} has missing values but is not nullable.")
            codes[missing] = self.missing_cell
        return codes

    def decode(self, codes: np.ndarray, rng: np.random.Generator, within: np.ndarray | None = None) -> pd.Series:
        """Values for cell indices (see :meth:`ColumnGrid.decode`); point cells give the bound itself."""
        if not self.bound_cells:
            return ColumnGrid.decode(self, codes, rng, within)
        n_bins = len(self.edges) - 1
        codes = np.asarray(codes)
        miss = codes == self.missing_cell if self.spec.nullable else np.zeros(len(codes), bool)
        at_lo, at_hi = codes == 0, codes == n_bins + 1
        inner = np.clip(codes - 1, 0, n_bins - 1)
        u = rng.random(len(codes)) if within is None else within
        lo, hi = self.edges[inner], self.edges[inner + 1]
        x = lo + u * (hi - lo)
        if self.spec.kind == "integer":
            x = np.clip(np.floor(x + 0.5 * (hi - lo > 0)), np.ceil(lo), np.floor(hi))
        x = np.where(at_lo, self.edges[0], np.where(at_hi, self.edges[-1], x))
        x[miss] = np.nan
        if self.spec.kind == "datetime":
            return seconds_to_datetime(x)
        return pd.Series(x)


def build_cells(schema, n_bins: int, max_integer_cells: int) -> tuple[NPGCColumnCells, ...]:
    """The public cell layout of every column of ``schema`` (nothing is read from data)."""
    cells = []
    for spec in schema.columns:
        if spec.kind in ("categorical", "boolean"):
            cells.append(NPGCColumnCells(spec, None, None))
            continue
        lo, hi = spec.numeric_bounds
        if spec.kind == "integer" and hi - lo + 1 <= max(max_integer_cells, n_bins):
            cells.append(NPGCColumnCells(spec, None, np.arange(int(lo), int(hi) + 1)))
            continue
        if hi == lo:
            hi = lo + 1.0
        cells.append(NPGCColumnCells(spec, np.linspace(lo, hi, n_bins + 1), None, bound_cells=True))
    return tuple(cells)


class NPGCSynthesizer(BaseTabularSynthesizer):
    """Non-parametric Gaussian copula (NPGC), differentially private end to end.

    Each column's distribution is a histogram (noisy under DP), the dependence
    the correlation of a Gaussian copula estimated from Kendall's tau. Sampling
    inverts each column's CDF at correlated normals; missing values occupy the
    top slice of each column's unit interval, so missingness keeps its
    relations with the other columns (papers/npgc-en.md).

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
    max_integer_cells : int, default=200
        Integer columns with at most this many values get one cell per value.
    marginal_share : float, default=0.5
        Share of the model's budget (what the domain leaves) spent on the
        marginals, the rest on the correlation (all of it with one column).
    domain_share : float, default=0.1
        Share of ``epsilon`` and ``delta`` spent on the domain when ``schema`` is None.
    stratified : bool, default=True
        Draw the rows of one ``sample`` call jointly so that every column's
        frequencies match the model's marginal to within one row (rank-stratified
        uniforms; the copula is unchanged): no multinomial noise accumulating
        when synthetic data are refitted generation after generation.
        ``False``: i.i.d. rows, generated in chunks.
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
    n_estimate_ : int
        Number of people seen, all cohorts: under DP the rounded sum of the
        cohorts' ``n_hat`` (post-processing of the noisy marginals).
    cohort_sizes_ : list of float
        ``n_hat`` of each cohort (weights of the correlation).

    Privacy
    -------
    Neighbouring relation: add or remove one person (one row). Protected: every
    value of every row, whether it is missing, and the number of people.
    Public: the column names and dtypes, and ``schema`` when given. Every noisy
    statistic is an integer plus integer noise; the domain, when not given, is
    estimated under DP by the base class with ``domain_share`` of the budget.

    *Marginals*: each column's histogram over its public cells (missing cell
    included) changes by 1 in one cell per person, so the d histograms form one
    integer vector of L2 sensitivity ``sqrt(d)``: discrete Gaussian mechanism at
    ``rho_m = marginal_share * rho`` (``rho`` = what the domain leaves,
    :meth:`BudgetAccountant.remaining_rho`); with ``delta=0``, geometric noise
    (L1 sensitivity d) at ``marginal_share`` of the epsilon left.

    *Row count*: never read. Each noisy histogram sums to n plus noise; their
    inverse-variance average ``n_hat`` and ``a = max(2, floor(n_hat - 3 sd))``
    are post-processing of released counts.

    *Dependence*: per column pair, concordant minus discordant pairs on the data
    padded with ``max(0, a - n)`` dummies in cell (0, 0), re-expressed on the
    public ``C(a, 2)`` pairs: integers of sensitivity ``2 (a - 1)`` for every
    ``a`` (proof in :func:`~skdpsynth.synthesizers._npgc_dependence.noisy_kendall_tau`).
    The ``P = d (d - 1) / 2`` pairs get one discrete Gaussian mechanism (L2
    ``sqrt(P) 2 (a - 1)``) at ``rho_c = rho - rho_m``, or geometric noise (L1
    ``P 2 (a - 1)``) when ``delta=0``; divided by ``C(a, 2)`` they are tau-a.

    *Post-processing*: simplex projection of the counts (total ``n_hat``); tau
    to the latent correlation (tie-aware bridge), nearest correlation matrix; sampling.

    *Accounting*: rho_m + rho_c = rho, converted once to (epsilon, delta -
    delta_domain) (Canonne, Kamath & Steinke 2020): a cohort never spends more
    than (``epsilon``, ``delta``). ``partial_fit`` spends a fresh budget on the
    new cohort only, adds its noisy counts and averages the correlations
    weighted by ``n_hat``. The PyPI reference ``npgc`` 0.3.0 is not DP (see
    ``docs/npgc.md``).

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

    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "max_integer_cells": [Interval(Integral, 1, None, closed="left")],
        "marginal_share": [Interval(Real, 0, 1, closed="neither")],
        "stratified": ["boolean"],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, schema=None, n_bins=32, max_integer_cells=200,
                 marginal_share=0.5, domain_share=0.1, stratified=True, cohort_composition="parallel",
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

    def _planned_model_cost(self, X: pd.DataFrame, eps_dom: float, delta_dom: float) -> list[BudgetRecord]:
        eps_left, delta_left = self.epsilon - eps_dom, self.delta - delta_dom
        if eps_left <= 0:
            return [BudgetRecord("geometric", "NPGC model", "pure", epsilon=max(eps_left, 0.0) + 1e-12)]
        if delta_left > 0:
            return [BudgetRecord("gaussian", "NPGC model", "zcdp", rho=approx_dp_to_zcdp(eps_left, delta_left))]
        return [BudgetRecord("geometric", "NPGC model", "pure", epsilon=eps_left)]

    # -- fitting ------------------------------------------------------------------------
    def _fit_table(self, X: pd.DataFrame, ctx: FitContext) -> None:
        if ctx.first:
            self._start_model()
        private = ctx.accountant.private
        cells = np.array([g.n_cells for g in self.cells_])
        d = len(cells)
        codes = np.column_stack([g.encode(X[g.spec.name]) for g in self.cells_])
        offsets = np.concatenate([[0], np.cumsum(cells)])
        exact = np.bincount((codes + offsets[:-1]).ravel(), minlength=int(offsets[-1]))
        if private:
            costs = self._split_budget(ctx.accountant, d)
            counts, n_hat, a = self._noisy_marginals(exact, cells, offsets, costs[0], ctx)
            self._exact_only = False
        else:
            counts, n_hat = exact, float(len(X))
            ctx.accountant.declare_nonprivate(f"histograms of all {d} columns (exact empirical marginals)")
            self._update_ecdf(X)
        per_col = [counts[offsets[j]:offsets[j + 1]] for j in range(d)]
        probs = [_probabilities(c, n_hat if private else None) for c in per_col]
        corr = np.eye(d)
        if d > 1:
            if private:
                tau = noisy_kendall_tau(codes, cells, a, noise=ctx.noise, accountant=ctx.accountant, **costs[1])
            else:
                tau = all_pairs_tau_a(codes, cells)
                ctx.accountant.declare_nonprivate(f"Kendall's tau of all {len(tau)} column pairs")
            corr = tau_to_correlation(np.clip(tau, -1.0, 1.0), probs, n_hat, d)
        # fold the cohort in (post-processing)
        self.cell_counts_ = [old + new for old, new in zip(self.cell_counts_, per_col)]
        self.cohort_sizes_ = [*self.cohort_sizes_, float(n_hat)]
        self._cohort_correlations = [*self._cohort_correlations, corr]
        self._refresh()

    def _start_model(self) -> None:
        self.cells_ = build_cells(self.schema_, self.n_bins, self.max_integer_cells)
        self.cell_counts_ = [np.zeros(g.n_cells, dtype=np.int64) for g in self.cells_]
        self._ecdf = [None if g.spec.kind in ("categorical", "boolean") else {} for g in self.cells_]
        self._exact_only = True
        self.cohort_sizes_ = []
        self._cohort_correlations = []

    def _split_budget(self, accountant: BudgetAccountant, d: int) -> tuple[dict, dict | None]:
        """Costs of the marginals and of the tau vector (``{"rho": .}`` or ``{"epsilon": .}``), checked up front."""
        share = self.marginal_share if d > 1 else 1.0
        zcdp = accountant.delta_zcdp > 0
        total = accountant.remaining_rho() if zcdp else accountant.remaining_epsilon()
        key = "rho" if zcdp else "epsilon"
        costs = ({key: total * share}, {key: total - total * share} if d > 1 else None)
        plan = [BudgetRecord("planned", "NPGC model", "zcdp" if zcdp else "pure", **c) for c in costs if c]
        accountant.require(plan, what=f"{type(self).__name__}.fit")
        return costs

    def _noisy_marginals(self, exact, cells, offsets, cost: dict, ctx: FitContext):
        """Noisy integer histograms of all columns in one mechanism; returns (counts, n_hat, a)."""
        d = len(cells)
        kw = {"noise": ctx.noise, "accountant": ctx.accountant,
              "target": f"histograms of all {d} columns on the public grid ({int(offsets[-1])} cells)"}
        if "rho" in cost:
            noisy = discrete_gaussian_mechanism(exact, l2_sensitivity=math.sqrt(d), rho=cost["rho"], **kw)
            var_cell = gaussian_sigma(math.sqrt(d), cost["rho"]) ** 2  # the discrete Gaussian's variance is <= this
        else:
            noisy = geometric_mechanism(exact, sensitivity=float(d), epsilon=cost["epsilon"], **kw)
            alpha = math.exp(-cost["epsilon"] / d)
            var_cell = 2 * alpha / (1 - alpha) ** 2
        # every column's noisy histogram sums to n + noise: inverse-variance average (post-processing)
        sums = np.add.reduceat(noisy, offsets[:-1]).astype(float)
        w = 1.0 / cells.astype(float)
        n_hat = float(np.sum(w * sums) / w.sum())
        sd = math.sqrt(var_cell / w.sum())
        a = max(2, math.floor(n_hat - _N_BOUND_Z * sd))
        logger.debug("NPGC: noisy n %.1f (sd %.2f), public size of the tau query %d", n_hat, sd, a)
        return noisy, max(n_hat, 0.0), a

    def _update_ecdf(self, X: pd.DataFrame) -> None:
        """Exact empirical CDFs of numeric / datetime columns (non-private mode only)."""
        for j, g in enumerate(self.cells_):
            if self._ecdf[j] is None:
                continue
            col = X[g.spec.name]
            vals = col.dropna().to_numpy().astype("datetime64[ns]" if g.spec.kind == "datetime" else float)
            uniq, cnt = np.unique(vals, return_counts=True)
            old = self._ecdf[j]
            if old:
                uniq, inv = np.unique(np.concatenate([old["values"], uniq]), return_inverse=True)
                cnt = np.bincount(inv, weights=np.concatenate([old["counts"], cnt]))
            self._ecdf[j] = {"values": uniq, "counts": cnt.astype(float),
                             "missing": (old.get("missing", 0.0) if old else 0.0) + float(col.isna().sum())}

    def _refresh(self) -> None:
        """Recompute the sampling state from the accumulated statistics (post-processing)."""
        total = float(sum(self.cohort_sizes_))
        self.n_estimate_ = max(int(round(total)), 1)
        probs = [_probabilities(c, None if self._exact_only else total) for c in self.cell_counts_]
        self.support_ = self._exact_support(probs) if self._exact_only else None
        self.probabilities_ = probs
        self._numeric_categories = [self._numeric_lookup(g) for g in self.cells_]
        weights = np.maximum(np.asarray(self.cohort_sizes_, dtype=float), 1.0)
        corr = sum(w * c for w, c in zip(weights, self._cohort_correlations)) / weights.sum()
        self._copula = GaussianCopula(corr, probs)
        self.correlation_ = self._copula.correlation

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


def _probabilities(counts: np.ndarray, total: float | None) -> np.ndarray:
    """Cell probabilities: exact counts normalised, or noisy counts projected onto the simplex of ``total``."""
    if total is None:
        return counts / max(counts.sum(), 1.0)
    return project_to_simplex(counts, max(total, 1.0)) / max(total, 1.0)
