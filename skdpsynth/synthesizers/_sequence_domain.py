"""The public domain of a sequence table: its event vocabulary and its per-learner schema.

Both are given (public), discovered under DP, or -- with ``epsilon=None`` or a
schema not confirmed public -- read from the data and recorded as non-private.
All privacy noise comes from :mod:`skdpsynth.privacy`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from skdpsynth.base import FitContext
from skdpsynth.exceptions import PrivacyLeakWarning, SchemaError
from skdpsynth.privacy._accounting import BudgetRecord
from skdpsynth.privacy._domain import DomainEstimateError, estimate_schema
from skdpsynth.privacy._domain_plan import DomainRun, plan_domain
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
    ctx: FitContext, later: Sequence[BudgetRecord] = (),
) -> list[tuple]:
    """Release the event vocabulary (joint states) under (epsilon, delta)-DP.

    Each learner counts once for each of (at most) the first ``k =
    max_contrib`` distinct states they visit (:func:`bounded_state_counts`; ``k``
    is a public parameter). The candidates are exactly the states counted after
    this bounding -- a state only seen beyond some learner's bound is not a
    candidate, so it cannot be released. The budget is planned from public
    quantities by :func:`skdpsynth.privacy._domain_plan.plan_domain`:

    1. a noisy count of learners (a small pure share); when even a state every
       learner visits could not reach the release threshold, ONE error says so
       before anything else is measured;
    2. the stability histogram: Gaussian (L2 sensitivity ``sqrt(k)``,
       :func:`~skdpsynth.privacy._domain_plan.gaussian_stability_histogram`)
       or Laplace (L1 ``k``, :func:`skdpsynth.privacy.stability_histogram`),
       whichever has the lower threshold at this budget. The Gaussian one grows
       with ``sqrt(k)`` rather than ``k``: it is what lets learners count
       several states. With ``later`` (the model's planned records) holding zCDP
       records it is charged in zCDP and composes with the model; otherwise it
       is one (epsilon, delta) record.

    (epsilon, delta)-DP under add/remove-one-learner. With ``epsilon=None`` every
    observed state is kept and the read is recorded as non-private.

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
    later : sequence of BudgetRecord
        What the model will charge afterwards (enables the zCDP mode).

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
    plan = plan_domain({"categories": k}, epsilon, delta, accountant=ctx.accountant, later=later,
                       label="event vocabulary")
    part = plan.parts["categories"]
    run = DomainRun(plan, ctx.accountant, ctx.noise)
    n_hat = run.count(len(np.unique(learner)))
    if n_hat < part.release_threshold:
        raise DomainEstimateError(
            f"the event vocabulary cannot be discovered at this budget: a state must be visited by about "
            f"{part.release_threshold:,} learners to be released, and there are about {max(n_hat, 0):,} (a noisy "
            "count, the only thing measured). Give the public event vocabulary with `vocabulary=` (e.g. the "
            "activity types of the platform's documentation), or raise epsilon or domain_share.")
    counts = bounded_state_counts(encode_states(events, uniques), learner, k, len(uniques))
    candidates = np.flatnonzero(counts > 0)
    run.open()
    released, _ = run.keys(counts[candidates], "categories",
                           f"learners per state (first {k} distinct states each; candidates: the counted states)")
    states = [uniques[i] for i in candidates[released]]
    if not states:
        raise SchemaError(
            f"no event is visited by enough learners to be released at this budget (threshold "
            f"{part.release_threshold:,} learners); give the public event vocabulary with `vocabulary=`.")
    return sorted(states, key=state_sort_key)


def learner_domain(
    learners: pd.DataFrame, given: TableSchema | None, *, label_column: str | None,
    budget: tuple[float, float] | None, ctx: FitContext, later: Sequence[BudgetRecord] = (),
) -> TableSchema:
    """The schema of the label and static columns for the first cohort.

    A given schema is used as is (recorded as non-private when it is not
    confirmed public, see :func:`record_schema_privacy`); without one it is
    estimated under DP with ``budget`` = (epsilon, delta) by
    :func:`skdpsynth.privacy.estimate_schema`, or, when ``budget`` is None
    (``epsilon=None``), read from the data and recorded as non-private. An
    estimated label is not nullable: the input contract requires a complete
    label, so that is public (learners whose label is not released are left
    out instead, see ``BaseSequenceSynthesizer``). ``later`` as in
    :func:`discover_vocabulary`.
    """
    if given is not None:
        return given.select(list(learners.columns))
    if budget is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            inferred = infer_schema(learners)
        ctx.accountant.declare_nonprivate("label/static domain read from the data (epsilon=None)")
        return inferred
    schema = estimate_schema(learners, epsilon=budget[0], delta=budget[1], accountant=ctx.accountant, noise=ctx.noise,
                             later=later, label="label/static domain estimate")
    if label_column is None:
        return schema
    return TableSchema(tuple(replace(c, nullable=False, fill=None) if c.name == label_column else c
                             for c in schema.columns))


def record_schema_privacy(schema: TableSchema | None, ctx: FitContext) -> None:
    """Record a cohort measured on a label/static schema that is not confirmed public as non-private."""
    if schema is not None and not schema.public and ctx.accountant.private:
        ctx.accountant.declare_nonprivate("label/static domain read from the data (schema not confirmed public)")
