"""The base of the sequence synthesizers (long-format event tables; one privacy unit = one learner).

:class:`BaseSequenceSynthesizer` validates a long table
(:mod:`~skdpsynth.synthesizers._sequence_data`), resolves the public event
vocabulary and the per-learner domain
(:mod:`~skdpsynth.synthesizers._sequence_domain`: the model's budget is planned
first and passed to the domain releases, so that under ``mechanism="gaussian"``
they compose in zCDP with it), measures the per-learner group histogram and the
per-group length histogram, and leaves the event model to subclasses
(DP-Markov, DP-HistSeq). The fit sees the learners only through a
:class:`~skdpsynth.privacy._sequences.PrivateSequences` handle: every answer
is a DP query whose sensitivity the handle derives (the model counts' from the
truncation at ``max_length`` it does itself).
"""

from __future__ import annotations

import copy
import os
import warnings
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from skdpsynth._grid import PublicGrid
from skdpsynth._release import restore_dtypes
from skdpsynth.base import BaseSynthesizer, BaseTabularSynthesizer, FitContext
from skdpsynth.exceptions import PrivacyBudgetError, SchemaError
from skdpsynth.privacy import BudgetRecord, normalise_counts
from skdpsynth.privacy._clipping import clip_cost, release_clip_counts, warn_clipped_exactly
from skdpsynth.privacy._domain import drop_unreleased_categories
from skdpsynth.privacy._mechanisms import geometric_variance
from skdpsynth.privacy._postprocess import inverse_variance_mean
from skdpsynth.privacy._sequences import PrivateSequences
from skdpsynth.schema import TableSchema, resolve_schema
from skdpsynth.synthesizers._sequence_data import (
    EventRoles,
    SequenceData,
    check_in_vocabulary,
    decode_states,
    event_specs,
    length_bin_edges,
    read_event_table,
    resolve_vocabulary,
    sample_lengths,
)
from skdpsynth.synthesizers._sequence_domain import (
    DomainBudget,
    cohort_budget,
    discover_vocabulary,
    domain_share,
    domain_slice,
    learner_domain,
    record_schema_privacy,
    vocabulary_advice,
    zcdp_delta,
)
from skdpsynth.utils._param_validation import Interval, StrOptions

__all__ = ["BaseSequenceSynthesizer"]

_SHARE = [Interval(Real, 0, 1, closed="neither")]
#: a warning about the data fires when a noisy total passes what noise alone crosses once in this many fits
_FALSE_ALARM = 10_000
_POSITIVE_INT = [Interval(Integral, 1, None, closed="left")]


@dataclass(frozen=True)
class _Plan:
    """One cohort's budget: the domain releases (and what is charged after each), each measurement's epsilon or rho."""

    domain: DomainBudget
    measurements: dict[str, float]


class BaseSequenceSynthesizer(BaseSynthesizer):
    """Base of synthesizers of long-format event tables (one privacy unit = one learner).

    Subclasses set ``_model_name`` and implement ``_model_order`` (the
    previous states in each counted key: 0 for event counts), ``_model_shape(n_groups,
    n_states)``, ``_add_model_counts(noisy, first)``, ``_finalise_model()`` and
    ``_sample_events(groups, lengths, rng)``. The model counts are the handle's
    :meth:`~skdpsynth.privacy._sequences.PrivateSequences.event_counts` (L1 = L2
    sensitivity ``max_length`` per learner, from the handle's own truncation).
    """

    _parameter_constraints: dict = {
        **BaseSynthesizer._parameter_constraints,
        "id_column": [str],
        "order_column": [str],
        "event_columns": [str, list, tuple],
        "label_column": [str, None],
        "static_columns": [str, list, tuple, None],
        "max_length": _POSITIVE_INT,
        "vocabulary": ["array-like", Mapping, None],
        "schema": [TableSchema, dict, str, os.PathLike, None],
        "mechanism": [StrOptions({"geometric", "gaussian"})],
        "domain_share": [*_SHARE, StrOptions({"auto"})],
        "label_share": _SHARE,
        "length_share": _SHARE,
        "length_bins": _POSITIVE_INT,
        "max_states_per_learner": _POSITIVE_INT,
        "static_bins": _POSITIVE_INT,
        "duplicate_order": [StrOptions({"error", "stable"})],
        "cohort_composition": BaseTabularSynthesizer._COMPOSITION,
    }

    #: dense model tables larger than this are refused before any budget is spent
    max_cells: int = 30_000_000
    _model_name = "events"
    #: the fit sees the learners only through a PrivateSequences handle (see tests/test_boundary.py)
    _takes_table = True

    # -- roles and settings ---------------------------------------------------------------
    def _roles(self) -> EventRoles:
        events = [self.event_columns] if isinstance(self.event_columns, str) else list(self.event_columns)
        if not events:
            raise ValueError("event_columns must name at least one column.")
        static = self.static_columns
        static = () if static is None else (static,) if isinstance(static, str) else tuple(static)
        return EventRoles(self.id_column, self.order_column, tuple(events), self.label_column, static)

    def _delta_required_by(self) -> str | None:
        return "with mechanism='gaussian' measures under zCDP" if self.mechanism == "gaussian" else None

    def _check_settings(self) -> EventRoles:
        """Checks between parameters that their constraints cannot express (before any budget is spent)."""
        roles = self._roles()
        discovers = self.vocabulary is None or (bool(roles.learner_columns) and self.schema is None)
        if self.epsilon is not None and self.delta <= 0 and discovers:
            raise PrivacyBudgetError(
                "discovering the event vocabulary or the label/static categories under DP needs delta > 0; "
                "give them as `vocabulary=` and `schema=` or set delta.")
        if self.label_share + self.length_share >= 1:
            raise ValueError("label_share + length_share must leave a share of the budget for the event model.")
        keys = roles.all
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"column(s) {dup} are given more than one role (id, order, event, label, static).")
        return roles

    # -- input ----------------------------------------------------------------------------
    def _check_input(self, X: Any, y: Any, reset: bool) -> SequenceData:
        roles = self._check_settings()
        data = read_event_table(X, y, roles, duplicate_order=self.duplicate_order, owner=type(self).__name__)
        if reset:
            self.columns_ = data.frame_columns  # output columns (a joined y included)
            n_x = len(self.columns_) - (y is not None)
            self.n_features_in_ = n_x  # columns of X, as in scikit-learn (y not counted)
            self.feature_names_in_ = np.asarray(self.columns_[:n_x], dtype=object)
        elif set(data.frame_columns) != set(self.columns_):
            raise SchemaError(f"this cohort's columns {list(data.frame_columns)} differ from the first cohort's "
                              f"{list(self.columns_)}.")
        self._check_domain(data, roles, reset)
        return data

    def _check_domain(self, data: SequenceData, roles: EventRoles, reset: bool) -> None:
        """Events outside a public vocabulary, too large a model, values outside a given schema: all refused here."""
        if reset:
            public = resolve_vocabulary(self.vocabulary, list(roles.event_columns))
            if public is not None:
                self._check_size(1, len(public))
        else:
            # under a DP-discovered vocabulary unknown events become the "unreleased" state
            public = None if self.n_states_ > len(self.states_) else self.states_
        if public is not None:
            check_in_vocabulary(data.events, public)
        schema = resolve_schema(self.schema)
        if roles.learner_columns and schema is not None:
            missing = [c for c in roles.learner_columns if c not in schema]
            if missing:
                raise SchemaError(f"label/static column(s) {missing} are not in the schema.")
            schema.select(roles.learner_columns)._validate_for_fit(data.learners)  # clipping is counted in the fit

    # -- budget plan ----------------------------------------------------------------------
    def _domain_parts(self, first: bool) -> tuple[bool, bool]:
        """(discover vocabulary, estimate learner schema) under DP in this cohort."""
        if not first or self.epsilon is None:
            return False, False
        return self.vocabulary is None, bool(self._roles().learner_columns) and self.schema is None

    def _domain_budget(self, first: bool) -> tuple[float, float]:
        if not any(self._domain_parts(first)):
            return 0.0, 0.0
        return domain_slice(self.epsilon, self.delta, self.mechanism, domain_share(self))

    def _delta_for_zcdp(self, data: Any) -> float:
        return zcdp_delta(self.epsilon, self.delta, self.mechanism, domain_share(self),
                          self._domain_parts(self.n_cohorts_ == 0))

    def _measurement_shares(self) -> dict[str, float]:
        """Shares of the non-domain budget: learner groups, lengths, the event model."""
        label = self.label_share if self._roles().learner_columns else 0.0
        shares = {"groups": label, "lengths": self.length_share, "model": 1.0 - label - self.length_share}
        return {k: v for k, v in shares.items() if v > 0}

    def _plan(self, data: PrivateSequences, ctx: FitContext) -> _Plan | None:
        """The cohort's budget, checked whole against the request before anything is spent (None: non-private)."""
        if not ctx.accountant.private:
            return None
        domain, budget, model = cohort_budget(self, ctx.accountant, data.learner_template,
                                              self._domain_parts(ctx.first),
                                              self.mechanism, domain_share(self))
        ctx.accountant.require([*domain.records, *model],
                               what=f"{type(self).__name__}.{'fit' if ctx.first else 'partial_fit'}")
        return _Plan(domain, budget)

    def _cost(self, part: str, plan: _Plan | None) -> dict[str, float]:
        """The keyword cost of measurement ``part`` for the handle's queries (none without privacy)."""
        if plan is None:
            return {}
        return {"epsilon" if self.mechanism == "geometric" else "rho": plan.measurements[part]}

    @staticmethod
    def _target(what: str, sensitivity: float, plan: _Plan | None) -> str:
        """The budget log's name of a measurement, with the sensitivity the handle charges it at."""
        return what if plan is None else f"{what} (L1=L2 sensitivity {sensitivity:g} per learner)"

    # -- fitting --------------------------------------------------------------------------
    def _private_view(self, data: SequenceData, ctx: FitContext) -> PrivateSequences:
        """The cohort behind a handle of DP queries: all the fit sees of the learners."""
        return PrivateSequences(data, max_length=int(self.max_length), accountant=ctx.accountant, noise=ctx.noise)

    def _fit_cohort(self, data: SequenceData, ctx: FitContext) -> None:
        cohort = self._private_view(data, ctx)  # from here on the learners are seen only through DP queries
        self._count_clipped(cohort, ctx)
        plan = self._plan(cohort, ctx)
        if ctx.first:
            self._fit_domain(cohort, plan, ctx)
        record_schema_privacy(self.learner_schema_, ctx)
        self._measure_learners(cohort, plan, ctx)
        noisy, sensitivity = self._measure_model(cohort, plan)
        self._warn_unreleased_events(noisy, sensitivity, plan)  # here: its stacklevel points at the caller of fit
        self._add_model_counts(noisy, ctx.first)
        self._finalise()

    def _measure_model(self, data: PrivateSequences, plan: _Plan | None) -> tuple[np.ndarray, float]:
        """The noisy model counts per label and the sensitivity the handle charged them at (``max_length``: the
        handle truncates every learner itself)."""
        counts = data.event_counts(self.states_, self.n_states_, order=self._model_order, label=self._label_cells,
                                   n_labels=self.n_groups_)
        sensitivity = counts.sensitivity()[0]
        what = (f"{self._model_name} per label (each learner's first max_length={int(self.max_length)} events; "
                "longer sequences are truncated)")
        noisy = counts.measure(target=self._target(what, sensitivity, plan), **self._cost("model", plan))
        return noisy.astype(float).reshape(self._model_shape(self.n_groups_, self.n_states_)), sensitivity

    def _fixed_learner_schema(self, first: bool) -> TableSchema | None:
        """The label/static schema fixed before this cohort (given, or estimated on the first), if any."""
        columns = self._roles().learner_columns
        if not columns:
            return None
        if not first:
            return self.learner_schema_
        given = resolve_schema(self.schema)
        return None if given is None else given.select(columns)

    def _count_clipped(self, data: PrivateSequences, ctx: FitContext) -> None:
        """Label/static values a fixed schema clips, released as a noisy count per column (``CLIP_COUNT_SHARE`` of
        epsilon, or of rho under ``mechanism="gaussian"``; see :mod:`skdpsynth.privacy._clipping`): never the exact
        count. The cohort's plan is checked
        against what is left before it is charged. A cohort whose label/static domain is estimated skips it (the
        estimate's own noisy tail check covers its bounds)."""
        schema = self._fixed_learner_schema(ctx.first)
        if schema is None:
            return
        tally = data.clipped(schema)
        if not ctx.accountant.private:
            warn_clipped_exactly(tally, stacklevel=6)
            return
        if not tally:  # no bounded column (public)
            return
        cost = clip_cost(ctx.accountant, zcdp=self.mechanism == "gaussian")  # the whole fit stays Gaussian
        probe = copy.deepcopy(ctx.accountant)  # the plan after the count, before anything is spent
        probe.spend(BudgetRecord("planned", "values clipped to the public bounds",
                                 "zcdp" if "rho" in cost else "pure", **cost))
        self._plan(data, replace(ctx, accountant=probe))
        self.clip_counts_ = release_clip_counts(tally, noise=ctx.noise, accountant=ctx.accountant,
                                                label=type(self).__name__, stacklevel=6, **cost)

    def _measure_learners(self, data: PrivateSequences, plan: _Plan | None, ctx: FitContext) -> None:
        """The group histogram (label and static cells) and the per-label length histogram; sets ``n_estimate_``.

        Every kept learner is in one cell of each histogram (L1 = L2 sensitivity 1), so each noisy total estimates
        the cohort's size; ``n_estimate_`` weighs the two by the inverse of their noise variance (post-processing,
        from public parameters): on OULAD AAA at epsilon 1 the 4-cell label histogram's total is about twice as
        tight as the 80-cell length histogram's.
        """
        totals = [self._measure_groups(data, plan, ctx)] if self.learner_schema_ is not None else []
        nb = len(self.length_edges_) - 1
        noisy = data.learner_histogram(
            self._length_cells, self.n_groups_ * nb, **self._cost("lengths", plan),
            target=self._target("length histogram per label (truncated lengths)", 1.0, plan))
        noisy = noisy.astype(float).reshape(self.n_groups_, nb)
        self.length_counts_ = noisy if ctx.first else self.length_counts_ + noisy
        totals.append((noisy.sum(), noisy.size * self._cell_variance("lengths", plan)))
        estimate, _ = inverse_variance_mean([t for t, _ in totals], [v for _, v in totals])
        self.n_estimate_ = max(int(round(estimate)), 1)

    def _measure_groups(self, data: PrivateSequences, plan: _Plan | None, ctx: FitContext) -> tuple[float, float]:
        """The group histogram; returns its noisy total over the kept learners and that total's noise variance.

        When the label's categories were estimated under DP, the histogram has one more cell: the learners left out
        because their label was not released (each learner is still in one cell: sensitivity 1, no extra cost). A
        warning says so only when that noisy cell stands clear of the noise (:meth:`_warn_above_noise`).
        """
        extra = self._label_leaves_out()
        what = "group histogram (label and static columns per learner" + (
            "; one cell for learners whose label was not released)" if extra else ")")
        noisy = data.learner_histogram(self._group_codes, self._group_cells() + int(extra),
                                       **self._cost("groups", plan), target=self._target(what, 1.0, plan))
        noisy = noisy.astype(float)
        if extra:
            noisy, dropped = noisy[:-1], noisy[-1]
            self._warn_above_noise(dropped, self._cell_variance("groups", plan), f"learners whose "
                                   f"{self.label_column!r} was not released by the DP domain estimate are left out "
                                   "of the model", "a noisy count from the group histogram")
        self.group_counts_ = noisy if ctx.first else self.group_counts_ + noisy
        return noisy.sum(), noisy.size * self._cell_variance("groups", plan)

    def _cell_variance(self, part: str, plan: _Plan | None, sensitivity: float = 1.0) -> float:
        """Noise variance of one count of measurement ``part`` (public: from the plan and the sensitivity)."""
        if plan is None:
            return 0.0
        if self.mechanism == "geometric":
            return geometric_variance(sensitivity, plan.measurements[part])
        return sensitivity**2 / (2 * plan.measurements[part])  # discrete Gaussian, sigma^2 = s^2 / (2 rho) at most

    def _label_leaves_out(self) -> bool:
        """Whether learners may be left out: a categorical label whose categories were estimated (public)."""
        if self.label_column is None or resolve_schema(self.schema) is not None:
            return False
        return self.learner_schema_[self.label_column].kind == "categorical"

    def _warn_above_noise(self, noisy_total: float, variance: float, what: str, source: str) -> None:
        """Warn ``what``, with the noisy total and its ``source``, when that total stands clear of its noise.

        Post-processing of a DP answer, so the warning is as private as the count. The threshold, ``sqrt(2 log F)``
        noise sds with ``F = _FALSE_ALARM``, is rarely passed by noise alone (below ``1 / F`` for Gaussian noise,
        about 1e-3 for one discrete Laplace cell). Without privacy (variance 0) any positive count warns.
        """
        if noisy_total > np.sqrt(2 * np.log(_FALSE_ALARM)) * np.sqrt(variance):
            warnings.warn(f"{what}: about {max(float(noisy_total), 0.0):.0f} ({source}).", UserWarning, stacklevel=6)

    def _warn_unreleased_events(self, noisy: np.ndarray, sensitivity: float, plan: _Plan | None) -> None:
        """Under a DP-discovered vocabulary, warn when the noisy model counts hold events of the unreleased state."""
        if self.n_states_ == len(self.states_):
            return
        column = noisy[..., len(self.states_)]  # the model's last axis is the next state / the event
        self._warn_above_noise(
            column.sum(), column.size * self._cell_variance("model", plan, sensitivity),
            f"events in {self.event_columns_} whose value was not released by the DP vocabulary are kept as one "
            "'unreleased' state (written as missing values on sample)", f"a noisy total of the {self._model_name}")

    def _fit_domain(self, data: PrivateSequences, plan: _Plan | None, ctx: FitContext) -> None:
        """First cohort: the vocabulary, the label/static domain and the public bins."""
        roles = self._roles()
        self.event_columns_ = list(roles.event_columns)
        self.length_edges_ = length_bin_edges(int(self.max_length), int(self.length_bins))
        public = resolve_vocabulary(self.vocabulary, self.event_columns_)
        self.vocabulary_private_ = public is None
        estimated = self._domain_parts(True)[1] and plan is not None
        if public is None:
            eps_v, delta_v = plan.domain.vocabulary if plan is not None else (None, 0.0)
            public = discover_vocabulary(
                data, max_contrib=int(self.max_states_per_learner), epsilon=eps_v, delta=delta_v, ctx=ctx,
                later=plan.domain.vocabulary_later if plan is not None else (),
                advice=lambda n_hat: vocabulary_advice(self, data.learner_template if estimated else None, n_hat))
        self.states_ = public
        # an extra state for events whose value was not released (written as missing on sample)
        self.n_states_ = len(public) + int(self.vocabulary_private_ and plan is not None)
        self.learner_schema_ = None
        if roles.learner_columns:
            self.learner_schema_ = learner_domain(data, resolve_schema(self.schema), label_column=self.label_column,
                                                  budget=plan.domain.learners if plan is not None else None,
                                                  later=plan.domain.learners_later if plan is not None else ())
            self.learner_grid_ = PublicGrid(self.learner_schema_, n_bins=int(self.static_bins))
        self.n_groups_ = int(self.learner_grid_.n_cells[0]) if self.label_column is not None else 1
        self._check_size(self.n_groups_, self.n_states_)

    def _learner_codes(self, learners: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(joint cell of label and static columns, label cell) of every learner; -1 for a learner left out.

        A public row-wise map (the handle applies it). Under an estimated domain, static values it does not hold
        become missing, and learners whose label it does not hold are left out: the label column is complete by
        contract, so it has no missing cell.
        """
        n = len(learners)
        if self.learner_schema_ is None:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        keep = np.ones(n, dtype=bool)
        if resolve_schema(self.schema) is None:
            label = self.learner_schema_[self.label_column] if self.label_column is not None else None
            if label is not None and label.kind == "categorical":
                keep = learners[label.name].astype(object).isin(label.categories).to_numpy()
                learners = learners[keep]
            learners = drop_unreleased_categories(learners, self.learner_schema_)
        codes = self.learner_grid_.encode(self.learner_schema_._validate_for_fit(learners)[0])  # counted above
        cells, labels = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        cells[keep] = np.ravel_multi_index(codes.T, tuple(self.learner_grid_.n_cells)) if codes.shape[1] > 1 \
            else codes[:, 0]
        labels[keep] = codes[:, 0] if self.label_column is not None else 0
        return cells, labels

    def _label_cells(self, learners: pd.DataFrame) -> np.ndarray:
        """Label cell of every learner (-1: left out); the model counts' public per-learner key."""
        return self._learner_codes(learners)[1]

    def _group_codes(self, learners: pd.DataFrame, lengths: np.ndarray) -> np.ndarray:
        """Cell of every learner in the group histogram: the left-out learners in one more cell at the end."""
        cells = self._learner_codes(learners)[0]
        return np.where(cells >= 0, cells, self._group_cells())

    def _length_cells(self, learners: pd.DataFrame, lengths: np.ndarray) -> np.ndarray:
        """Cell (label, length bin of the truncated length) of every learner; -1 for a learner left out."""
        labels = self._learner_codes(learners)[1]
        nb = len(self.length_edges_) - 1
        cells = labels * nb + np.searchsorted(self.length_edges_, lengths, side="right") - 1
        return np.where(labels >= 0, cells, -1)

    def _group_cells(self) -> int:
        return int(np.prod(self.learner_grid_.n_cells)) if self.learner_schema_ is not None else 1

    def _check_size(self, n_groups: int, n_states: int) -> None:
        size = int(np.prod(self._model_shape(n_groups, n_states), dtype=np.float64))
        if size > self.max_cells:
            raise ValueError(
                f"the {self._model_name} table would have {size:,} cells ({n_states} states, "
                f"{n_groups} label groups), more than max_cells={self.max_cells:,}; use a smaller vocabulary "
                "or a lower order."
            )

    def _finalise(self) -> None:
        """Probabilities from the noisy counts (post-processing)."""
        if self.learner_schema_ is not None:
            p, empty = normalise_counts(self.group_counts_)
            self.group_probs_ = p if not empty else np.full(len(p), 1.0 / len(p))
        lp, empty = normalise_counts(self.length_counts_, axis=1)
        overall, none = normalise_counts(self.length_counts_.sum(axis=0))
        lp[empty] = overall if not none else np.full(lp.shape[1], 1.0 / lp.shape[1])
        self.length_probs_ = lp
        self._finalise_model()

    # -- sampling -------------------------------------------------------------------------
    def _sample(self, n_samples: int, rng: np.random.Generator) -> pd.DataFrame:
        if self.learner_schema_ is not None:
            cells = rng.choice(len(self.group_probs_), size=n_samples, p=self.group_probs_)
            codes = np.column_stack(np.unravel_index(cells, tuple(self.learner_grid_.n_cells)))
            learners = self.learner_grid_.decode(codes, rng)
            labels = codes[:, 0] if self.label_column is not None else np.zeros(n_samples, dtype=np.int64)
        else:
            learners, labels = None, np.zeros(n_samples, dtype=np.int64)
        lengths = sample_lengths(self.length_probs_, self.length_edges_, labels, rng)
        states = self._sample_events(labels, lengths, rng)
        learner = np.repeat(np.arange(n_samples), lengths)
        out: dict[str, Any] = {
            self.id_column: learner,
            self.order_column: np.arange(len(learner)) - np.repeat(np.cumsum(lengths) - lengths, lengths),
        }
        out.update(decode_states(states, self.states_, self.event_columns_))
        if learners is not None:
            for c in learners.columns:
                out[c] = learners[c].to_numpy()[learner]
        frame = pd.DataFrame(out)[list(self.columns_)]
        return self._release_dtypes(frame)

    def _release_dtypes(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Release dtypes decided by the schema (:func:`skdpsynth._release.release_dtype`).

        Event columns are nullable exactly when the vocabulary has the unreleased state; learner columns follow
        the learner schema.
        """
        events = event_specs(self.states_, self.event_columns_, nullable=self.n_states_ > len(self.states_))
        learners = list(self.learner_schema_.columns) if self.learner_schema_ is not None else []
        schema = TableSchema(tuple(events + learners))
        cast = restore_dtypes(frame[list(schema.names)], schema)
        out = frame.copy()
        for c in schema.names:
            out[c] = cast[c].array
        return out

    # -- hooks ----------------------------------------------------------------------------
    @property
    @abstractmethod
    def _model_order(self) -> int:
        """Previous states in each counted key of the model (0: the events alone)."""

    @abstractmethod
    def _model_shape(self, n_groups: int, n_states: int) -> tuple[int, ...]:
        """Shape of the dense model count table."""

    @abstractmethod
    def _add_model_counts(self, noisy: np.ndarray, first: bool) -> None:
        """Store (``first``) or add a cohort's noisy model counts."""

    @abstractmethod
    def _finalise_model(self) -> None:
        """Sampling probabilities from the stored noisy model counts (post-processing)."""

    @abstractmethod
    def _sample_events(self, labels: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """State index of every synthetic event (learners in order, ``lengths`` events each)."""
