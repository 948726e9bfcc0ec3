"""The learners' event sequences as a sequence synthesizer sees them: a handle whose only outputs are DP answers.

The sequence synthesizers' fit receives a :class:`PrivateSequences`, never the events. The handle holds the
validated long table (events sorted by learner, one row of label/static values per learner), the public
``max_length``, the accountant and the noise source. Neighbouring relation: add or remove one learner -- their
whole event sequence and their label/static values. Every query states its sensitivity from its own definition
and charges the accountant before it draws, so what a synthesizer learns about the learners is what the answers
say.

Queries
-------
``learner_histogram(encode, n_cells)``
    Learners per cell of a public per-learner encoding of their label/static values and truncated length (cells
    < 0 are dropped): each learner is in at most one cell, so L1 = L2 sensitivity 1.
``event_counts(states, n_states, order, label, n_labels)``
    The handle truncates every learner to their first ``max_length`` events itself and counts, per label cell,
    each kept event under the key (previous ``order`` states, the event's state); a :class:`PrivateVector` whose
    one group has bound ``max_length`` (each kept event adds one to one key: L1 <= ``max_length`` and
    L2 <= ``max_length``), measured at that sensitivity whatever the caller claims.
``select_states(run, part, max_contrib)``
    The event vocabulary by a partition selection over each learner's first ``max_contrib`` distinct states
    (weighted Gaussian, L2 sensitivity 1 in weight units; or the stability histogram, L1 sensitivity
    ``max_contrib``), charged through the domain plan's ``run``.
``domain_count(run)``, ``count()``
    The number of learners (sensitivity 1).
``estimate_learner_schema(epsilon, delta)``
    The label/static domain by :func:`~skdpsynth.privacy.estimate_schema` (its own per-part sensitivities).
``clipped(schema)``
    The exact tally of label/static values a public schema clips, for
    :func:`~skdpsynth.privacy._clipping.release_clip_counts` only (L1 sensitivity 1 there).

With ``epsilon=None`` the queries return exact answers and record a non-private declaration;
``observed_states`` and ``nonprivate_learners`` give what the data hold only then, recording the use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from skdpsynth.privacy._accounting import BudgetAccountant, BudgetRecord
from skdpsynth.privacy._answers import PrivateHandle, PrivateVector
from skdpsynth.privacy._clipping import ClipTally
from skdpsynth.privacy._domain import estimate_schema
from skdpsynth.privacy._mechanisms import stability_histogram
from skdpsynth.privacy._noise import NoiseSource
from skdpsynth.privacy._partition import bounded_key_counts, bounded_key_weights, weighted_gaussian_selection

__all__ = ["PrivateSequences", "encode_states", "state_sort_key"]


def state_sort_key(state: tuple) -> tuple:
    """Sort key of a joint state whose values may be of mixed types."""
    return tuple((str(type(v)), v) for v in state)


def encode_states(events: pd.DataFrame, states: list[tuple]) -> np.ndarray:
    """State index of every event row (-1 where the joint event is not in ``states``)."""
    if events.shape[1] == 1:  # fast path: one event column
        index = pd.Index([s[0] for s in states], tupleize_cols=False)
        return np.asarray(index.get_indexer(events.iloc[:, 0]), dtype=np.int64)
    index = pd.MultiIndex.from_tuples(states, names=list(events.columns))
    return np.asarray(index.get_indexer(pd.MultiIndex.from_frame(events)), dtype=np.int64)


class PrivateSequences(PrivateHandle):
    """One cohort of learners' event sequences, answered only through DP queries.

    Parameters
    ----------
    data : SequenceData
        The validated long table (events sorted by learner then order, ``starts``, ``lengths``, ``learners``).
        Kept on the handle only; never returned while private.
    max_length : int
        Public truncation: the model counts see each learner's first ``max_length`` events only.
    accountant : BudgetAccountant
        This cohort's budget; every query charges it before drawing.
    noise : NoiseSource
        The only source of privacy noise.

    Notes
    -----
    The handle is not picklable and has no length: the number of learners is private.
    """

    _holds = "learners"

    def __init__(self, data, *, max_length: int, accountant: BudgetAccountant, noise: NoiseSource) -> None:
        self.__events = data.events
        self.__starts = np.asarray(data.starts, dtype=np.int64)
        self.__lengths = np.asarray(data.lengths, dtype=np.int64)
        self.__learners = data.learners
        self.max_length = int(max_length)
        self.event_columns = tuple(str(c) for c in data.events.columns)
        super().__init__(accountant=accountant, noise=noise)

    # -- public facts ----------------------------------------------------------------------
    @property
    def learner_template(self) -> pd.DataFrame:
        """The label/static columns with their dtypes and no rows (public: names and dtypes only)."""
        return self.__learners.iloc[:0]

    def __repr__(self) -> str:
        return f"PrivateSequences(events={list(self.event_columns)!r}, private={self.private})"

    # -- learners --------------------------------------------------------------------------
    def learner_histogram(self, encode: Callable[[pd.DataFrame, np.ndarray], np.ndarray], n_cells: int, *,
                          rho: float | None = None, epsilon: float | None = None, target: str) -> np.ndarray:
        """Noisy number of learners in each cell of a public per-learner encoding.

        Parameters
        ----------
        encode : callable
            Public row-wise map ``(learners, lengths) -> cells``: the label/static values of each learner and their
            length truncated at ``max_length``, to an integer cell in ``[0, n_cells)`` (negative: in no cell).
        n_cells : int
            Number of cells.
        rho, epsilon : float, optional
            Discrete Gaussian at ``rho`` (zCDP) or geometric at ``epsilon`` (pure); exactly one when private.
        target : str
            What is measured, for the budget log.

        Returns
        -------
        numpy.ndarray, shape (n_cells,)
            Sensitivity: adding or removing one learner changes one cell by 1 (L1 = L2 = 1).
        """
        return self._cells(encode, n_cells).measure(rho=rho, epsilon=epsilon, target=target)

    def count(self, *, rho: float | None = None, epsilon: float | None = None,
              target: str = "number of learners") -> int:
        """Noisy number of learners (sensitivity 1); may be below 1 (clip as post-processing)."""
        return int(self._counts(np.array([self.__starts.size])).measure(rho=rho, epsilon=epsilon, target=target)[0])

    def domain_count(self, run) -> int:
        """The domain plan's noisy count of learners (``DomainRun.count``: sensitivity 1, charged by the run)."""
        return run.count(int(self.__starts.size))

    # -- events ----------------------------------------------------------------------------
    def event_counts(self, states: Sequence[tuple], n_states: int, *, order: int,
                     label: Callable[[pd.DataFrame], np.ndarray], n_labels: int) -> PrivateVector:
        """Counts of keyed events in every learner's first ``max_length`` events, as a :class:`PrivateVector`.

        Each kept event gets its state in the public ``states`` (``len(states)`` -- the unreleased state -- for
        the others when ``n_states > len(states)``; dropped otherwise) and the key
        ``(label, previous order states (START = n_states), state)`` in row-major order over
        ``(n_labels, (n_states + 1) ** order, n_states)``; learners with a negative label cell are left out.

        Parameters
        ----------
        states : sequence of tuple
            The public (or DP-released) vocabulary.
        n_states : int
            ``len(states)``, plus one for the unreleased state.
        order : int
            Previous states in the key (0: the event alone).
        label : callable
            Public row-wise map from the learners' label/static values to a label cell in ``[0, n_labels)``.
        n_labels : int
            Number of label cells.

        Returns
        -------
        PrivateVector
            One group, bound ``max_length``: the handle truncated every learner to ``max_length`` events, each
            adding one to one key, so one learner moves the counts by at most ``max_length`` in L1 (and L2) norm.
        """
        lengths = np.minimum(self.__lengths, self.max_length)
        who = np.repeat(np.arange(lengths.size), lengths)
        pos = np.arange(who.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        codes = encode_states(self.__events.iloc[self.__starts[who] + pos], list(states))
        codes[codes < 0] = len(states) if n_states > len(states) else -1
        labels = self._row_wise(label(self.__learners))[who]
        keys = labels * (n_states + 1) ** order
        for k in range(order, 0, -1):
            prev = np.full(codes.size, n_states, dtype=np.int64)
            prev[k:] = codes[:-k] if k < codes.size else prev[k:]
            prev[pos < k] = n_states
            keys = keys + prev * (n_states + 1) ** (k - 1)
        keys = keys * n_states + codes
        kept = (codes >= 0) & (labels >= 0)
        size = n_labels * (n_states + 1) ** order * n_states
        return self._vector(np.bincount(keys[kept], minlength=size)[:size], np.zeros(size, dtype=np.int64),
                            np.array([float(self.max_length)]))

    def select_states(self, run, part, max_contrib: int) -> list[tuple]:
        """The released states: a partition selection over each learner's first ``max_contrib`` distinct states.

        Every event counts (the bound is on distinct states per learner, not on events: no truncation).
        Gaussian ``part``: each learner spreads a weight of L2 norm 1 over their counted states
        (:func:`~skdpsynth.privacy._partition.weighted_gaussian_selection`, L2 sensitivity 1 in weight units);
        otherwise the stability histogram of learner counts (L1 sensitivity ``max_contrib``). Only states so
        counted are candidates; both are charged to ``run``'s accountant (its plan, opened here) before drawing.
        """
        uniques = self._uniques()
        codes = encode_states(self.__events, uniques)
        learner = np.repeat(np.arange(self.__lengths.size), self.__lengths)
        k = int(max_contrib)
        run.open()
        kw = dict(noise=self._noise, accountant=run.parts_accountant)
        label = f"{run.plan.label}: "
        if part.mechanism == "gaussian":
            weights = bounded_key_weights(codes, learner, k, len(uniques))
            candidates = np.flatnonzero(weights > 0)
            released, _ = weighted_gaussian_selection(
                weights[candidates], contribution_bound=k, rho=part.cost, delta=part.delta, **kw,
                target=label + f"learners' weights per state (L2 norm 1 over each learner's first {k} distinct "
                               "states; candidates: the weighted states)")
        else:
            counts = bounded_key_counts(codes, learner, k, len(uniques))
            candidates = np.flatnonzero(counts > 0)
            released, _ = stability_histogram(
                counts[candidates], contribution_bound=k, epsilon=part.cost, delta=part.delta, **kw,
                target=label + f"learners per state (first {k} distinct states each; candidates: the counted "
                               "states)")
        return sorted((uniques[i] for i in candidates[released]), key=state_sort_key)

    # -- the label/static domain -------------------------------------------------------------
    def estimate_learner_schema(self, epsilon: float, delta: float, *, later: Sequence[BudgetRecord] = (),
                                label: str = "label/static domain estimate"):
        """The label/static columns' domain by :func:`~skdpsynth.privacy.estimate_schema` ((epsilon, delta)-DP under
        add/remove one learner: one row per learner, each part at the sensitivity it states).

        When the cohort's accountant converts zCDP at a positive delta, the estimate is charged in zCDP and
        composes with what the cohort charged in zCDP before it (the vocabulary) and plans after it: one
        conversion for all (``compose``)."""
        return estimate_schema(self.__learners, epsilon=epsilon, delta=delta, accountant=self._accountant,
                               noise=self._noise, later=later, label=label,
                               compose=self._accountant.delta_zcdp > 0)

    def clipped(self, schema) -> ClipTally:
        """Exact tally of the label/static values the public ``schema`` clips (private: for ``release_clip_counts``
        only, whose count of them has L1 sensitivity 1)."""
        _, masks = schema._validate_for_fit(self.__learners[list(schema.names)])
        return ClipTally().add(masks)

    # -- the non-private door ----------------------------------------------------------------
    def observed_states(self, why: str) -> list[tuple]:
        """Every observed state, sorted, for a non-private fit (``epsilon=None``) only; recorded as non-private."""
        self._open(why)
        return sorted(self._uniques(), key=state_sort_key)

    def nonprivate_learners(self, why: str) -> pd.DataFrame:
        """The label/static values, for a non-private fit (``epsilon=None``) only; recorded as non-private."""
        self._open(why)
        return self.__learners

    # -- internals ----------------------------------------------------------------------------

    def _uniques(self) -> list[tuple]:
        return list(map(tuple, self.__events.drop_duplicates().itertuples(index=False, name=None)))

    def _row_wise(self, codes) -> np.ndarray:
        codes = np.asarray(codes, dtype=np.int64)
        if codes.shape != (self.__starts.size,):
            raise ValueError("the encoding must map each learner to one cell (a row-wise map)")
        return codes

    def _cells(self, encode: Callable[[pd.DataFrame, np.ndarray], np.ndarray], n_cells: int) -> PrivateVector:
        codes = self._row_wise(encode(self.__learners, np.minimum(self.__lengths, self.max_length)))
        return self._counts(np.bincount(codes[codes >= 0], minlength=n_cells)[:n_cells])

    def _counts(self, exact: np.ndarray) -> PrivateVector:
        """Counts of learners in disjoint cells: one group, bound 1 (a learner is in one cell)."""
        return self._vector(exact, np.zeros(exact.size, dtype=np.int64), np.ones(1))
