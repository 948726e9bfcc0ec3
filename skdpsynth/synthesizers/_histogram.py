"""DP-Histogram: the full contingency table on the public grid plus geometric noise (a baseline)."""

from __future__ import annotations

import math

import numpy as np

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer
from skdpsynth.exceptions import SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._mechanisms import geometric_mechanism
from skdpsynth.synthesizers._marginals import noisy_probabilities

__all__ = ["DPHistogramSynthesizer"]


class DPHistogramSynthesizer(BaseTabularSynthesizer):
    """Full joint histogram over the public grid with two-sided geometric noise.

    Every cell of the cross product of the columns' public cells (missing cells
    included) gets a noisy count; samples are drawn from the clipped,
    normalised noisy table. It keeps every dependence the grid can express but
    only works for few columns: the number of cells is the product of the
    columns' cell counts, and the noise per cell does not shrink with it.

    Parameters
    ----------
    epsilon : float or None, default=1.0
        Budget per cohort. ``None`` = exact table, not private.
    delta : float, default=1e-6
        Used only to discover categories when no schema is given.
    schema : TableSchema, dict, path or None, default=None
        Public domain; estimated under DP with ``domain_share`` of the budget when None.
    n_bins : int, default=8
        Bins per continuous column (integer columns with at most ``n_bins``
        values get one cell per value).
    max_cells : int, default=10_000_000
        Refuse (with :class:`~skdpsynth.exceptions.SchemaError`) tables with
        more cells than this.
    domain_share : float, default=0.1
        Share of epsilon and delta spent on the domain when ``schema`` is None.
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose ("parallel": they are different people).
    random_state : int, Generator or None, default=None
        Seeds all randomness.

    Attributes
    ----------
    grid_ : PublicGrid
        The cells of every column.
    n_cells_ : int
        Cells of the joint table.
    counts_ : ndarray of int64
        Noisy counts, summed over cohorts (flattened, C order over the columns).
    probabilities_ : ndarray of float
        Clipped, normalised ``counts_``.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). The joint histogram
    has L1 sensitivity 1 (the person falls in exactly one cell), so the
    two-sided geometric mechanism with scale ``1 / epsilon_model`` is
    ``epsilon_model``-DP, where ``epsilon_model`` is what is left of ``epsilon``
    after the domain estimate (all of it when ``schema`` is given). Sampling is
    post-processing. ``partial_fit`` adds the new cohort's noisy table to the
    old one (each cohort is charged its own budget).

    The cell-count check runs before any budget is spent when ``schema`` is
    given; without a schema the categories are only known after the DP domain
    estimate, so a refusal then comes after the domain's share was spent.
    """

    def __init__(self, *, epsilon=1.0, delta=1e-6, schema=None, n_bins=8, max_cells=10_000_000, domain_share=0.1,
                 cohort_composition="parallel", random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.max_cells = max_cells
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state

    def _check_input(self, X, y, reset):
        if not (isinstance(self.n_bins, (int, np.integer)) and self.n_bins >= 1):
            raise ValueError(f"n_bins must be a positive integer, got {self.n_bins!r}.")
        if not (isinstance(self.max_cells, (int, np.integer)) and self.max_cells >= 1):
            raise ValueError(f"max_cells must be a positive integer, got {self.max_cells!r}.")
        frame = super()._check_input(X, y, reset)
        from skdpsynth.base import resolve_schema

        schema = resolve_schema(self.schema)
        if schema is not None and reset:  # refuse before any budget is spent
            self._check_cells(PublicGrid(schema, self.n_bins))
        return frame

    def _check_cells(self, grid: PublicGrid) -> int:
        sizes = [int(c) for c in grid.n_cells]
        total = math.prod(sizes)
        if total > self.max_cells:
            worst = sorted(zip(sizes, (g.spec.name for g in grid.columns)), reverse=True)[:5]
            listed = ", ".join(f"{name!r} ({n} cells)" for n, name in worst)
            raise SchemaError(
                f"DPHistogramSynthesizer: the joint table has {total:.3g} cells (> max_cells={self.max_cells}). "
                f"Largest columns: {listed}. Drop or merge columns, lower n_bins (now {self.n_bins}), or use "
                "MSTSynthesizer / DPMarginalsSynthesizer."
            )
        return total

    def _fit_table(self, X, accountant: BudgetAccountant, rngs, first):
        if first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.n_cells_ = self._check_cells(self.grid_)
            self.counts_ = np.zeros(self.n_cells_, dtype=np.int64)
        codes = self.grid_.encode(X)
        flat = np.ravel_multi_index(tuple(codes.T), tuple(int(c) for c in self.grid_.n_cells)) if codes.shape[1] else \
            np.zeros(len(X), dtype=np.int64)
        exact = np.bincount(flat, minlength=self.n_cells_)
        target = f"joint histogram of {codes.shape[1]} columns ({self.n_cells_} cells)"
        if not accountant.private:
            accountant.spend(BudgetRecord("exact (non-private)", target, "none", epsilon=math.inf))
            noisy = exact.astype(np.int64)
        else:
            eps_model = self.epsilon - sum(r.epsilon for r in accountant.records)
            noisy = geometric_mechanism(exact, sensitivity=1.0, epsilon=eps_model, rng=rngs["noise"],
                                        accountant=accountant, target=target)
        self.counts_ = self.counts_ + noisy
        self.probabilities_ = noisy_probabilities(self.counts_)

    def _sample_table(self, n_samples, rng):
        flat = rng.choice(self.n_cells_, size=n_samples, p=self.probabilities_)
        shape = tuple(int(c) for c in self.grid_.n_cells)
        codes = np.column_stack(np.unravel_index(flat, shape)) if shape else np.zeros((n_samples, 0), dtype=np.int64)
        return self.grid_.decode(codes, rng)
