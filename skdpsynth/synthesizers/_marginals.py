"""DP-Marginals: independent noisy one-way marginals (a baseline)."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.synthesizers._engine import MarginalEngine, size_estimate
from skdpsynth.utils._param_validation import Interval

__all__ = ["DPMarginalsSynthesizer"]


def noisy_probabilities(counts: np.ndarray) -> np.ndarray:
    """Clip noisy counts at zero and normalise (uniform when everything is clipped)."""
    c = np.clip(np.asarray(counts, dtype=float), 0, None)
    total = c.sum()
    return c / total if total > 0 else np.full(len(c), 1.0 / len(c))


class DPMarginalsSynthesizer(BaseTabularSynthesizer):
    """Independent one-way marginals with geometric noise; columns sampled independently.

    The PEARL paper's "DP-Marginals" baseline: it keeps every column's
    distribution and no dependence between columns.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort. ``None`` = exact marginals, not private.
    delta : float, default=1e-6
        Used only to discover categories when no schema is given.
    schema : TableSchema, dict, path or None, default=None
        Public domain; estimated under DP with ``domain_share`` of the budget when None.
    n_bins : int, default=32
        Bins per continuous column.
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose ("parallel": they are different people).
    random_state : int, Generator or None, default=None
        Seeds everything that is not privacy noise (the grid's within-bin
        draws, sampling).
    reproducible_noise : bool, default=False
        Derive the privacy noise from ``random_state`` (for tests and papers
        only: such a release is not publishable). By default the noise comes
        from fresh OS entropy and nothing can regenerate it.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). Each column's
    histogram over the public grid (missing cell included) has L1 sensitivity 1;
    each gets ``epsilon_model / d`` under the two-sided geometric mechanism, so
    the d marginals compose to ``epsilon_model`` (sequential composition); they
    are queries of the private table through the shared marginal engine
    (:mod:`._engine`), and ``n_estimate_`` is the inverse-variance mean of their
    totals (post-processing). On ``partial_fit`` the new cohort's noisy counts
    are added to the old ones.
    """

    _takes_table = True  # the fit receives a PrivateTable, never the rows

    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, schema=None, n_bins=32, domain_share=0.1,
                 cohort_composition="parallel", random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    def _fit_table(self, table, ctx: FitContext):
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.counts_ = [np.zeros(g.n_cells) for g in self.grid_.columns]
        d = len(self.grid_.columns)
        eps_col = table.remaining_epsilon() / d if table.private else None
        engine = MarginalEngine(table, self.grid_)
        one_way = [engine.measure((j,), epsilon=eps_col, target=f"histogram of column {g.spec.name!r}")
                   for j, g in enumerate(self.grid_.columns)]
        self.counts_ = [c + m.counts for c, m in zip(self.counts_, one_way)]
        # every person is in one cell of each histogram: each noisy total estimates n
        self.n_estimate_ = max(int(round(size_estimate(one_way))), 1)
        self.marginals_ = [noisy_probabilities(c) for c in self.counts_]

    def _sample_table(self, n_samples, rng):
        codes = np.column_stack([rng.choice(len(p), size=n_samples, p=p) for p in self.marginals_])
        return self.grid_.decode(codes, rng)
