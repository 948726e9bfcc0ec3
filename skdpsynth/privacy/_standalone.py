"""The DP domain estimate run on its own (``skdpsynth schema draft --epsilon``), outside a synthesizer's fit.

A fit copies its accountant's log into ``budget_log_``; a stand-alone estimate
has no estimator to hold it, so this hands the log back to the caller, complete
even when the estimate refuses after spending (the noisy count of people).
"""

from __future__ import annotations

import pandas as pd

from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._domain import estimate_schema
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.schema import TableSchema

__all__ = ["estimate_schema_logged"]


def estimate_schema_logged(X: pd.DataFrame, *, epsilon: float, delta: float, budget_log: list[BudgetRecord],
                           noise: NoiseSource | None = None) -> TableSchema:
    """:func:`~skdpsynth.privacy.estimate_schema` on a fresh accountant of ``(epsilon, delta)``.

    Privacy: that of :func:`~skdpsynth.privacy.estimate_schema` (add/remove one
    person; the whole estimate is (epsilon, delta)-DP), no more.

    Parameters
    ----------
    X : pandas.DataFrame
        The private table (one row per person).
    epsilon, delta : float
        The budget of the whole estimate.
    budget_log : list
        Receives every record charged, also when the estimate raises.
    noise : NoiseSource, optional
        Default: fresh OS entropy (:meth:`NoiseSource.secure`).

    Returns
    -------
    TableSchema
        Public (DP).
    """
    accountant = BudgetAccountant(epsilon, delta)
    try:
        return estimate_schema(X, epsilon=epsilon, delta=delta, accountant=accountant,
                               noise=noise if noise is not None else NoiseSource.secure())
    finally:
        budget_log.extend(accountant.records)
