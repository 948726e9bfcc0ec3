"""DP-Histogram: the full contingency table on the public grid plus geometric noise (a baseline)."""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import pandas as pd

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseTabularSynthesizer, FitContext
from skdpsynth.exceptions import SchemaError
from skdpsynth.privacy import project_to_simplex
from skdpsynth.schema import resolve_schema
from skdpsynth.synthesizers._engine import MarginalEngine, size_estimate
from skdpsynth.utils._param_validation import Interval

__all__ = ["DPHistogramSynthesizer"]


class DPHistogramSynthesizer(BaseTabularSynthesizer):
    """Full joint histogram over the public grid with two-sided geometric noise.

    Every cell of the cross product of the columns' public cells (missing cells
    included) gets a noisy count; samples are drawn from the noisy table
    projected onto the simplex and normalised. It keeps every dependence the
    grid can express but only works for few columns: the number of cells is
    the product of the columns' cell counts, and the noise per cell does not
    shrink with it.

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
        Seeds everything that is not privacy noise (sampling, positions inside
        bins).
    reproducible_noise : bool, default=False
        Derive the privacy noise from ``random_state`` (tests and papers only:
        such a release is not publishable). By default the noise comes from
        fresh OS entropy and nothing can regenerate it.

    Attributes
    ----------
    grid_ : PublicGrid
        The cells of every column.
    n_cells_ : int
        Cells of the joint table.
    counts_ : ndarray of int64
        Noisy counts, summed over cohorts (flattened, C order over the columns).
    probabilities_ : ndarray of float
        ``counts_`` projected onto the simplex and normalised.
    n_estimate_ : int
        The latest cohort's noisy total.

    Privacy
    -------
    Neighbouring relation: add/remove one person (one row). The joint histogram
    has L1 sensitivity 1 (the person falls in exactly one cell), so the
    two-sided geometric mechanism with scale ``1 / epsilon_model`` is
    ``epsilon_model``-DP, where ``epsilon_model`` is what is left of ``epsilon``
    after the domain estimate (all of it when ``schema`` is given); the table is
    one query of the private table through the shared marginal engine
    (:mod:`._engine`). Sampling is post-processing. ``partial_fit`` adds the new cohort's noisy table to the
    old one (each cohort is charged its own budget).

    The cell-count check runs before any budget is spent when ``schema`` is
    given. Without a schema the categories are only known after the DP domain
    estimate: a table that is too large whatever the categories is refused up
    front; otherwise a refusal comes after the domain's share was spent.
    """

    _takes_table = True  # the fit receives a PrivateTable, never the rows
    _parameter_constraints: dict = {
        **BaseTabularSynthesizer._parameter_constraints,
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "max_cells": [Interval(Integral, 1, None, closed="left")],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, schema=None, n_bins=8, max_cells=10_000_000, domain_share=0.1,
                 cohort_composition="parallel", random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_bins = n_bins
        self.max_cells = max_cells
        self.domain_share = domain_share
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    def _check_input(self, X, y, reset):
        data = super()._check_input(X, y, reset)
        if reset:  # refuse before any budget is spent
            schema = resolve_schema(self.schema)
            if schema is not None:
                self._check_cells(PublicGrid(schema, self.n_bins))
            elif self.epsilon is not None:
                self._check_least_cells(data.frame)
        return data

    def _check_least_cells(self, frame: pd.DataFrame) -> None:
        """Refuse before any spend a table too wide whatever its domain: from the number of columns alone (each gets
        at least one value cell and the missing cell). The columns' kinds are a DP answer, so a tighter bound waits
        for the estimate (:meth:`_check_cells` on its grid)."""
        least = 2 ** frame.shape[1]
        if least > self.max_cells:
            raise SchemaError(
                f"DPHistogramSynthesizer: without a schema the joint table has at least {least:.3g} cells "
                f"(> max_cells={self.max_cells}) whatever the columns hold. Give a schema, drop or merge columns, "
                "or use MSTSynthesizer / DPMarginalsSynthesizer."
            )

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

    def _fit_table(self, table, ctx: FitContext):
        if ctx.first:
            self.grid_ = PublicGrid(self.schema_, self.n_bins)
            self.n_cells_ = self._check_cells(self.grid_)
            self.counts_ = np.zeros(self.n_cells_, dtype=np.int64)
        d = len(self.grid_.columns)
        target = f"joint histogram of {d} columns ({self.n_cells_} cells)"
        eps = table.remaining_epsilon() if table.private else None
        joint = MarginalEngine(table, self.grid_).measure(tuple(range(d)), epsilon=eps, target=target)
        self.n_estimate_ = max(int(round(size_estimate([joint]))), 1)  # each person is in one cell
        self.counts_ = self.counts_ + joint.counts.reshape(-1)
        probs = project_to_simplex(self.counts_)
        total = probs.sum()
        self.probabilities_ = probs / total if total > 0 else np.full(self.n_cells_, 1.0 / self.n_cells_)

    def _sample_table(self, n_samples, rng):
        flat = rng.choice(self.n_cells_, size=n_samples, p=self.probabilities_)
        shape = tuple(int(c) for c in self.grid_.n_cells)
        codes = np.column_stack(np.unravel_index(flat, shape)) if shape else np.zeros((n_samples, 0), dtype=np.int64)
        return self.grid_.decode(codes, rng)
