"""Long-format event tables: validation, the sorted container, state and length encoding.

A long-format event table has one row per event: a learner id, an order (time
or position), one or several event columns (several form one joint state, e.g.
``skill`` + ``correct``), optionally a label (one outcome per learner) and
static per-learner columns. :func:`read_event_table` validates such a table and
returns a :class:`SequenceData`; nothing here adds noise or spends budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from skdpsynth.exceptions import SchemaError
from skdpsynth.privacy._sequences import encode_states, state_sort_key
from skdpsynth.schema import ColumnSpec

__all__ = ["EventRoles", "SequenceData", "check_in_vocabulary", "decode_states", "encode_states", "event_specs",
           "length_bin_edges", "read_event_table", "resolve_vocabulary", "sample_lengths", "state_sort_key",
           "transition_frequencies"]


@dataclass(frozen=True)
class EventRoles:
    """Which column plays which role in a long-format event table."""

    id_column: str
    order_column: str
    event_columns: tuple[str, ...]
    label_column: str | None
    static_columns: tuple[str, ...]

    @property
    def learner_columns(self) -> list[str]:
        """The label (first, when any) and the static columns: one value per learner."""
        return ([self.label_column] if self.label_column is not None else []) + list(self.static_columns)

    @property
    def all(self) -> list[str]:
        """Every named column, in role order."""
        return [self.id_column, self.order_column, *self.event_columns, *self.learner_columns]


@dataclass
class SequenceData:
    """A validated long table, sorted by (learner, order) -- never stored on the estimator.

    Attributes
    ----------
    frame_columns : tuple of str
        The table's columns (a joined ``y`` included), in input order.
    dtypes : dict of str to str
        Their dtypes.
    events : pandas.DataFrame
        The event columns, sorted.
    starts : ndarray
        Offset of each learner's first row in ``events``.
    lengths : ndarray
        Each learner's full number of events.
    learners : pandas.DataFrame
        One row per learner: the label and static columns (may have no columns).
    """

    frame_columns: tuple[str, ...]
    dtypes: dict[str, str]
    events: pd.DataFrame
    starts: np.ndarray
    lengths: np.ndarray
    learners: pd.DataFrame

    @property
    def n_learners(self) -> int:
        """Number of learners (private: never stored or released as is)."""
        return len(self.starts)


def length_bin_edges(max_length: int, n_bins: int) -> np.ndarray:
    """Public length bins ``[e_j, e_(j+1))`` covering ``1 .. max_length``, geometric widths.

    The last bin is ``{max_length}`` alone: truncation piles long sequences there.
    """
    edges = np.round(np.geomspace(1, max(max_length, 1), max(n_bins, 1))).astype(np.int64)
    return np.unique(np.concatenate([[1], edges, [max_length, max_length + 1]]))


def sample_lengths(length_probs: np.ndarray, edges: np.ndarray, labels: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    """One length per learner: a bin from its label's row of ``length_probs``, then uniform within the bin."""
    cum = np.cumsum(length_probs, axis=1)
    b = (cum[labels] < rng.random(len(labels))[:, None] * cum[labels, -1:]).sum(axis=1)
    b = np.minimum(b, cum.shape[1] - 1)
    lo, hi = edges[b], edges[b + 1]
    return lo + np.floor(rng.random(len(labels)) * (hi - lo)).astype(np.int64)


def decode_states(codes: np.ndarray, states: list[tuple], columns: list[str]) -> dict[str, np.ndarray]:
    """Event column values of state codes (code ``len(states)``, the unreleased state, is missing)."""
    table = np.empty((len(states) + 1, len(columns)), dtype=object)
    table[:-1] = [list(s) for s in states]
    table[-1] = np.nan
    return {c: table[codes, j] for j, c in enumerate(columns)}


def event_specs(states: list[tuple], columns: list[str], *, nullable: bool) -> list[ColumnSpec]:
    """Release specs of the event columns: their values in the (public or DP-released) vocabulary."""
    return [ColumnSpec(c, "categorical", categories=tuple(dict.fromkeys(s[j] for s in states)), nullable=nullable)
            for j, c in enumerate(columns)]


def resolve_vocabulary(vocabulary: Any, columns: list[str]) -> list[tuple] | None:
    """The public vocabulary as a list of joint states (``None`` when it is to be discovered).

    Parameters
    ----------
    vocabulary : list, dict or None
        A list of events (tuples in ``columns`` order for several columns) or a
        dict ``{column: values}`` whose product is the state space.
    columns : list of str
        The event columns.
    """
    if vocabulary is None:
        return None
    if isinstance(vocabulary, Mapping):
        missing = [c for c in columns if c not in vocabulary]
        if missing:
            raise ValueError(f"vocabulary dict lacks the event column(s) {missing}.")
        return [tuple(s) for s in product(*(list(vocabulary[c]) for c in columns))]
    states = []
    for v in vocabulary:
        t = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        if len(t) != len(columns):
            raise ValueError(f"vocabulary entry {v!r} has {len(t)} value(s) but there are {len(columns)} event "
                             f"column(s) {columns}; give tuples in that order.")
        states.append(t)
    if len(set(states)) != len(states):
        raise ValueError("vocabulary has duplicate entries.")
    if not states:
        raise ValueError("vocabulary is empty.")
    return states


def check_in_vocabulary(events: pd.DataFrame, states: list[tuple]) -> None:
    """Raise :class:`SchemaError` when an event is outside a public vocabulary (before any budget is spent).

    The message names the columns only, never the values: an event outside the vocabulary may be one learner's.
    """
    if (encode_states(events, states) < 0).any():
        raise SchemaError(f"some events in {list(events.columns)} are not in the vocabulary; add the "
                          "platform's event types to `vocabulary` (or leave it None to discover it under DP).")


def _is_sorted(ids: pd.Series, order: pd.Series) -> bool:
    """Whether rows are already sorted by (id, order) -- then the (costly) sort is skipped."""
    i, o = ids.to_numpy(), order.to_numpy()
    if len(i) < 2:
        return True
    if i.dtype == object or o.dtype == object:
        return False
    same = i[1:] == i[:-1]
    return bool(np.all((i[1:] > i[:-1]) | (same & (o[1:] >= o[:-1]))))


def _as_frame(X: Any, y: Any, roles: EventRoles, owner: str) -> pd.DataFrame:
    """``X`` as a DataFrame with ``y`` joined as the label column."""
    if not isinstance(X, pd.DataFrame):
        if sp.issparse(X):
            raise TypeError("sparse input is not supported: give a long-format pandas DataFrame of events.")
        shape = np.shape(X)
        if len(shape) == 2 and shape[1] == 0:
            raise ValueError(f"0 feature(s) (shape={shape}) while a minimum of 1 is required.")
        if np.size(X) == 0:
            raise ValueError("the event table is empty (0 rows): at least two learners are needed.")
        raise TypeError(
            f"{owner} needs a long-format pandas DataFrame (one row per event, columns "
            f"{roles.id_column!r}, {roles.order_column!r}, events ...), got {type(X).__name__}."
        )
    if y is None:
        return X
    if roles.label_column is None:
        raise ValueError("y was given but label_column is None; set label_column to name the outcome.")
    if roles.label_column in X.columns:
        raise SchemaError(f"y is given but {roles.label_column!r} is already a column of X.")
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"y must have one value per row of X, got shape {y.shape}.")
    return X.assign(**{roles.label_column: y})


def _check_roles(X: pd.DataFrame, roles: EventRoles) -> None:
    missing = [c for c in roles.all if c not in X.columns]
    if missing:
        raise SchemaError(f"column(s) {missing} named in the parameters are not in X (columns: {list(X.columns)}).")
    extra = [c for c in X.columns if c not in roles.all]
    if extra:
        raise SchemaError(
            f"column(s) {extra} have no role: name them in static_columns (one value per learner), add them "
            "to event_columns, or drop them before fitting (nothing is dropped silently)."
        )
    if len(X) == 0:
        raise ValueError("the event table is empty (0 rows): at least two learners are needed.")
    complete = [roles.id_column, roles.order_column, *roles.event_columns]
    complete += [roles.label_column] if roles.label_column is not None else []
    for c in complete:
        if X[c].isna().any():
            raise ValueError(f"column {c!r} has missing values; id, order, event and label columns must be "
                             "complete.")


def _sorted(X: pd.DataFrame, roles: EventRoles) -> pd.DataFrame:
    try:
        if _is_sorted(X[roles.id_column], X[roles.order_column]):
            return X
        return X.sort_values([roles.id_column, roles.order_column], kind="stable")
    except TypeError as exc:
        raise ValueError(f"columns {roles.id_column!r} / {roles.order_column!r} must be sortable: {exc}") from exc


def read_event_table(X: Any, y: Any, roles: EventRoles, *, duplicate_order: str, owner: str) -> SequenceData:
    """Validate a long-format event table and sort it by (learner, order).

    Parameters
    ----------
    X : pandas.DataFrame
        One row per event.
    y : array-like or None
        Joined to ``X`` as the label column.
    roles : EventRoles
        The columns' roles.
    duplicate_order : {"error", "stable"}
        What to do with events of one learner that share their order value.
    owner : str
        Name of the estimator, for messages.

    Returns
    -------
    SequenceData
    """
    X = _as_frame(X, y, roles, owner)
    _check_roles(X, roles)
    ordered = _sorted(X, roles)
    ids = ordered[roles.id_column].to_numpy()
    order = ordered[roles.order_column].to_numpy()
    new = np.r_[True, ids[1:] != ids[:-1]]
    starts = np.flatnonzero(new)
    if len(starts) < 2:
        raise ValueError("the table holds fewer than two learners; at least two are needed.")
    ties = ~new[1:] & (order[1:] == order[:-1])
    if ties.any() and duplicate_order == "error":
        raise ValueError(
            f"events share their learner's {roles.order_column!r} value with another event; make the order "
            "unique, or set duplicate_order='stable' to keep tied events in row order."
        )
    learner_cols = roles.learner_columns
    if learner_cols:
        nun = ordered.groupby(roles.id_column, sort=True)[learner_cols].nunique(dropna=False).max()
        varying = [c for c in learner_cols if nun[c] > 1]
        if varying:
            raise ValueError(f"column(s) {varying} vary within a learner; label and static columns must hold one "
                             "value per learner.")
    return SequenceData(
        frame_columns=tuple(X.columns),
        dtypes={c: str(X[c].dtype) for c in X.columns},
        events=ordered[list(roles.event_columns)].reset_index(drop=True),
        starts=starts,
        lengths=np.diff(np.r_[starts, len(ids)]),
        learners=ordered[learner_cols].iloc[starts].reset_index(drop=True),
    )


def transition_frequencies(
    table: pd.DataFrame, *, id_column: str, order_column: str, event_column: str, states: list, lag: int = 1,
) -> np.ndarray:
    """Empirical lag-``lag`` transition matrix of a long table (rows: previous event, START last), row-normalised.

    A diagnostic for non-private evaluation (it reads ``table`` exactly).

    Returns
    -------
    ndarray of shape (len(states) + 1, len(states))
        Row ``i`` is the distribution of the event following ``states[i]``
        (``lag`` steps later); the last row follows START (the first ``lag`` events).
    """
    ordered = table.sort_values([id_column, order_column], kind="stable")
    code = pd.Index(states).get_indexer(ordered[event_column])
    ids = ordered[id_column].to_numpy()
    V = len(states)
    prev = np.full(len(code), V)
    same = np.zeros(len(code), dtype=bool)
    same[lag:] = ids[lag:] == ids[:-lag]
    prev[lag:] = np.where(same[lag:], code[:-lag], V)
    ok = code >= 0
    counts = np.bincount(prev[ok] * V + code[ok], minlength=(V + 1) * V).reshape(V + 1, V).astype(float)
    total = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
