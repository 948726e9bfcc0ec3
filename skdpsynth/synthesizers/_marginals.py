"""DP-Marginals: independent noisy one-way marginals (a baseline)."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.privacy._mechanisms import geometric_mechanism
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
    the d marginals compose to ``epsilon_model`` (sequential composition). On
    ``partial_fit`` the new cohort's noisy counts are added to the old ones.
    """

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

    def _fit_table(self, X, ctx: FitContext):
        accountant = ctx.accountant
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.counts_ = [np.zeros(g.n_cells) for g in self.grid_.columns]
        codes = self.grid_.encode(X)
        d = codes.shape[1]
        eps_col = accountant.remaining_epsilon() / d if accountant.private else None
        for j, g in enumerate(self.grid_.columns):
            exact = np.bincount(codes[:, j], minlength=g.n_cells)
            if eps_col is None:
                accountant.declare_nonprivate(f"histogram of column {g.spec.name!r}")
                noisy = exact
            else:
                noisy = geometric_mechanism(exact, sensitivity=1.0, epsilon=eps_col, noise=ctx.noise,
                                            accountant=accountant, target=f"histogram of column {g.spec.name!r}")
            self.counts_[j] = self.counts_[j] + noisy
            if j == 0:  # every person is in one cell of each histogram: its noisy total estimates n
                self.n_estimate_ = max(int(noisy.sum()), 1)
        self.marginals_ = [noisy_probabilities(c) for c in self.counts_]

    def _sample_table(self, n_samples, rng):
        codes = np.column_stack([rng.choice(len(p), size=n_samples, p=p) for p in self.marginals_])
        return self.grid_.decode(codes, rng)
