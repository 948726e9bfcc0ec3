"""MST (McKenna, Miklau & Sheldon 2021): noisy 1- and 2-way marginals on a DP maximum spanning tree.

private-pgm's pipeline on the shared engine (:mod:`._engine`): measure the 1-way marginals, compress, select
the tree, measure its 2-way marginals, estimate the graphical model, sample.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.exceptions import PrivacyBudgetError
from skdpsynth.privacy import BudgetRecord, approx_dp_to_zcdp, project_to_simplex
from skdpsynth.synthesizers._compression import Compression
from skdpsynth.synthesizers._decoding import FineDecoder
from skdpsynth.synthesizers._engine import MarginalEngine, fit_model, pool, size_estimate
from skdpsynth.synthesizers._graphical_model import Measurement, pair_start
from skdpsynth.synthesizers._junction_tree import build_junction_tree
from skdpsynth.utils._param_validation import Interval

__all__ = ["MSTSynthesizer"]

_ITERS = 20  # estimation steps from the warm start (pair_start)


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
    4. Estimate the graphical model closest to every measurement (Private-PGM's
       inverse-variance weighted least squares on the tree's junction tree, the
       estimate AIM uses; :func:`._engine.fit_model`), started from the
       measured pair tables projected and raked to the combined 1-way counts
       (:func:`._graphical_model.pair_start`, post-processing), and sample it
       clique by clique; merged cells are decoded by their noisy 1-way
       proportions.
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
        Merge cells with noisy 1-way count below ``3 sigma`` (decoded by their
        noisy 1-way proportions).
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
    compression_ : Compression
        Compressed cells of every column (maps, merged groups and their proportions).
    maps_ : list of ndarray
        For every column, the compressed cell of each grid cell.
    edges_ : list of (int, int)
        The selected tree (column indices).
    one_way_counts_ : list of ndarray of int64
        Noisy 1-way counts on the full grid, summed over cohorts.
    two_way_counts_ : dict of (int, int) to ndarray of int64
        Noisy 2-way counts of the edges on compressed cells, summed over cohorts.
    cohort_measurements_ : list of list of Measurement
        Per cohort, the noisy marginals on compressed cells with their per-cell variances.
    model_ : MarkovModel
        The graphical model estimated from every cohort's measurements.
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
    _takes_table = True  # the fit receives a PrivateTable, never the rows
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
    def _fit_table(self, table, ctx: FitContext):
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.decoder_ = FineDecoder(self.grid_, enabled=self.decode_share > 0)
        d = len(self.grid_.columns)
        select = ctx.first and d > 2
        rho = rho_all = rho_f = None
        if table.private:
            rho_all = table.remaining_rho()
            rho_f = self.decode_share * rho_all if self.decoder_.columns else 0.0
            rho = rho_all - rho_f
            table.require(self.decoder_.planned(rho_f) + planned_records(d, rho, select), what="MSTSynthesizer's model")
        if rho is None or rho_f > 0:
            self.decoder_.measure(table, rho_f)
        r1, rs, r2 = budget_split(rho, d, select) if rho is not None else (None, None, None)

        engine = MarginalEngine(table, self.grid_)
        one_way = [engine.measure((j,), rho=None if r1 is None else r1 / d) for j in range(d)]
        self.n_estimate_ = max(int(round(size_estimate(one_way))), 1)
        if ctx.first:
            threshold = 3 * math.sqrt(one_way[0].variance) if (table.private and self.compress) else None
            self.compression_ = Compression(self.grid_, one_way, threshold)
            self.maps_ = self.compression_.maps
            self.one_way_counts_ = [np.zeros(len(m), dtype=np.int64) for m in self.maps_]
            self.cohort_measurements_ = []
        self.one_way_counts_ = [a + m.counts for a, m in zip(self.one_way_counts_, one_way)]
        meas = [self.compression_.compress(m) for m in one_way]
        engine.maps = self.maps_
        if ctx.first:
            self.edges_ = self._select(engine, meas, rs / (d - 1) if rs else None) if select else (
                [(0, 1)] if d == 2 else [])
            sizes = self.compression_.sizes
            self.two_way_counts_ = {e: np.zeros((sizes[e[0]], sizes[e[1]]), dtype=np.int64) for e in self.edges_}
            self.rho_ = math.inf if rho is None else rho_all
        for e in self.edges_:
            meas.append(engine.measure(e, rho=r2 / len(self.edges_) if r2 else None))
            self.two_way_counts_[e] = self.two_way_counts_[e] + meas[-1].counts
        self.cohort_measurements_.append(meas)
        pooled = pool(self.cohort_measurements_)
        total = size_estimate(pooled)
        sizes = self.compression_.sizes
        tree = build_junction_tree(sizes, sorted({m.clique for m in pooled}, key=lambda c: (len(c), c)))
        self.model_ = fit_model(pooled, sizes, total, tree=tree, potentials=pair_start(tree, pooled, total),
                                iters=_ITERS)

    def _select(self, engine: MarginalEngine, one_way: list[Measurement], rho_step: float | None):
        """Kruskal with exponential-mechanism steps (exact argmax when not private); returns the edges.

        Each step scores the pairs joining two components by the L1 distance between their marginal and the
        independent estimate from the noisy 1-way marginals (a public model).
        """
        d = len(one_way)
        # the independent model of the noisy 1-way marginals: each projected onto the counts summing to the
        # estimated number of people; a pair's estimate is the outer product of its two columns' shares
        total = size_estimate(one_way)
        shares = [project_to_simplex(np.asarray(m.counts, float), total) / total for m in one_way]
        pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
        estimates = total * np.concatenate([np.outer(shares[a], shares[b]).ravel() for a, b in pairs])
        cells = np.array([shares[a].size * shares[b].size for a, b in pairs])
        ends = np.array(pairs)
        component = np.arange(d)
        chosen = []
        for step in range(d - 1):
            open_ = component[ends[:, 0]] != component[ends[:, 1]]
            index = np.flatnonzero(open_)
            pick = pairs[index[engine.select([pairs[i] for i in index], estimates[np.repeat(open_, cells)],
                                             rho=rho_step, target=f"MST tree selection step {step + 1}")]]
            component[component == component[pick[0]]] = component[pick[1]]
            chosen.append(pick)
        return chosen

    # -- sampling -----------------------------------------------------------------
    def _sample_table(self, n_samples, rng):
        comp = self.model_.sample(n_samples, rng)
        return self.decoder_.decode(self.compression_.expand(comp, rng), rng)
