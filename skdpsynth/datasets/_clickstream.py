"""Simulated clickstreams whose outcome is carried only by the order of events (:func:`make_clickstream`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from skdpsynth.datasets._sim_utils import (
    _categorical_draw,
    _check_float,
    _check_int,
    _check_labels,
    _check_weights,
    _long_index,
    _sequence_id_columns,
)
from skdpsynth.schema import ColumnSpec, TableSchema
from skdpsynth.utils._random import RandomStateLike, check_random_state

__all__ = ["make_clickstream", "OULAD_ACTIVITY_TYPES"]

#: A subset of OULAD's ``vle.activity_type`` vocabulary (the most common types).
OULAD_ACTIVITY_TYPES: tuple[str, ...] = ("resource", "oucontent", "forumng", "quiz", "url", "subpage", "homepage")
# Rough OULAD-like relative frequencies of the default vocabulary (public, rounded).
_OULAD_ACTIVITY_WEIGHTS = (0.10, 0.22, 0.22, 0.10, 0.06, 0.12, 0.18)


def _circulation(k: int) -> np.ndarray:
    """A non-reversible zero-row/column-sum flow: all 3-cycles a->b->c->a (a<b<c) minus their reverses."""
    D = np.zeros((k, k))
    for a in range(k):
        for b in range(a + 1, k):
            for c in range(b + 1, k):
                for i, j in ((a, b), (b, c), (c, a)):
                    D[i, j] += 1.0
                    D[j, i] -= 1.0
    return D


def _order_chains(pi: np.ndarray, strength: float) -> tuple[np.ndarray, np.ndarray]:
    """Two transition matrices with stationary distribution ``pi`` that are time reversals of each other."""
    k = len(pi)
    base = np.outer(pi, pi)  # edge flows of the i.i.d. chain
    D = _circulation(k)
    neg = D < 0
    t_max = np.min(base[neg] / -D[neg]) if neg.any() else 0.0
    flow = base + strength * t_max * D
    P_a = flow / pi[:, None]
    P_b = flow.T / pi[:, None]  # time reversal: same stationary distribution, reversed order preferences
    P_a = np.clip(P_a, 0.0, None)
    P_b = np.clip(P_b, 0.0, None)
    return P_a / P_a.sum(1, keepdims=True), P_b / P_b.sum(1, keepdims=True)


def make_clickstream(
    n_learners: int,
    *,
    activity_types: Sequence[str] = OULAD_ACTIVITY_TYPES,
    activity_weights: Sequence[float] | None = None,
    outcomes: Sequence[str] = ("pass", "fail"),
    outcome_weights: Sequence[float] | None = None,
    min_length: int = 10,
    max_length: int = 60,
    order_strength: float = 0.9,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Simulated clickstreams whose outcome depends on the order of events only.

    Each outcome group follows a stationary first-order Markov chain over the
    activity vocabulary. All chains share the same stationary distribution
    (``activity_weights``) and the first event is drawn from it, so the expected
    activity frequencies are identical at every position for every group, and
    sequence lengths are uniform on ``[min_length, max_length]`` for everyone.
    The groups differ only in their transitions: the first group's chain adds a
    circulation that favours the listed order of activities (e.g. ``oucontent``
    -> ``quiz``), the second group's chain is its time reversal (favouring the
    reverse order). With more than two outcomes, groups alternate between the
    two chains with different strengths (``order_strength`` scaled down by group).

    Parameters
    ----------
    n_learners : int
        Number of learners, >= 1.
    activity_types : sequence of str, default=OULAD_ACTIVITY_TYPES
        The public event vocabulary (at least 3 distinct types, so that a
        non-reversible chain exists); the listed order is the "forward" order.
    activity_weights : sequence of float, optional
        Stationary activity frequencies (normalised). Default: OULAD-like weights
        for the default vocabulary, uniform otherwise.
    outcomes : sequence of str, default=("pass", "fail")
        Outcome labels (at least 2).
    outcome_weights : sequence of float, optional
        Outcome probabilities (normalised); default uniform.
    min_length, max_length : int, default=10, 60
        Bounds of the per-learner sequence length (1 <= min_length <= max_length).
    order_strength : float, default=0.9
        In [0, 1]: 0 gives identical (i.i.d.) chains for all groups (no signal),
        1 the most non-reversible chains allowed by the stationary distribution.
    random_state : int, Generator, RandomState, SeedSequence or None
        Seed of the simulation.

    Returns
    -------
    Bunch
        ``frame`` (long DataFrame with ``learner_id``, ``position`` (0, 1, ...
        per learner), ``activity``, ``outcome``; sorted by learner and position),
        ``target`` (``"outcome"``), ``schema`` (dict: column roles, the public
        ``vocabulary``, ``outcomes`` and length bounds), ``table_schema`` (a
        :class:`~skdpsynth.TableSchema` of the long table), ``transition_matrices``
        (dict outcome -> true transition matrix), ``stationary`` (the shared
        stationary distribution), ``description``.

    Examples
    --------
    >>> from skdpsynth.datasets import make_clickstream
    >>> b = make_clickstream(50, random_state=0)
    >>> list(b.frame.columns)
    ['learner_id', 'position', 'activity', 'outcome']
    """
    n = _check_int(n_learners, "n_learners", 1)
    vocab = _check_labels(activity_types, "activity_types", 3)
    if not all(isinstance(a, str) and a for a in vocab):
        raise TypeError("activity_types must be non-empty strings.")
    outs = _check_labels(outcomes, "outcomes", 2)
    lo = _check_int(min_length, "min_length", 1)
    hi = _check_int(max_length, "max_length", 1)
    if lo > hi:
        raise ValueError(f"min_length ({lo}) must not exceed max_length ({hi}).")
    strength = _check_float(order_strength, "order_strength", 0.0, 1.0)
    pi = _stationary_weights(vocab, activity_weights)
    p_out = _outcome_weights(outs, outcome_weights)
    rng = check_random_state(random_state)

    P = _group_chains(pi, strength, len(outs))
    group, lengths, states = _draw_sequences(rng, P, pi, p_out, n, lo, hi)
    frame = _long_frame(group, lengths, states, vocab, outs)
    description = (
        f"Simulated clickstreams: {n} learners, {len(frame)} events, lengths in [{lo}, {hi}], vocabulary {vocab}, "
        f"outcomes {outs}. All outcome groups share the same stationary activity frequencies and length "
        f"distribution; only the order of events (transition matrices, order_strength={strength}) differs."
    )
    return Bunch(
        frame=frame,
        target="outcome",
        schema=_sequence_schema(vocab, outs, lo, hi),
        table_schema=_table_schema(n, vocab, outs, hi),
        transition_matrices={o: P[g] for g, o in enumerate(outs)},
        stationary=pi,
        description=description,
    )


def _stationary_weights(vocab: tuple, activity_weights) -> np.ndarray:
    """The shared stationary activity distribution: given, OULAD-like for the default vocabulary, else uniform."""
    k = len(vocab)
    if activity_weights is None:
        return np.array(_OULAD_ACTIVITY_WEIGHTS) if vocab == OULAD_ACTIVITY_TYPES else np.full(k, 1.0 / k)
    return _check_weights(activity_weights, k, "activity_weights")


def _outcome_weights(outs: tuple, outcome_weights) -> np.ndarray:
    if outcome_weights is None:
        return np.full(len(outs), 1.0 / len(outs))
    return _check_weights(outcome_weights, len(outs), "outcome_weights")


def _group_chains(pi: np.ndarray, strength: float, n_groups: int) -> np.ndarray:
    """Transition matrices (groups, k, k): even groups favour the forward order, odd groups the reverse."""
    chains = []
    for g in range(n_groups):
        s = strength / (1 + g // 2)  # groups 0/1 at full strength, 2/3 at half, ...
        P_a, P_b = _order_chains(pi, s)
        chains.append(P_a if g % 2 == 0 else P_b)
    return np.stack(chains)


def _draw_sequences(rng: np.random.Generator, P: np.ndarray, pi: np.ndarray, p_out: np.ndarray, n: int, lo: int,
                    hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outcome group, length and an (n, hi) array of activity codes per learner (loop over positions only)."""
    k = len(pi)
    group = _categorical_draw(rng, np.broadcast_to(p_out, (n, len(p_out))))
    lengths = rng.integers(lo, hi + 1, n)
    states = np.empty((n, hi), dtype=np.int16 if k < 2**15 else np.int32)
    states[:, 0] = _categorical_draw(rng, np.broadcast_to(pi, (n, k)))
    for t in range(1, hi):  # vectorised over learners
        states[:, t] = _categorical_draw(rng, P[group, states[:, t - 1]])
    return group, lengths, states


def _long_frame(group: np.ndarray, lengths: np.ndarray, states: np.ndarray, vocab: tuple,
                outs: tuple) -> pd.DataFrame:
    """One row per event, sorted by learner and position."""
    mask, learner, position = _long_index(lengths, states.shape[1])
    return pd.DataFrame({
        "learner_id": learner.astype(np.int64),
        "position": position.astype(np.int64),
        "activity": np.array(vocab, dtype=object)[states[mask]],
        "outcome": np.array(outs, dtype=object)[group][learner],
    })


def _sequence_schema(vocab: tuple, outs: tuple, lo: int, hi: int) -> dict:
    return {
        "kind": "sequence",
        "id": "learner_id",
        "order": "position",
        "event": "activity",
        "outcome": "outcome",
        "vocabulary": vocab,
        "outcomes": outs,
        "min_length": lo,
        "max_length": hi,
    }


def _table_schema(n: int, vocab: tuple, outs: tuple, hi: int) -> TableSchema:
    return TableSchema(_sequence_id_columns(n, hi) + (
        ColumnSpec("activity", "categorical", categories=vocab, nullable=False),
        ColumnSpec("outcome", "categorical", categories=outs, nullable=False),
    ))
