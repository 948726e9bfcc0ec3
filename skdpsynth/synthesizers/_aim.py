"""AIM (McKenna, Mullins, Sheldon & Miklau 2022): adaptive, iterative, workload-aware marginal selection, zCDP.

private-pgm's pipeline on the shared engine (:mod:`._engine`: queries of the private table, the size estimate,
the junction-tree estimate of :mod:`._graphical_model`, the compression of :mod:`._compression`); bounded
junction trees in :mod:`._junction_tree`, the workload, candidates and model answers in :mod:`._aim_selection`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.exceptions import PrivacyBudgetError
from skdpsynth.privacy import BudgetRecord, approx_dp_to_zcdp
from skdpsynth.synthesizers._aim_selection import (
    candidates_from_workload,
    model_answers,
    resolve_workload,
    weighted_workload,
)
from skdpsynth.synthesizers._compression import Compression
from skdpsynth.synthesizers._decoding import FineDecoder
from skdpsynth.synthesizers._engine import MarginalEngine, fit_model, pool, size_estimate
from skdpsynth.synthesizers._graphical_model import Measurement, combine
from skdpsynth.synthesizers._junction_tree import build_junction_tree, grow, grow_cells
from skdpsynth.utils._param_validation import Interval

__all__ = ["AIMSynthesizer"]

_BIAS = math.sqrt(2.0 / math.pi)
_SELECT_SHARE = 0.1  # of each round's rho, as AIM


class AIMSynthesizer(BaseTabularSynthesizer):
    """AIM: adaptive and iterative workload-aware marginals with a graphical-model estimate (zCDP).

    1. Measure every 1-way marginal on the public grid (discrete Gaussian,
       ``sigma = sqrt(T / (2 * 0.9 rho))``); merge cells whose noisy count is
       below ``3 sigma``: an unordered column's into one "rare" cell (as MST),
       an ordered column's into runs of adjacent cells that reach ``3 sigma``.
    2. Rounds: among the candidates (the workload's downward closure, each
       weighted by its overlap with the workload) whose addition keeps the
       junction tree under ``max_model_cells * rho_used / rho`` cells, select
       by the exponential mechanism the one whose model marginal is worst,
       score ``w_r (||M_r(D) - M_r(model)||_1 - sqrt(2/pi) sigma n_r)``
       (error minus the expected noise of measuring it); measure it; re-estimate
       the model. When the estimate moved by less than the expected noise,
       halve ``sigma`` and double the selection's epsilon (annealing); the last
       round spends exactly what is left.
    3. The graphical model minimises the inverse-variance weighted squared
       error to all measurements on a junction tree covering them; sampling
       draws clique by clique; binned columns are decoded through a DP fine
       1-way marginal (:mod:`._decoding`).

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort. ``None``: exact marginals, greedy selection until
        every candidate is within 0.5 % of n in L1 (not private).
    delta : float, default=1e-9
        zCDP is converted to (epsilon, delta) at this delta (minus the
        domain's share when ``schema`` is None); must be > 0 when ``epsilon`` is set.
    schema : TableSchema, dict, path or None, default=None
        Public domain; estimated under DP with ``domain_share`` of the budget when None.
    n_bins : int, default=32
        Bins per continuous column (integer ranges of at most ``n_bins`` values
        get one cell per value).
    workload : int, list of tuples of str, dict, or None, default=None
        Marginals the release should preserve: None or ``k`` = all 2-way /
        ``k``-way marginals; a list of column-name tuples; or a dict of
        column-name tuple -> weight > 0 (AIM's weighted workload: e.g. the pairs
        with an outcome column weighted up for a release meant for prediction).
    rounds : int or None, default=None
        AIM's ``T``, which sets the first rounds' noise (at least ``d + 1``).
        None: ``4 d``, or ``16 d`` when ``epsilon`` is None (``T`` then only caps
        the greedy rounds and paces the model-size limit). The paper's ``16 d``
        spends the first rounds' budget too thinly at education scale: on UCI
        dropout (3,096 people, eps 1) TSTR macro-F1 0.56 at ``16 d`` against 0.61
        at ``4 d`` (4 seeds each), on Adult 0.773 against 0.774 in 5.6 against
        3.1 CPU seconds (``benchmarks/results/aim_tuning.md``).
    max_model_cells : int, default=1_000_000
        Most cells in the junction tree's tables (AIM's model-size limit, grown
        in proportion to the budget used).
    max_iters : int, default=150
        Estimation steps at the end (a tenth of them for the first, 1-way model and after each
        round, warm-started): IPF-like steps while they descend, else mirror descent
        (:func:`._graphical_model.estimate`).
    compress : bool, default=True
        Merge cells with noisy 1-way count below ``3 sigma`` (categories into one
        rare cell, ordered columns into adjacent runs; decoded by their noisy 1-way
        proportions).
    decode_share : float, default=0.1
        Share of the zCDP budget spent on fine 1-way marginals of the binned
        columns (values drawn inside their bin from them); 0 = uniform inside the bin.
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose.
    random_state : int, Generator or None, default=None
        Seeds everything that is not privacy noise (the model draws used to
        score candidates that no tree clique covers, sampling).
    reproducible_noise : bool, default=False
        Derive the privacy noise from ``random_state`` (tests and papers only:
        such a release is not publishable).

    Attributes
    ----------
    grid_ : PublicGrid
        Cells of every column.
    maps_ : list of ndarray
        Per column, the compressed cell of each grid cell.
    compression_ : Compression
        Per column and compressed cell, its grid cells and their noisy 1-way proportions (decoding).
    workload_ : list of tuple of str
        The workload's marginals.
    selected_ : list of tuple of str
        The marginals selected by the rounds, in order.
    measurements_ : list of (tuple of str, ndarray of int64, float, int)
        Every noisy marginal (on compressed cells, 1-ways on the full grid):
        columns, counts, noise standard deviation, cohort.
    model_ : MarkovModel
        The estimated graphical model (junction tree, potentials, marginals).
    cohort_measurements_ : list of list of Measurement
        Per cohort, one inverse-variance combined measurement per marginal (post-processing).
    n_hat_ : float
        Number of people the model represents (noisy 1-way totals, all cohorts).
    n_rounds_ : int
        Selection rounds run in the first cohort.
    rho_ : float
        zCDP spent by the model (fine marginals included) in the first cohort.
    n_estimate_ : int
        Inverse-variance mean of the latest cohort's noisy 1-way totals.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). With ``rho`` the
    zCDP budget left after the domain, ``rho_f = decode_share * rho`` goes to
    the fine marginals (L2 sensitivity 1 each, ``rho_f / k`` for each of the
    ``k`` binned columns) and ``rho_m = rho - rho_f`` to AIM:

    * 1-way marginals: L2 sensitivity 1 each, ``1 / (2 sigma^2)`` each with
      ``sigma = sqrt(T / (2 * 0.9 rho_m))``.
    * Selection: ``M_r(D)`` changes in one cell by 1, so the score changes by
      at most ``w_r`` (``w_r`` comes from the public workload and its weights);
      the model estimate, the bias term and the candidate set (model size)
      depend only on earlier releases and the public domain.
      Sensitivity ``max_r w_r`` over the candidates of the round; the
      exponential mechanism with ``epsilon_t`` is ``epsilon_t^2 / 8``-zCDP
      (Cesar & Rogers 2021).
    * Measurement: L2 sensitivity 1, ``1 / (2 sigma_t^2)``-zCDP.
    * Annealing and stopping depend only on released values; every round's
      cost is charged before it runs and the last round spends exactly what
      :meth:`~skdpsynth.privacy.BudgetAccountant.remaining_rho` reports, so the
      adaptive composition (rho adds up) never exceeds ``rho``; the total is
      converted once to (epsilon, delta) (Canonne, Kamath & Steinke 2020).

    Estimation, compression (a function of the noisy 1-way counts), the model
    draws and sampling are post-processing.
    ``partial_fit`` keeps the first cohort's tree and compression and measures
    every distinct marginal once more on the new cohort (``rho_m`` split
    equally); the cohorts' estimates add up (each cohort pays its own budget).
    """

    _zcdp_model = True  # its clipped-value count is Gaussian too (see BaseTabularSynthesizer)
    _takes_table = True  # the fit receives a PrivateTable, never the rows
    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "workload": [Interval(Integral, 1, None, closed="left"), list, tuple, dict, None],
        "rounds": [Interval(Integral, 1, None, closed="left"), None],
        "max_model_cells": [Interval(Integral, 1, None, closed="left")],
        "max_iters": [Interval(Integral, 1, None, closed="left")],
        "compress": ["boolean"],
        "decode_share": [Interval(Real, 0, 1, closed="left")],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=1.0, delta=1e-9, schema=None, n_bins=32, workload=None, rounds=None,
                 max_model_cells=1_000_000, max_iters=150, compress=True, decode_share=0.1, domain_share=0.1,
                 cohort_composition="parallel", random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.workload = workload
        self.rounds = rounds
        self.max_model_cells = max_model_cells
        self.max_iters = max_iters
        self.compress = compress
        self.decode_share = decode_share
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    # -- planning -------------------------------------------------------------------------
    def _delta_required_by(self) -> str:
        return "measures under zCDP"

    def _check_input(self, X, y, reset):
        data = super()._check_input(X, y, reset)
        resolve_workload(self.workload, [str(c) for c in data.frame.columns])  # names checked before any spend
        return data

    def _planned_model_cost(self, columns: tuple[str, ...], eps_dom: float, delta_dom: float) -> list[BudgetRecord]:
        rho = approx_dp_to_zcdp(self.epsilon - eps_dom, self.delta - delta_dom)
        return [BudgetRecord("discrete gaussian / exponential (zCDP)", "AIM model", "zcdp", rho=rho)]

    def _split(self, rho: float) -> tuple[float, float]:
        rho_f = self.decode_share * rho if self.decoder_.columns else 0.0
        return rho_f, rho - rho_f

    # -- fitting ----------------------------------------------------------------------------
    def _fit_table(self, table, ctx: FitContext):
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.decoder_ = FineDecoder(self.grid_, enabled=self.decode_share > 0)
            self.measurements_ = []
        rho = rho_f = rho_m = None
        if table.private:
            rho = table.remaining_rho()
            rho_f, rho_m = self._split(rho)
            if not rho_m > 0:
                raise PrivacyBudgetError("AIMSynthesizer: no zCDP budget is left for the model; raise epsilon or "
                                         "delta.")
            table.require(self.decoder_.planned(rho_f) + [BudgetRecord(
                "discrete gaussian / exponential (zCDP)", "AIM rounds", "zcdp", rho=rho_m)], what="AIMSynthesizer")
        if rho is None or rho_f > 0:
            self.decoder_.measure(table, rho_f)
        if ctx.first:
            self.rho_ = math.inf if rho is None else rho
            self._fit_first(MarginalEngine(table, self.grid_), rho_m, ctx)
        else:
            self._fit_later(MarginalEngine(table, self.grid_, self.maps_), rho_m, ctx)

    def _names(self, clique) -> tuple[str, ...]:
        return tuple(self.grid_.columns[a].spec.name for a in clique)

    def _measure(self, engine: MarginalEngine, clique, sigma: float, ctx: FitContext) -> Measurement:
        """The clique's marginal at noise ``sigma`` (exact when 0), logged in ``measurements_``."""
        m = engine.measure(clique, rho=1 / (2 * sigma**2) if sigma > 0 else None)
        self.measurements_.append((self._names(clique), m.counts, float(sigma), ctx.cohort))
        return m

    def _fit_first(self, engine: MarginalEngine, rho: float | None, ctx: FitContext) -> None:
        d = len(self.grid_.columns)
        weights = weighted_workload(self.workload, [g.spec.name for g in self.grid_.columns])
        workload = list(weights)
        self.workload_ = [self._names(w) for w in workload]
        candidates = candidates_from_workload(workload, weights) or {(j,): 1.0 for j in range(d)}
        # the 1-way marginals take d / T of 90 % of the budget; without noise T only paces the model-size limit
        rounds = max(self.rounds or (4 if rho is not None else 16) * d, d + 1)
        adaptive = any(len(r) > 1 for r in candidates)
        sigma = 0.0 if rho is None else math.sqrt((rounds if adaptive else d) / (2 * (0.9 if adaptive else 1) * rho))
        one_way = [self._measure(engine, (j,), sigma, ctx) for j in range(d)]
        self.n_estimate_ = max(int(round(size_estimate(one_way))), 1)
        self.compression_ = Compression(self.grid_, one_way, 3 * sigma if (self.compress and sigma > 0) else None)
        self.maps_ = engine.maps = self.compression_.maps
        meas = [self.compression_.compress(m) for m in one_way]
        self.n_hat_ = float(self.n_estimate_)
        # only the first round's scores read this model; the rounds and the final estimate refine it (warm starts)
        first_iters = max(self.max_iters // 10, 5) if adaptive else self.max_iters
        model = fit_model(meas, self.compression_.sizes, self.n_hat_, iters=first_iters)
        self.selected_ = []
        self.n_rounds_ = 0
        if adaptive:
            model, meas = self._rounds(engine, candidates, model, meas, sigma, rho, rounds, ctx)
        self.cohort_measurements_ = [combine(meas)]
        self.model_ = fit_model(self.cohort_measurements_[0], self.compression_.sizes, self.n_hat_, model=model,
                                iters=self.max_iters)

    def _rounds(self, engine, candidates, model, meas, sigma, rho, rounds, ctx):
        """AIM's selection rounds (greedy and exact when ``rho`` is None); returns the model and measurements."""
        epsilon = 0.0 if rho is None else math.sqrt(8 * _SELECT_SHARE * rho / rounds)
        n_draws = int(np.clip(2 * self.n_hat_, 10_000, 50_000))
        sizes = model.tree.sizes
        iters = max(self.max_iters // 10, 5)
        terminate, sized = False, (None, None)  # the candidates' grown sizes for the last tree
        while not terminate:
            self.n_rounds_ += 1
            if rho is None:
                terminate, used = self.n_rounds_ >= rounds, self.n_rounds_ / rounds
            else:
                left = engine.table.remaining_rho()
                if left < 2 * (1 / (2 * sigma**2) + epsilon**2 / 8):
                    sigma = math.sqrt(1 / (2 * (1 - _SELECT_SHARE) * left))
                    epsilon = math.sqrt(8 * _SELECT_SHARE * left) * (1 - 1e-12)
                    terminate = True
                used = (rho - left + 1 / (2 * sigma**2) + epsilon**2 / 8) / rho
            jt = model.tree
            if sized[0] != jt.cliques:  # a round that measured a covered clique keeps the tree
                sized = (list(jt.cliques), grow_cells(jt, list(candidates)))
            limit = max(self.max_model_cells * used, jt.cells())
            allowed = [r for r, g in zip(candidates, sized[1]) if g <= limit]
            estimates = model_answers(model, allowed, n_draws, ctx.rng)
            # quality w_r (||M_r(D) - M_r(model)||_1 - sqrt(2/pi) sigma n_r): the error less the expected noise
            pick = engine.select(allowed, [estimates[r] for r in allowed], rho=None if rho is None else epsilon**2 / 8,
                                 weights=[candidates[r] for r in allowed],
                                 penalties=[_BIAS * sigma * estimates[r].size for r in allowed],
                                 target=f"AIM selection round {self.n_rounds_}")
            r = allowed[pick]
            m = self._measure(engine, r, sigma, ctx)
            if rho is None and np.abs(m.counts - estimates[r]).sum() <= 0.005 * self.n_hat_:
                self.n_rounds_ -= 1  # greedy: every candidate is within 0.5 % of n in L1
                self.measurements_.pop()
                break
            meas.append(m)
            self.selected_.append(self._names(r))
            if jt.home(r) < 0:
                fresh = build_junction_tree(sizes, sorted({m.clique for m in meas}))
                grown_jt = grow(jt, r)
                jt = fresh if fresh.cells() <= grown_jt.cells() else grown_jt
            before = estimates[r]
            model = fit_model(combine(meas), sizes, self.n_hat_, tree=jt, model=model, iters=iters)
            if rho is not None and np.abs(model.project(r) - before).sum() <= _BIAS * sigma * before.size:
                sigma, epsilon = sigma / 2, epsilon * 2
        return model, meas

    def _fit_later(self, engine: MarginalEngine, rho: float | None, ctx: FitContext) -> None:
        cliques = sorted({m.clique for m in self.cohort_measurements_[0]}, key=lambda c: (len(c), c))
        sigma = 0.0 if rho is None else math.sqrt(len(cliques) / (2 * rho))
        meas = [self._measure(engine, cl, sigma, ctx) for cl in cliques]
        self.n_estimate_ = max(int(round(size_estimate([m for m in meas if len(m.clique) == 1]))), 1)
        self.cohort_measurements_.append(combine(meas))
        pooled = pool(self.cohort_measurements_)
        self.n_hat_ = size_estimate([m for m in pooled if len(m.clique) == 1])
        self.model_ = fit_model(pooled, self.compression_.sizes, self.n_hat_, model=self.model_, iters=self.max_iters)

    # -- sampling ---------------------------------------------------------------------------
    def _sample_table(self, n_samples, rng):
        comp = self.model_.sample(n_samples, rng)
        return self.decoder_.decode(self.compression_.expand(comp, rng), rng)
