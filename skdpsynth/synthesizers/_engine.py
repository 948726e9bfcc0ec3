"""The select-measure-estimate pipeline the marginal synthesizers share (MST, AIM, DP-Marginals, DP-Histogram).

A synthesizer sees the private table only through two queries of the
:class:`~skdpsynth.privacy.PrivateTable`, asked through :class:`MarginalEngine`:

``measure``
    A noisy marginal of a clique of the public grid, optionally on compressed cells (public per-column maps).
    Neighbouring relation: add/remove one person, who is in one cell, so L1 = L2 sensitivity 1; discrete
    Gaussian at ``rho`` (per-cell variance ``1 / (2 rho)``) or geometric at ``epsilon``.
``select``
    The exponential mechanism over candidate cliques, utility ``w_r (||M_r(D) - estimate_r||_1 - penalty_r)``
    with public estimates: sensitivity ``max_r w_r``.

Everything else is post-processing of the answers: one inverse-variance size estimate (:func:`size_estimate`), one
compression (:mod:`._compression`), one graphical-model estimate on a junction tree (:func:`fit_model`, the
inference of :mod:`._graphical_model`), pooled over cohorts (:func:`pool`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skdpsynth.privacy import geometric_variance
from skdpsynth.privacy._postprocess import inverse_variance_mean
from skdpsynth.synthesizers._graphical_model import MarkovModel, Measurement, combine, estimate
from skdpsynth.synthesizers._junction_tree import Clique, JunctionTree, build_junction_tree

__all__ = ["MarginalEngine", "size_estimate", "pool", "fit_model"]


class MarginalEngine:
    """Noisy marginals and selections of one cohort's private table on a public grid.

    Parameters
    ----------
    table : PrivateTable
        The cohort; its queries state their sensitivity and charge before they draw.
    grid : PublicGrid
        The public cells.
    maps : list of ndarray, optional
        Per column, a public map from grid cells to compressed cells (``Compression.maps``); set it once the
        compression is known. None: the grid's cells.
    """

    def __init__(self, table, grid, maps: list[np.ndarray] | None = None) -> None:
        self.table = table
        self.grid = grid
        self.maps = maps

    def _maps(self, clique: Clique) -> list[np.ndarray] | None:
        return None if self.maps is None else [self.maps[j] for j in clique]

    def measure(self, clique: Clique, *, rho: float | None = None, epsilon: float | None = None,
                target: str | None = None) -> Measurement:
        """The clique's noisy counts (int64) and their per-cell variance (0: exact, for a non-private table).

        Privacy: L1 = L2 sensitivity 1 under add/remove one person; discrete Gaussian at ``rho`` or geometric at
        ``epsilon`` (charged by the table).
        """
        counts = self.table.marginal(self.grid, clique, rho=rho, epsilon=epsilon, maps=self._maps(clique),
                                     target=target)
        if not self.table.private:
            variance = 0.0
        elif rho is not None:
            variance = 1.0 / (2.0 * rho)
        else:
            variance = geometric_variance(1.0, epsilon)
        return Measurement(tuple(clique), counts, variance)

    def select(self, cliques: Sequence[Clique], estimates: Sequence[np.ndarray], *, rho: float | None,
               weights: Sequence[float] | None = None, penalties: Sequence[float] | None = None,
               target: str) -> int:
        """Index of the clique worst explained by its public estimate (exponential mechanism; argmax if exact).

        Privacy: utility ``w_r (||M_r(D) - estimate_r||_1 - penalty_r)``, sensitivity ``max_r w_r`` (one person
        moves one cell of each marginal by 1); ``rho`` zCDP (charged by the table).
        """
        return self.table.select_marginal(self.grid, cliques, estimates, rho=rho, weights=weights,
                                          penalties=penalties, maps=self.maps, target=target)


def size_estimate(measurements: Sequence[Measurement]) -> float:
    """Number of people from noisy marginals: the inverse-variance mean of their totals, at least 1.

    Every person is in one cell of each marginal, so each total is the number of people plus noise of variance
    the sum of its cells' variances. Exact totals (variance 0) win outright. Post-processing.
    """
    totals = [float(np.sum(m.counts)) for m in measurements]
    variances = [float(np.sum(np.broadcast_to(m.variance, np.shape(m.counts)))) for m in measurements]
    return max(inverse_variance_mean(totals, variances)[0], 1.0)


def pool(cohorts: Sequence[Sequence[Measurement]]) -> list[Measurement]:
    """One measurement per clique over cohorts of different people: counts and variances add up.

    Within a cohort, repeated measurements of a clique are first combined by inverse variance
    (:func:`._graphical_model.combine`). Post-processing.
    """
    pooled: dict[Clique, tuple[np.ndarray, np.ndarray]] = {}
    for cohort in cohorts:
        for m in combine(list(cohort)):
            counts, var = pooled.get(m.clique, (0.0, 0.0))
            pooled[m.clique] = (counts + np.asarray(m.counts, float),
                                var + np.broadcast_to(np.asarray(m.variance, float), np.shape(m.counts)))
    return [Measurement(cl, c, v) for cl, (c, v) in pooled.items()]


def fit_model(measurements: Sequence[Measurement], sizes: np.ndarray, total: float, *,
              tree: JunctionTree | None = None, model: MarkovModel | None = None,
              potentials: dict[Clique, np.ndarray] | None = None, iters: int) -> MarkovModel:
    """The graphical model closest to the measurements (Private-PGM's weighted least squares); post-processing.

    Parameters
    ----------
    measurements : list of Measurement
        One per clique (:func:`pool` or :func:`._graphical_model.combine`).
    sizes : ndarray of int
        Cells of every attribute.
    total : float
        Number of people the model represents (:func:`size_estimate`).
    tree : JunctionTree, optional
        Default: a junction tree over the measured cliques (the previous model's when it covers them).
    model : MarkovModel, optional
        Warm start (its tree and potentials).
    potentials : dict of clique to ndarray, optional
        Warm start without a model (e.g. :func:`._graphical_model.pair_start`); ``model``'s win.
    iters : int
        Most estimation steps.
    """
    cliques = sorted({m.clique for m in measurements}, key=lambda c: (len(c), c))
    if tree is None:
        covered = model is not None and all(model.tree.home(cl) >= 0 for cl in cliques)
        tree = model.tree if covered else build_junction_tree(sizes, cliques)
    return estimate(tree, list(measurements), total, potentials=potentials if model is None else model.potentials,
                    iters=iters)
