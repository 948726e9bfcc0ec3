"""The DP answers an audit may publish: noisy histograms of per-person cells, for noisy threshold tests.

An audit reads confidential rows (the synthesizer's training rows and a real holdout) to decide whether a release
passes its checks. The exact verdict is a statistic of those rows; to publish a verdict, a check recomputes its
rule from noisy histograms released here and nowhere else (post-processing), so the published verdict costs what
these histograms were charged.

Neighbouring relation: add or remove all records of one person of the audit's real data (the training rows and
the holdout together; a person is in one of them). The release under audit is fixed: it is already public, and
its own guarantee is the synthesizer's. A person of the training rows therefore loses the synthesizer's epsilon
plus the audit's (sequential composition); a holdout person loses the audit's only.
"""

from __future__ import annotations

import numpy as np

from skdpsynth.privacy._accounting import NEIGHBOURING, BudgetAccountant, compose
from skdpsynth.privacy._mechanisms import geometric_mechanism
from skdpsynth.privacy._noise import NoiseSource

__all__ = ["VerdictAnswers"]


class VerdictAnswers:
    """Noisy histograms for an audit's published verdicts, charged to one pure-DP budget.

    Parameters
    ----------
    epsilon : float
        The whole budget of the audit's published verdicts (pure DP, delta 0).
    noise : NoiseSource, optional
        Default: fresh OS entropy (never a seed: a published verdict must not be reproducible).

    Examples
    --------
    >>> answers = VerdictAnswers(1.0)
    >>> noisy = answers.histogram(np.array([[0], [2], [2]]), 3, epsilon=0.5, target="cells")
    >>> noisy.shape, answers.budget()["epsilon"]
    ((3,), 0.5)
    """

    def __init__(self, epsilon: float, *, noise: NoiseSource | None = None) -> None:
        self._accountant = BudgetAccountant(epsilon, 0.0)
        self._noise = noise if noise is not None else NoiseSource.secure()

    def histogram(self, cells, n_cells: int, *, epsilon: float, target: str) -> np.ndarray:
        """People per cell plus discrete Laplace noise; epsilon-DP.

        Parameters
        ----------
        cells : array-like of int, shape (n_people, k)
            Row ``i`` holds the ``k`` cells person ``i`` counts towards (at most one per column; a negative
            cell counts nowhere). One row per person: adding or removing a person changes ``k`` counts by 1,
            so the L1 sensitivity is ``k``.
        n_cells : int
            The public number of cells.
        epsilon : float
            Cost, charged before the noise is drawn.
        target : str
            What is measured (goes in the budget log).

        Returns
        -------
        numpy.ndarray of int64, shape (n_cells,)
        """
        cells = np.asarray(cells, dtype=np.int64)
        cells = cells.reshape(len(cells), -1)
        flat = cells[(cells >= 0) & (cells < n_cells)]
        counts = np.bincount(flat, minlength=n_cells)[:n_cells]
        return geometric_mechanism(counts, sensitivity=float(max(cells.shape[1], 1)), epsilon=epsilon,
                                   noise=self._noise, accountant=self._accountant, target=target)

    def budget(self) -> dict:
        """What the published verdicts cost: composed epsilon and delta, the neighbouring relation, the records."""
        records = self._accountant.records
        spent = compose(records)
        return {"epsilon": spent.epsilon, "delta": spent.delta, "neighbouring": NEIGHBOURING,
                "records": [r.to_dict() for r in records]}
