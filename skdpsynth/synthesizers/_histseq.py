"""DP-HistSeq: the order-free baseline -- noisy lengths and event frequencies, events drawn i.i.d."""

from __future__ import annotations

import numpy as np

from skdpsynth.privacy import normalise_counts
from skdpsynth.synthesizers._sequence import BaseSequenceSynthesizer
from skdpsynth.synthesizers._sequence_docs import OUTPUT_DOC, PARAMS_DOC

__all__ = ["DPHistSeqSynthesizer"]


class DPHistSeqSynthesizer(BaseSequenceSynthesizer):
    __doc__ = f"""Order-free DP baseline: per label, a noisy length histogram and noisy event frequencies.

    A synthetic learner draws a label, a length from that label's length
    histogram and then that many events independently from the label's event
    frequencies. It keeps the marginals (lengths, event mix, label groups) and
    destroys the order of events by design -- PEARL's DP-HistSeq, the baseline
    a sequence task check must reject.

    Parameters
    ----------
    {PARAMS_DOC.strip()}

    {OUTPUT_DOC.strip()}

    Privacy
    -------
    As :class:`~skdpsynth.synthesizers.DPMarkovSynthesizer`, with the
    transition counts replaced by per-label event counts: a learner adds at
    most ``max_length`` events, so L1 (and L2) sensitivity ``max_length``.
    Neighbouring relation: add or remove one learner (all their rows).

    Attributes
    ----------
    states_ : list of tuple
    event_counts_ : ndarray of shape (n_labels, V)
        Noisy counts (summed over cohorts).
    event_probs_ : ndarray of shape (n_labels, V)
    n_estimate_ : int
        DP estimate of the number of learners in the latest cohort.
    length_edges_, length_counts_ : ndarray
    n_features_in_, feature_names_in_ : int, ndarray
        Columns of ``X`` (a ``y`` joined as the label is not counted).
    columns_ : tuple of str
        Output columns, in input order.
    budget_log_, privacy_spent_ : see :class:`~skdpsynth.base.BaseSynthesizer`
    """

    _model_name = "event frequencies"

    def __init__(self, *, epsilon=1.0, delta=1e-6, id_column="id", order_column="order", event_columns="event",
                 label_column=None, static_columns=None, max_length=200, vocabulary=None, schema=None,
                 mechanism="geometric", domain_share="auto", label_share=0.05, length_share=0.1, length_bins=20,
                 max_states_per_learner=10, static_bins=10, duplicate_order="error", cohort_composition="parallel",
                 random_state=None, reproducible_noise=False):
        self.epsilon = epsilon
        self.delta = delta
        self.id_column = id_column
        self.order_column = order_column
        self.event_columns = event_columns
        self.label_column = label_column
        self.static_columns = static_columns
        self.max_length = max_length
        self.vocabulary = vocabulary
        self.schema = schema
        self.mechanism = mechanism
        self.domain_share = domain_share
        self.label_share = label_share
        self.length_share = length_share
        self.length_bins = length_bins
        self.max_states_per_learner = max_states_per_learner
        self.static_bins = static_bins
        self.duplicate_order = duplicate_order
        self.cohort_composition = cohort_composition
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise

    _model_order = 0

    def _model_shape(self, n_groups: int, n_states: int) -> tuple[int, ...]:
        return (n_groups, n_states)

    def _add_model_counts(self, noisy, first):
        self.event_counts_ = noisy if first else self.event_counts_ + noisy

    def _finalise_model(self) -> None:
        probs, empty = normalise_counts(self.event_counts_, axis=1)
        overall, none = normalise_counts(self.event_counts_.sum(axis=0))
        probs[empty] = overall if not none else np.full(self.n_states_, 1.0 / self.n_states_)
        self.event_probs_ = probs

    def _sample_events(self, labels, lengths, rng):
        lab = np.repeat(labels, lengths)
        cum = np.cumsum(self.event_probs_, axis=1)
        u = rng.random(len(lab))
        out = np.empty(len(lab), dtype=np.int64)
        for g in np.unique(lab):  # one vectorised draw per label group
            idx = np.flatnonzero(lab == g)
            out[idx] = np.minimum(np.searchsorted(cum[g], u[idx] * cum[g, -1], side="right"), self.n_states_ - 1)
        return out
