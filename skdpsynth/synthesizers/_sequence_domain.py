"""The public domain of a sequence table: its event vocabulary and its per-learner schema.

Both are given (public), discovered under DP, or -- with ``epsilon=None`` or a
schema not confirmed public -- read from the data and recorded as non-private.
All privacy noise comes from :mod:`skdpsynth.privacy`.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from skdpsynth.base import FitContext
from skdpsynth.exceptions import PrivacyLeakWarning, SchemaError
from skdpsynth.privacy._domain import estimate_schema
from skdpsynth.privacy._mechanisms import stability_histogram, stability_threshold
from skdpsynth.schema import TableSchema, infer_schema
from skdpsynth.synthesizers._sequence_data import encode_states, state_sort_key

__all__ = ["bounded_state_counts", "discover_vocabulary", "learner_domain", "record_schema_privacy"]


def bounded_state_counts(codes: np.ndarray, learner: np.ndarray, bound: int, n_codes: int) -> np.ndarray:
    """Learners per state when each learner counts only the first ``bound`` distinct states they visit.

    Parameters
    ----------
    codes : ndarray of int
        State code of every event (in ``0 .. n_codes - 1``), events sorted by learner then order.
    learner : ndarray of int
        Learner index of every event (non-decreasing).
    bound : int
        Most distinct states one learner counts towards.
    n_codes : int
        Number of state codes.

    Returns
    -------
    ndarray of int64 of length ``n_codes``
        One learner adds at most 1 to each of at most ``bound`` states (L1 sensitivity ``bound``).
    """
    pair = learner.astype(np.int64) * n_codes + codes
    _, first = np.unique(pair, return_index=True)
    first = np.sort(first)  # first visit of each (learner, state), in event order
    who = learner[first]
    rank = np.arange(len(first)) - np.searchsorted(who, who, side="left")
    kept = first[rank < bound]
    return np.bincount(codes[kept], minlength=n_codes).astype(np.int64)


def discover_vocabulary(
    events: pd.DataFrame, learner: np.ndarray, *, max_contrib: int, epsilon: float | None, delta: float,
    ctx: FitContext,
) -> list[tuple]:
    """Release the event vocabulary (joint states) under (epsilon, delta)-DP.

    Each learner counts once for each of (at most) the first ``max_contrib``
    distinct states they visit (:func:`bounded_state_counts`). The candidates
    are exactly the states counted after this bounding -- a state only seen
    beyond some learner's bound is not a candidate, so it cannot be released --
    and :func:`skdpsynth.privacy.stability_histogram` releases those whose
    noisy count reaches its threshold: (epsilon, delta)-DP under
    add/remove-one-learner. With ``epsilon=None`` every observed state is kept
    and the read is recorded as non-private.

    Parameters
    ----------
    events : pandas.DataFrame
        The event columns of the (truncated) events, sorted by learner then order.
    learner : ndarray of int
        Learner index of every row (non-decreasing).
    max_contrib : int
        Contribution bound (distinct states per learner).
    epsilon : float or None
        Cost of the release (``None``: non-private).
    delta : float
        Its delta.
    ctx : FitContext
        Accountant and noise source of the cohort.

    Returns
    -------
    list of tuple
        The released states, sorted.
    """
    uniques = list(map(tuple, events.drop_duplicates().itertuples(index=False, name=None)))
    if epsilon is None:
        ctx.accountant.declare_nonprivate("event vocabulary read from the data (epsilon=None)")
        return sorted(uniques, key=state_sort_key)
    k = int(max_contrib)
    counts = bounded_state_counts(encode_states(events, uniques), learner, k, len(uniques))
    candidates = np.flatnonzero(counts > 0)
    released, _ = stability_histogram(
        counts[candidates], contribution_bound=k, epsilon=epsilon, delta=delta, noise=ctx.noise,
        accountant=ctx.accountant, target=f"event vocabulary (learners per state, first {k} distinct states each)",
    )
    states = [uniques[i] for i in candidates[released]]
    if not states:
        raise SchemaError(
            f"no event is visited by enough learners to be released at this budget (threshold "
            f"{stability_threshold(k, epsilon, delta)} learners); give the public event vocabulary with `vocabulary=`."
        )
    return sorted(states, key=state_sort_key)


def learner_domain(
    learners: pd.DataFrame, given: TableSchema | None, *, label_column: str | None,
    budget: tuple[float, float] | None, ctx: FitContext,
) -> TableSchema:
    """The schema of the label and static columns for the first cohort.

    A given schema is used as is (recorded as non-private when it is not
    confirmed public, see :func:`record_schema_privacy`); without one it is
    estimated under DP with ``budget`` = (epsilon, delta) by
    :func:`skdpsynth.privacy.estimate_schema`, or, when ``budget`` is None
    (``epsilon=None``), read from the data and recorded as non-private. An
    estimated label is not nullable: the input contract requires a complete
    label, so that is public (learners whose label is not released are left
    out instead, see ``BaseSequenceSynthesizer``).
    """
    if given is not None:
        return given.select(list(learners.columns))
    if budget is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            inferred = infer_schema(learners)
        ctx.accountant.declare_nonprivate("label/static domain read from the data (epsilon=None)")
        return inferred
    schema = estimate_schema(learners, epsilon=budget[0], delta=budget[1], accountant=ctx.accountant, noise=ctx.noise)
    if label_column is None:
        return schema
    return TableSchema(tuple(replace(c, nullable=False) if c.name == label_column else c for c in schema.columns))


def record_schema_privacy(schema: TableSchema | None, ctx: FitContext) -> None:
    """Record a cohort measured on a label/static schema that is not confirmed public as non-private."""
    if schema is not None and not schema.public and ctx.accountant.private:
        ctx.accountant.declare_nonprivate("label/static domain read from the data (schema not confirmed public)")
