"""DP-Markov: a differentially private Markov chain over learners' event sequences."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from skdpsynth.privacy import normalise_counts
from skdpsynth.synthesizers._sequence import BaseSequenceSynthesizer
from skdpsynth.synthesizers._sequence_data import EventRoles
from skdpsynth.synthesizers._sequence_docs import OUTPUT_DOC, PARAMS_DOC
from skdpsynth.utils._param_validation import Interval

__all__ = ["DPMarkovSynthesizer"]


class DPMarkovSynthesizer(BaseSequenceSynthesizer):
    __doc__ = f"""Differentially private Markov chain of order 1 or 2 over learners' event sequences.

    Each label group gets its own chain: noisy counts of transitions from a
    context (the previous ``order`` states, padded with START) to the next
    state, projected onto the non-negative simplex (keeping the noisy total)
    and normalised. A synthetic learner draws a label
    from the noisy label histogram, a length from that label's noisy length
    histogram (the END token: it is placed after the drawn length), and then
    walks the chain from START. Contexts whose noisy counts all clip to zero
    back off to the order-1 row (order 2), then to the label's event
    frequencies (post-processing, no extra budget).

    Parameters
    ----------
    {PARAMS_DOC.strip()}
    order : {{1, 2}}, default=1
        Markov order. The table is dense over the public (or DP-released)
        vocabulary: ``n_labels * (V + 1) ** order * V`` cells, refused beyond
        ``max_cells`` before any budget is spent. Dense noise over every context
        -- observed or not -- is what keeps the set of observed contexts private.

    {OUTPUT_DOC.strip()}

    Privacy
    -------
    Protected: each learner's presence, their whole event sequence, label and
    static values. Neighbouring relation: add or remove one learner (all
    their rows). Per cohort, in order:

    1. (first cohort, only when not given) the vocabulary, by a partition
       selection: each learner counts towards at most the first
       ``max_states_per_learner`` distinct states they visit, over all their
       events, spreading a weight of L2 norm 1 over them (``1 / sqrt(d)``
       each; L2 sensitivity 1, discrete Gaussian noise on integer weights,
       :func:`~skdpsynth.privacy._partition.weighted_gaussian_selection`;
       the Laplace stability histogram of learner counts, L1 sensitivity
       ``max_states_per_learner``, when its threshold is lower), and only
       states so counted are candidates, so a state seen only beyond a
       learner's bound is never released; and the label/static domain by
       :func:`~skdpsynth.privacy.estimate_schema`. Both share the
       ``domain_share`` slice of epsilon (and delta), half each. The model's
       records are planned first and passed to both: under
       ``mechanism="gaussian"`` they are charged in zCDP and compose with the
       model (the model keeps what it would have after the slice);
    2. the joint histogram of label and static cells (each learner in one
       cell: L1 = L2 sensitivity 1; with estimated label categories one more
       cell counts the learners left out because their label was not
       released), ``label_share`` of the rest;
    3. the per-label length histograms (one cell per learner: sensitivity 1),
       ``length_share`` of the rest; ``n_estimate_`` is the noisy totals of
       2. and 3. weighed by the inverse of their noise variance;
    4. the per-label transition counts: a learner adds ``L <= max_length``
       transitions (START -> first event, then one per further event; longer
       sequences are truncated to their first ``max_length`` events, as the
       budget record says), so the L1 sensitivity is ``max_length``; the L2
       sensitivity is also ``max_length`` (worst case: all transitions
       identical).

    Warnings about the data are computed from these DP answers only: events
    outside a DP-discovered vocabulary (the noisy transition counts into the
    unreleased state) and learners left out (the group histogram's extra cell)
    are reported only when their noisy total stands clear of its noise.

    Counts get integer noise (two-sided geometric, or discrete Gaussian under
    ``mechanism="gaussian"``) from the cohort's noise source (fresh OS
    entropy unless ``reproducible_noise=True``).

    Steps 2-4 run once on the stacked per-label arrays -- the labels are
    disjoint sets of learners, so the chains compose in parallel within each
    measurement -- and the steps compose sequentially. ``partial_fit`` adds a
    new cohort's noisy counts to the stored ones; cohorts compose by
    ``cohort_composition``. Sampling is post-processing.

    Attributes
    ----------
    states_ : list of tuple
        The vocabulary (joint states); ``n_states_`` adds the unreleased state.
    transition_counts_ : ndarray of shape (n_labels, (V + 1) ** order, V)
        Noisy counts (summed over cohorts).
    transition_probs_ : ndarray
        The chain used for sampling.
    length_edges_, length_counts_ : ndarray
        Public length bins and noisy per-label counts.
    learner_schema_ : TableSchema or None
        Domain of the label and static columns.
    clip_counts_ : dict of str to float
        Set when a fixed schema bounds static columns: the latest cohort's noisy count of the values clipped
        to those bounds, per column (never the exact count).
    n_estimate_ : int
        DP estimate of the number of learners in the latest cohort (the noisy
        totals of its group and length histograms, weighed by their noise;
        the default ``sample`` size).
    n_features_in_, feature_names_in_ : int, ndarray
        Columns of ``X`` (a ``y`` joined as the label is not counted).
    columns_ : tuple of str
        Output columns, in input order.
    budget_log_, privacy_spent_ : see :class:`~skdpsynth.base.BaseSynthesizer`
    """

    _parameter_constraints: dict = {
        **BaseSequenceSynthesizer._parameter_constraints,
        # any positive order is a Markov chain; orders above 2 are refused as not implemented (see _check_settings)
        "order": [Interval(Integral, 1, None, closed="left")],
    }
    _model_name = "transition counts"

    def __init__(self, *, epsilon=1.0, delta=1e-6, id_column="id", order_column="order", event_columns="event",
                 label_column=None, static_columns=None, order=1, max_length=200, vocabulary=None, schema=None,
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
        self.order = order
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

    def _check_settings(self) -> EventRoles:
        roles = super()._check_settings()
        if isinstance(self.order, bool) or self.order not in (1, 2):
            raise ValueError(f"order must be 1 or 2 (higher orders are not implemented), got {self.order!r}.")
        return roles

    def _model_shape(self, n_groups: int, n_states: int) -> tuple[int, ...]:
        return (n_groups, (n_states + 1) ** self.order, n_states)

    @property
    def _model_order(self) -> int:
        return int(self.order)

    def _add_model_counts(self, noisy, first):
        self.transition_counts_ = noisy if first else self.transition_counts_ + noisy

    def _finalise_model(self) -> None:
        V, G = self.n_states_, self.n_groups_
        counts = self.transition_counts_
        probs, empty = normalise_counts(counts, axis=2)
        # back-off rows (post-processing of the noisy counts only)
        unigram, uni_empty = normalise_counts(counts.sum(axis=1), axis=1)  # (G, V)
        overall, none = normalise_counts(counts.sum(axis=(0, 1)))
        unigram[uni_empty] = overall if not none else np.full(V, 1.0 / V)
        if self.order == 2:
            first, first_empty = normalise_counts(counts.reshape(G, V + 1, V + 1, V).sum(axis=1), axis=2)
            first[first_empty] = np.broadcast_to(unigram[:, None, :], first.shape)[first_empty]
            backoff = np.tile(first, (1, V + 1, 1))  # context (p2, p1) -> row p1
        else:
            backoff = np.broadcast_to(unigram[:, None, :], probs.shape)
        probs[empty] = backoff[empty]
        self.transition_probs_ = probs

    def _sample_events(self, labels, lengths, rng):
        V = self.n_states_
        n = len(lengths)
        order = np.argsort(-lengths, kind="stable")  # active learners at step t form a prefix
        lab = labels[order]
        lens = lengths[order]
        offsets = np.cumsum(lengths) - lengths
        out = np.empty(int(lengths.sum()), dtype=np.int64)
        prev = np.full((n, 2), V, dtype=np.int64)  # (state t-2, state t-1)
        active = n
        for t in range(int(lens.max()) if n else 0):
            while active and lens[active - 1] <= t:
                active -= 1
            ctx = prev[:active, 1] if self.order == 1 else prev[:active, 0] * (V + 1) + prev[:active, 1]
            cum = np.cumsum(self.transition_probs_[lab[:active], ctx], axis=1)
            u = rng.random(active)[:, None] * cum[:, -1:]
            nxt = np.minimum((cum <= u).sum(axis=1), V - 1)
            out[offsets[order[:active]] + t] = nxt
            prev[:active, 0] = prev[:active, 1]
            prev[:active, 1] = nxt
        return out
