"""Shared machinery of the sequence synthesizers (long-format event tables).

A long-format event table has one row per event: a learner id, an order
(time or position), one or several event columns (several form one joint state,
e.g. ``skill`` + ``correct``), optionally a label (one outcome per learner) and
static per-learner columns. :class:`BaseSequenceSynthesizer` validates such a
table, resolves the public event vocabulary (given, or discovered under DP),
the per-learner domain (label and static columns: given as a schema, or
estimated under DP with :func:`skdpsynth.privacy.estimate_schema`), measures
the per-learner group histogram and the per-group length histogram, and leaves
the event model to subclasses (DP-Markov, DP-HistSeq).

Privacy unit: one learner -- all their events and their per-learner values.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from itertools import product
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from skdpsynth._grid import PublicGrid
from skdpsynth.base import BaseSynthesizer, resolve_schema
from skdpsynth.exceptions import PrivacyBudgetError, PrivacyLeakWarning, SchemaError
from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord, approx_dp_to_zcdp
from skdpsynth.privacy._domain import drop_unreleased_categories, estimate_schema, plan_schema_cost
from skdpsynth.privacy._mechanisms import gaussian_mechanism, geometric_mechanism
from skdpsynth.schema import infer_schema

__all__ = ["BaseSequenceSynthesizer", "SequenceData", "discover_vocabulary", "length_bin_edges",
           "transition_frequencies"]


def length_bin_edges(max_length: int, n_bins: int) -> np.ndarray:
    """Public length bins ``[e_j, e_(j+1))`` covering ``1 .. max_length``, geometric widths.

    The last bin is ``{max_length}`` alone: truncation piles long sequences there.
    """
    edges = np.round(np.geomspace(1, max(max_length, 1), max(n_bins, 1))).astype(np.int64)
    return np.unique(np.concatenate([[1], edges, [max_length, max_length + 1]]))


class SequenceData:
    """A validated long table, sorted by (learner, order) -- never stored on the estimator.

    Attributes
    ----------
    events : pandas.DataFrame
        The event columns, sorted.
    starts : ndarray
        Offset of each learner's first row in ``events``.
    lengths : ndarray
        Each learner's full number of events.
    learners : pandas.DataFrame
        One row per learner: the label and static columns (may have no columns).
    """

    def __init__(self, events: pd.DataFrame, starts: np.ndarray, lengths: np.ndarray, learners: pd.DataFrame):
        self.events = events
        self.starts = starts
        self.lengths = lengths
        self.learners = learners

    @property
    def n_learners(self) -> int:
        return len(self.starts)

    def truncated(self, max_length: int) -> tuple[np.ndarray, np.ndarray]:
        """(row positions kept, truncated lengths): each learner's first ``max_length`` events."""
        lengths = np.minimum(self.lengths, max_length)
        learner = np.repeat(np.arange(self.n_learners), lengths)
        offset = np.arange(len(learner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return self.starts[learner] + offset, lengths


def _is_sorted(ids: pd.Series, order: pd.Series) -> bool:
    """Whether rows are already sorted by (id, order) -- then the (costly) sort is skipped."""
    i, o = ids.to_numpy(), order.to_numpy()
    if len(i) < 2:
        return True
    if i.dtype == object or o.dtype == object:
        return False
    same = i[1:] == i[:-1]
    return bool(np.all((i[1:] > i[:-1]) | (same & (o[1:] >= o[:-1]))))


def _state_index(states: list[tuple], columns: list[str]) -> pd.MultiIndex:
    return pd.MultiIndex.from_tuples(states, names=columns)


def encode_states(events: pd.DataFrame, states: list[tuple]) -> np.ndarray:
    """State index of every event row (-1 where the joint event is not in ``states``)."""
    if events.shape[1] == 1:  # fast path: one event column
        index = pd.Index([s[0] for s in states], tupleize_cols=False)
        return np.asarray(index.get_indexer(events.iloc[:, 0]), dtype=np.int64)
    index = _state_index(states, list(events.columns))
    return np.asarray(index.get_indexer(pd.MultiIndex.from_frame(events)), dtype=np.int64)


def discover_vocabulary(
    events: pd.DataFrame, learner: np.ndarray, *, max_contrib: int, epsilon: float | None, delta: float,
    accountant: BudgetAccountant, rng: np.random.Generator,
) -> list[tuple]:
    """Release the event vocabulary (joint states) under (epsilon, delta)-DP.

    Stability-based histogram with bounded contribution (Korolova et al. 2009;
    Wilson et al. 2020), the multi-key version of the per-person category
    discovery in :mod:`skdpsynth.privacy._domain`: each learner counts once
    for each of (at most) the first ``max_contrib`` distinct states they
    visit, so the histogram of learner counts has L1 sensitivity
    ``max_contrib`` under add/remove-one-learner. Laplace(``max_contrib /
    epsilon``) noise is added to every observed state's count and a state is
    released when the noisy count reaches ``1 + (max_contrib / epsilon) *
    log(max_contrib / (2 delta))``: a state present only because of one learner
    has count 1, so each of the at most ``max_contrib`` such states passes with
    probability ``delta / max_contrib`` -- (epsilon, delta)-DP overall.
    With ``epsilon=None`` every observed state is kept (non-private, logged).
    """
    uniques = events.drop_duplicates()
    codes = encode_states(events, list(map(tuple, uniques.itertuples(index=False, name=None))))
    if epsilon is None:
        accountant.spend(BudgetRecord("exact (non-private)", "event vocabulary read from the data", "none",
                                      epsilon=math.inf))
        states = list(map(tuple, uniques.itertuples(index=False, name=None)))
        return sorted(states, key=_sort_key)
    k = int(max_contrib)
    threshold = 1.0 + (k / epsilon) * math.log(k / (2.0 * delta))
    accountant.spend(BudgetRecord(
        "stability-histogram", "event vocabulary discovery (learners per state)", "approx", epsilon=epsilon,
        delta=delta, sensitivity=float(k), noise_scale=k / epsilon,
        details={"threshold": threshold, "max_states_per_learner": k},
    ))
    n_u = len(uniques)
    pair = learner.astype(np.int64) * n_u + codes
    _, first = np.unique(pair, return_index=True)
    first = np.sort(first)  # first visit of each (learner, state), in event order
    who = learner[first]
    rank = np.arange(len(first)) - np.searchsorted(who, who, side="left")
    kept = first[rank < k]
    counts = np.bincount(codes[kept], minlength=n_u).astype(float)
    noisy = counts + rng.laplace(0.0, k / epsilon, size=n_u)
    released = [tuple(r) for r, ok in zip(uniques.itertuples(index=False, name=None), noisy >= threshold) if ok]
    if not released:
        raise SchemaError(
            f"no event is visited by enough learners to be released at this budget (threshold {threshold:.1f} "
            "learners); give the public event vocabulary with `vocabulary=`."
        )
    return sorted(released, key=_sort_key)


def _sort_key(state: tuple) -> tuple:
    return tuple((str(type(v)), v) for v in state)


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


def project_counts(counts: np.ndarray, axis: int = -1) -> np.ndarray:
    """Euclidean projection of noisy counts onto ``{x >= 0, sum(x) = max(sum(counts), 0)}`` along ``axis``.

    Post-processing ("norm-sub"): clipping at zero alone adds the positive part of
    the noise of every empty cell, a bias that grows with the number of cells;
    projecting keeps the (unbiased) noisy total and subtracts one common shift
    from every cell instead (Wang et al. 2020, "Locally differentially private
    frequency estimation with consistency").
    """
    c = np.moveaxis(np.asarray(counts, dtype=float), axis, -1)
    shape = c.shape
    flat = c.reshape(-1, shape[-1])
    total = np.maximum(flat.sum(axis=1), 0.0)
    u = -np.sort(-flat, axis=1)
    css = np.cumsum(u, axis=1) - total[:, None]
    ind = np.arange(1, shape[-1] + 1)
    cond = u - css / ind > 0
    rho = shape[-1] - 1 - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    theta = css[np.arange(len(flat)), rho] / (rho + 1)
    out = np.maximum(flat - theta[:, None], 0.0)
    out[total <= 0] = 0.0
    return np.moveaxis(out.reshape(shape), -1, axis)


def noisy_probabilities(counts: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Project noisy counts (:func:`project_counts`) and normalise along ``axis``; also flags all-zero rows."""
    c = project_counts(counts, axis=axis)
    total = c.sum(axis=axis, keepdims=True)
    empty = np.asarray((total == 0).squeeze(axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(total > 0, c / np.where(total > 0, total, 1.0), 0.0)
    return p, empty


class BaseSequenceSynthesizer(BaseSynthesizer):
    """Base of synthesizers of long-format event tables (one privacy unit = one learner).

    Subclasses set ``_model_name`` and implement ``_model_shape(n_groups, n_states)``,
    ``_model_sensitivity()`` (L1 = L2 bound of one learner's contribution to the
    model counts), ``_exact_model_counts(states, lengths, groups)``,
    ``_finalise_model()`` and ``_sample_events(groups, lengths, rng)``.
    """

    #: dense model tables larger than this are refused before any budget is spent
    max_cells: int = 30_000_000
    _model_name = "events"

    # -- parameters shared by the subclasses are documented there -------------------
    def _event_columns(self) -> list[str]:
        cols = self.event_columns
        if isinstance(cols, str):
            return [cols]
        if cols is None or len(cols) == 0:
            raise ValueError("event_columns must name at least one column.")
        return list(cols)

    def _learner_columns(self) -> list[str]:
        static = [] if self.static_columns is None else (
            [self.static_columns] if isinstance(self.static_columns, str) else list(self.static_columns))
        return ([self.label_column] if self.label_column is not None else []) + static

    def _check_params(self) -> None:
        for name in ("id_column", "order_column"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a column name (str), got {getattr(self, name)!r}.")
        if isinstance(self.max_length, bool) or not isinstance(self.max_length, (int, np.integer)) \
                or self.max_length < 1:
            raise ValueError(f"max_length must be a positive integer, got {self.max_length!r}.")
        if self.duplicate_order not in ("error", "stable"):
            raise ValueError(f"duplicate_order must be 'error' or 'stable', got {self.duplicate_order!r}.")
        if self.mechanism not in ("geometric", "gaussian"):
            raise ValueError(f"mechanism must be 'geometric' or 'gaussian', got {self.mechanism!r}.")
        if self.mechanism == "gaussian" and self.epsilon is not None and self.delta <= 0:
            raise PrivacyBudgetError("mechanism='gaussian' (zCDP) needs delta > 0.")
        discovers = self.vocabulary is None or (bool(self._learner_columns()) and self.schema is None)
        if self.epsilon is not None and self.delta <= 0 and discovers:
            raise PrivacyBudgetError(
                "discovering the event vocabulary or the label/static categories under DP needs delta > 0; "
                "give them as `vocabulary=` and `schema=` or set delta.")
        for name in ("domain_share", "label_share", "length_share"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v < 1):
                raise ValueError(f"{name} must be in (0, 1), got {v!r}.")
        if self.label_share + self.length_share >= 1:
            raise ValueError("label_share + length_share must leave a share of the budget for the event model.")
        k = self.max_states_per_learner
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"max_states_per_learner must be a positive integer, got {self.max_states_per_learner!r}.")
        if not isinstance(self.length_bins, (int, np.integer)) or self.length_bins < 1:
            raise ValueError(f"length_bins must be a positive integer, got {self.length_bins!r}.")
        keys = [self.id_column, self.order_column, *self._event_columns(), *self._learner_columns()]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"column(s) {dup} are given more than one role (id, order, event, label, static).")

    def _resolve_public_vocabulary(self) -> list[tuple] | None:
        vocab, cols = self.vocabulary, self._event_columns()
        if vocab is None:
            return None
        if isinstance(vocab, Mapping):
            missing = [c for c in cols if c not in vocab]
            if missing:
                raise ValueError(f"vocabulary dict lacks the event column(s) {missing}.")
            return [tuple(s) for s in product(*(list(vocab[c]) for c in cols))]
        states = []
        for v in vocab:
            t = tuple(v) if isinstance(v, (tuple, list)) else (v,)
            if len(t) != len(cols):
                raise ValueError(f"vocabulary entry {v!r} has {len(t)} value(s) but there are {len(cols)} event "
                                 f"column(s) {cols}; give tuples in that order.")
            states.append(t)
        if len(set(states)) != len(states):
            raise ValueError("vocabulary has duplicate entries.")
        if not states:
            raise ValueError("vocabulary is empty.")
        return states

    # -- input ------------------------------------------------------------------------
    def _check_input(self, X: Any, y: Any, reset: bool) -> SequenceData:
        self._check_params()
        if not isinstance(X, pd.DataFrame):
            if sp.issparse(X):
                raise TypeError("sparse input is not supported: give a long-format pandas DataFrame of events.")
            shape = np.shape(X)
            if len(shape) == 2 and shape[1] == 0:
                raise ValueError(f"0 feature(s) (shape={shape}) while a minimum of 1 is required.")
            if np.size(X) == 0:
                raise ValueError("the event table is empty (0 rows): at least two learners are needed.")
            raise TypeError(
                f"{type(self).__name__} needs a long-format pandas DataFrame (one row per event, columns "
                f"{self.id_column!r}, {self.order_column!r}, events ...), got {type(X).__name__}."
            )
        if y is not None:
            if self.label_column is None:
                raise ValueError("y was given but label_column is None; set label_column to name the outcome.")
            if self.label_column in X.columns:
                raise SchemaError(f"y is given but {self.label_column!r} is already a column of X.")
            y = np.asarray(y)
            if y.ndim != 1 or len(y) != len(X):
                raise ValueError(f"y must have one value per row of X ({len(X)}), got shape {y.shape}.")
            X = X.assign(**{self.label_column: y})
        cols = self._event_columns()
        learner_cols = self._learner_columns()
        roles = [self.id_column, self.order_column, *cols, *learner_cols]
        missing = [c for c in roles if c not in X.columns]
        if missing:
            raise SchemaError(f"column(s) {missing} named in the parameters are not in X (columns: {list(X.columns)}).")
        extra = [c for c in X.columns if c not in roles]
        if extra:
            raise SchemaError(
                f"column(s) {extra} have no role: name them in static_columns (one value per learner), add them "
                "to event_columns, or drop them before fitting (nothing is dropped silently)."
            )
        if len(X) == 0:
            raise ValueError("the event table is empty (0 rows): at least two learners are needed.")
        for c in [self.id_column, self.order_column, *cols, *([self.label_column] if self.label_column else [])]:
            n_na = int(X[c].isna().sum())
            if n_na:
                raise ValueError(f"column {c!r} has {n_na} missing value(s); id, order, event and label columns "
                                 "must be complete.")
        try:
            ordered = X if _is_sorted(X[self.id_column], X[self.order_column]) else X.sort_values(
                [self.id_column, self.order_column], kind="stable")
        except TypeError as exc:
            raise ValueError(f"columns {self.id_column!r} / {self.order_column!r} must be sortable: {exc}") from exc
        ids = ordered[self.id_column].to_numpy()
        order = ordered[self.order_column].to_numpy()
        new = np.r_[True, ids[1:] != ids[:-1]]
        starts = np.flatnonzero(new)
        if len(starts) < 2:
            raise ValueError(f"the table holds {len(starts)} learner(s); at least two are needed.")
        ties = ~new[1:] & (order[1:] == order[:-1])
        if ties.any() and self.duplicate_order == "error":
            raise ValueError(
                f"{int(ties.sum())} event(s) share their learner's {self.order_column!r} value with another event; "
                "make the order unique, or set duplicate_order='stable' to keep tied events in row order."
            )
        lengths = np.diff(np.r_[starts, len(ids)])
        learners = ordered[learner_cols].iloc[starts].reset_index(drop=True)
        if learner_cols:
            nun = ordered.groupby(self.id_column, sort=True)[learner_cols].nunique(dropna=False).max()
            varying = [c for c in learner_cols if nun[c] > 1]
            if varying:
                raise ValueError(f"column(s) {varying} vary within a learner; label and static columns must hold one "
                                 "value per learner.")
        events = ordered[cols].reset_index(drop=True)
        if reset:
            self.columns_ = tuple(X.columns)  # output columns (a joined y included)
            n_x = len(self.columns_) - (y is not None)
            self.n_features_in_ = n_x  # columns of X, as in scikit-learn (y not counted)
            self.feature_names_in_ = np.asarray(self.columns_[:n_x], dtype=object)
            self.dtypes_ = {c: X[c].dtype for c in X.columns}
        elif set(X.columns) != set(self.columns_):
            raise SchemaError(f"this cohort's columns {list(X.columns)} differ from the first cohort's "
                              f"{list(self.columns_)}.")
        if reset:
            public = self._resolve_public_vocabulary()
        else:
            # events outside a public (or exactly read) vocabulary are an error; under a DP-discovered one they
            # become the "unreleased" state
            has_unreleased = self.n_states_ > len(self.states_)
            public = None if has_unreleased else self.states_
        if public is not None and reset:  # too large a model is refused before any budget is spent
            self._check_size(1, len(public))
        if public is not None:  # unknown events are an error before any budget is spent
            unknown = encode_states(events, public) < 0
            if unknown.any():
                shown = events[unknown].drop_duplicates().head(5)
                raise SchemaError(
                    f"{int(unknown.sum())} event(s) in {cols} are not in the vocabulary, e.g. "
                    f"{list(map(tuple, shown.itertuples(index=False, name=None)))}; add them to `vocabulary`."
                )
        if reset:
            schema = resolve_schema(self.schema)
        else:
            schema = self.learner_schema_ if self.learner_schema_public_ else None
        if learner_cols and schema is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                schema.select(learner_cols).validate(learners)
        return SequenceData(events, starts, lengths, learners)

    # -- budget plan -------------------------------------------------------------------------
    def _domain_parts(self, first: bool) -> tuple[bool, bool]:
        """(discover vocabulary, estimate learner schema) under DP in this cohort."""
        if not first or self.epsilon is None:
            return False, False
        return self.vocabulary is None, bool(self._learner_columns()) and self.schema is None

    def _domain_budget(self, first: bool) -> tuple[float, float]:
        voc, sch = self._domain_parts(first)
        if not (voc or sch):
            return 0.0, 0.0
        delta_share = self.delta if self.mechanism == "geometric" else self.delta * self.domain_share
        return self.epsilon * self.domain_share, delta_share

    def _delta_for_zcdp(self, X: Any) -> float:
        if self.mechanism != "gaussian" or self.epsilon is None:
            return 0.0
        first = not hasattr(self, "n_cohorts_") or self.n_cohorts_ == 0
        return self.delta - self._domain_budget(first)[1]

    def _measurement_shares(self) -> dict[str, float]:
        """Shares of the non-domain budget: learner groups, lengths, the event model."""
        label = self.label_share if self._learner_columns() else 0.0
        return {"groups": label, "lengths": self.length_share, "model": 1.0 - label - self.length_share}

    def _plan(self, data: SequenceData, accountant: BudgetAccountant, first: bool) -> dict[str, Any]:
        eps_dom, delta_dom = self._domain_budget(first)
        voc, sch = self._domain_parts(first)
        records: list[BudgetRecord] = []
        plan: dict[str, Any] = {"eps_dom": eps_dom, "delta_dom": delta_dom}
        if voc and sch:
            plan["voc"], plan["sch"] = (eps_dom / 2, delta_dom / 2), (eps_dom / 2, delta_dom / 2)
        elif voc:
            plan["voc"] = (eps_dom, delta_dom)
        elif sch:
            plan["sch"] = (eps_dom, delta_dom)
        if "voc" in plan:
            records.append(BudgetRecord("stability-histogram", "", "approx", epsilon=plan["voc"][0],
                                        delta=plan["voc"][1]))
        if "sch" in plan:
            records += plan_schema_cost(data.learners, *plan["sch"])
        shares = self._measurement_shares()
        if self.mechanism == "geometric":
            rest = self.epsilon - eps_dom
            plan["eps"] = {k: v * rest for k, v in shares.items() if v > 0}
            records += [BudgetRecord("geometric", k, "pure", epsilon=e) for k, e in plan["eps"].items()]
        else:
            rho = approx_dp_to_zcdp(self.epsilon - eps_dom, accountant.delta_zcdp)
            plan["rho"] = {k: v * rho for k, v in shares.items() if v > 0}
            records += [BudgetRecord("gaussian", k, "zcdp", rho=r) for k, r in plan["rho"].items()]
        accountant.require(records, what=f"{type(self).__name__}.{'fit' if first else 'partial_fit'}")
        return plan

    def _measure(self, exact: np.ndarray, *, what: str, sensitivity: float, plan: dict | None,
                 accountant: BudgetAccountant, rng: np.random.Generator) -> np.ndarray:
        """Noisy counts through the chosen mechanism (charged to ``accountant``)."""
        part = {"group": "groups", "length": "lengths"}.get(what.split()[0], "model")
        target = f"{what} (L1=L2 sensitivity {sensitivity:g} per learner)"
        if plan is None:
            accountant.spend(BudgetRecord("exact (non-private)", what, "none", epsilon=math.inf))
            return exact.astype(float)
        if self.mechanism == "geometric":
            return geometric_mechanism(exact, sensitivity=sensitivity, epsilon=plan["eps"][part], rng=rng,
                                       accountant=accountant, target=target).astype(float)
        return gaussian_mechanism(exact, l2_sensitivity=sensitivity, rho=plan["rho"][part], rng=rng,
                                  accountant=accountant, target=target)

    # -- fitting -------------------------------------------------------------------------------
    def _fit_cohort(self, data: SequenceData, accountant: BudgetAccountant, rngs: dict, first: bool) -> None:
        cols = self._event_columns()
        learner_cols = self._learner_columns()
        plan = self._plan(data, accountant, first) if self.epsilon is not None else None
        if first:
            self.event_columns_ = cols
            self.length_edges_ = length_bin_edges(int(self.max_length), int(self.length_bins))
            public = self._resolve_public_vocabulary()
            self.vocabulary_private_ = public is None
            if public is None:
                learner = np.repeat(np.arange(data.n_learners), data.lengths)
                rows, _ = data.truncated(int(self.max_length))
                eps_v, delta_v = plan["voc"] if plan is not None else (None, 0.0)
                public = discover_vocabulary(data.events.iloc[rows], learner[rows],
                                             max_contrib=int(self.max_states_per_learner), epsilon=eps_v,
                                             delta=delta_v, accountant=accountant, rng=rngs["domain"])
            self.states_ = public
            # an extra state for events whose value was not released (written as missing on sample)
            self.n_states_ = len(public) + int(self.vocabulary_private_ and self.epsilon is not None)
            self.learner_schema_, self.learner_schema_public_ = None, True
            if learner_cols:
                self.learner_schema_ = self._learner_domain(data, plan, accountant, rngs["domain"])
                self.learner_grid_ = PublicGrid(self.learner_schema_, n_bins=int(self.static_bins))
            n_cells = self._group_cells()
            self.n_groups_ = self._n_label_cells()
            self._check_size(self.n_groups_, self.n_states_)
            self.group_counts_ = np.zeros(n_cells)
            self.length_counts_ = np.zeros((self.n_groups_, len(self.length_edges_) - 1))
            self._init_model()
        rows, lengths = data.truncated(int(self.max_length))
        states = encode_states(data.events.iloc[rows], self.states_)
        unknown = states < 0
        if unknown.any():  # only possible with a DP-discovered vocabulary
            warnings.warn(
                f"{int(unknown.sum())} event(s) whose value was not released by the DP vocabulary are kept as one "
                "'unreleased' state (written as missing values on sample).", UserWarning, stacklevel=4)
            states[unknown] = len(self.states_)
        cells, labels = self._encode_learners(data)
        if learner_cols:
            exact = np.bincount(cells, minlength=len(self.group_counts_))
            self.group_counts_ = self.group_counts_ + self._measure(
                exact, what="group histogram (label and static columns per learner)", sensitivity=1.0, plan=plan,
                accountant=accountant, rng=rngs["noise"])
        nb = len(self.length_edges_) - 1
        length_bin = np.searchsorted(self.length_edges_, lengths, side="right") - 1
        exact = np.bincount(labels * nb + length_bin, minlength=self.n_groups_ * nb).reshape(self.n_groups_, nb)
        self.length_counts_ = self.length_counts_ + self._measure(
            exact, what="length histogram per label (truncated lengths)", sensitivity=1.0, plan=plan,
            accountant=accountant, rng=rngs["noise"])
        exact = self._exact_model_counts(states, lengths, labels)
        self._add_model_counts(self._measure(
            exact, what=f"{self._model_name} per label", sensitivity=float(self._model_sensitivity()), plan=plan,
            accountant=accountant, rng=rngs["noise"]))
        self._finalise()

    def _learner_domain(self, data: SequenceData, plan: dict | None, accountant: BudgetAccountant, rng):
        schema = resolve_schema(self.schema)
        learner_cols = self._learner_columns()
        if schema is not None:
            return schema.select(learner_cols)
        self.learner_schema_public_ = False
        if plan is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                inferred = infer_schema(data.learners)
            accountant.spend(BudgetRecord("exact (non-private)", "label/static domain read from the data", "none",
                                          epsilon=math.inf))
            return inferred
        # labels too rare to be released become the label's missing cell (written as missing on sample)
        return estimate_schema(data.learners, epsilon=plan["sch"][0], delta=plan["sch"][1], accountant=accountant,
                               rng=rng)

    def _encode_learners(self, data: SequenceData) -> tuple[np.ndarray, np.ndarray]:
        """(joint cell of label and static columns, label cell) per learner."""
        if not self._learner_columns():
            zeros = np.zeros(data.n_learners, dtype=np.int64)
            return zeros, zeros
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            learners = self.learner_schema_.validate(drop_unreleased_categories(data.learners, self.learner_schema_))
        codes = self.learner_grid_.encode(learners)
        cells = np.ravel_multi_index(codes.T, tuple(self.learner_grid_.n_cells)) if codes.shape[1] > 1 else codes[:, 0]
        labels = codes[:, 0] if self.label_column is not None else np.zeros(len(codes), dtype=np.int64)
        return np.asarray(cells, dtype=np.int64), np.asarray(labels, dtype=np.int64)

    def _group_cells(self) -> int:
        return int(np.prod(self.learner_grid_.n_cells)) if self._learner_columns() else 1

    def _n_label_cells(self) -> int:
        return int(self.learner_grid_.n_cells[0]) if self.label_column is not None else 1

    def _check_size(self, n_groups: int, n_states: int) -> None:
        size = int(np.prod(self._model_shape(n_groups, n_states), dtype=np.float64))
        if size > self.max_cells:
            raise ValueError(
                f"the {self._model_name} table would have {size:,} cells ({n_states} states, "
                f"{n_groups} label groups), more than max_cells={self.max_cells:,}; use a smaller vocabulary "
                "or a lower order."
            )

    def _finalise(self) -> None:
        if self._learner_columns():
            p, empty = noisy_probabilities(self.group_counts_)
            self.group_probs_ = p if not empty else np.full(len(p), 1.0 / len(p))
        lp, empty = noisy_probabilities(self.length_counts_, axis=1)
        overall, none = noisy_probabilities(self.length_counts_.sum(axis=0))
        fallback = overall if not none else np.full(lp.shape[1], 1.0 / lp.shape[1])
        lp[empty] = fallback
        self.length_probs_ = lp
        self._finalise_model()

    # -- sampling ---------------------------------------------------------------------------
    def _sample(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        learner_cols = self._learner_columns()
        out: dict[str, Any] = {}
        if learner_cols:
            cells = rng.choice(len(self.group_probs_), size=n_samples, p=self.group_probs_)
            codes = np.column_stack(np.unravel_index(cells, tuple(self.learner_grid_.n_cells)))
            learners = self.learner_grid_.decode(codes, rng)
            labels = codes[:, 0] if self.label_column is not None else np.zeros(n_samples, dtype=np.int64)
        else:
            labels = np.zeros(n_samples, dtype=np.int64)
        cum = np.cumsum(self.length_probs_, axis=1)
        b = (cum[labels] < rng.random(n_samples)[:, None] * cum[labels, -1:]).sum(axis=1)
        b = np.minimum(b, cum.shape[1] - 1)
        lo, hi = self.length_edges_[b], self.length_edges_[b + 1]
        lengths = lo + np.floor(rng.random(n_samples) * (hi - lo)).astype(np.int64)
        states = self._sample_events(labels, lengths, rng)
        learner = np.repeat(np.arange(n_samples), lengths)
        out[self.id_column] = learner
        out[self.order_column] = np.arange(len(learner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        table = np.array(self.states_ + [(np.nan,) * len(self.event_columns_)], dtype=object)
        if table.ndim == 1:  # states of one element each were turned into a flat array
            table = table.reshape(-1, len(self.event_columns_))
        for j, c in enumerate(self.event_columns_):
            out[c] = table[states, j]
        for c in learner_cols:
            out[c] = learners[c].to_numpy()[learner]
        frame = pd.DataFrame(out)
        return self._restore_dtypes(frame[list(self.columns_)])

    def _restore_dtypes(self, frame: pd.DataFrame) -> pd.DataFrame:
        for c in self.event_columns_ + self._learner_columns():
            dtype = self.dtypes_[c]
            keeps_na = pd.api.types.is_float_dtype(dtype) or pd.api.types.is_object_dtype(dtype)
            if frame[c].isna().any() and not keeps_na:
                continue  # missing values: keep object / float
            try:
                frame[c] = frame[c].astype(dtype)
            except (TypeError, ValueError):
                pass
        return frame

    # -- hooks -----------------------------------------------------------------------------------
    def _model_shape(self, n_groups: int, n_states: int) -> tuple[int, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _model_sensitivity(self) -> float:
        """Largest L1 (and L2) norm of one learner's contribution to the model counts."""
        return float(self.max_length)

    def _init_model(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _exact_model_counts(self, states: np.ndarray, lengths: np.ndarray, labels: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _add_model_counts(self, noisy: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _finalise_model(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _sample_events(self, labels: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

